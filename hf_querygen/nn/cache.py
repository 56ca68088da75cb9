"""A recurrent-state cache for ``generate()`` of transformers 5.

An RNN decoder needs no key/value history: one step only needs the previous recurrent state (hidden /
cell), the input-feeding vector, and model extras (e.g. the dual decoder's pointer states or CopyNet's
previous copy probabilities). This object holds such named batch-first tensors plus the number of
decoded tokens, and offers what ``GenerationMixin`` calls on a cache: ``get_seq_length`` (to slice the
next decoder input), in-place ``reorder_cache(beam_idx)`` (beam search), ``is_compileable`` and
``is_croppable``.

transformers 5.24 renamed the generation cache from ``past_key_values`` to ``cache``: generate() passes
``cache=`` to ``forward`` / ``prepare_inputs_for_generation`` and reads ``outputs.cache``; up to 5.23 both
are ``past_key_values``. Our models accept both names (:func:`pick_cache`) and return the state under the
name the running version reads (:data:`CACHE_NAME`, :func:`with_cache`), so cached generation equals
uncached generation on both sides of the rename.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from transformers.modeling_outputs import Seq2SeqLMOutput

#: the name under which the installed transformers' generate() passes the cache to the model and reads it
#: from its outputs: "cache" from 5.24 on (the output classes' field), "past_key_values" before
CACHE_NAME = "cache" if "cache" in Seq2SeqLMOutput.__dataclass_fields__ else "past_key_values"


class RecurrentStateCache:
    """Named batch-first tensors (dim 0 = batch * beams) and a step counter."""

    is_compileable = False  # generate() must not try to torch.compile around it
    is_croppable = False  # assisted decoding cannot roll an RNN state back

    def __init__(self, states: dict[str, torch.Tensor] | None = None, seq_length: int = 0):
        self._states: dict[str, torch.Tensor] = {}
        self._seq_length = seq_length
        # per-source tensors (projected attention keys, copy targets): beam reordering only permutes the
        # rows of one source among themselves, so these never need it
        self._static: set[str] = set()
        for name, tensor in (states or {}).items():
            self[name] = tensor

    # -- mapping interface -------------------------------------------------------------------
    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self._states[name]
        except KeyError:
            raise KeyError(
                f"RecurrentStateCache holds no state {name!r}; it has {sorted(self._states)}"
            ) from None

    def __setitem__(self, name: str, tensor: torch.Tensor) -> None:
        if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            raise TypeError(
                f"cache state {name!r} must be a batch-first tensor with dim >= 1; got {type(tensor)}"
            )
        if self._states:
            batch_size = self.batch_size
            if tensor.shape[0] != batch_size:
                raise ValueError(
                    f"cache state {name!r} has batch dim {tensor.shape[0]}, the cache holds batch "
                    f"{batch_size}"
                )
        self._states[name] = tensor

    def __contains__(self, name: object) -> bool:
        return name in self._states

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def get(self, name: str, default: torch.Tensor | None = None) -> torch.Tensor | None:
        return self._states.get(name, default)

    def update(self, **states: torch.Tensor) -> None:
        # replace all at once: the batch check compares against the states that are kept (or, when all are
        # replaced, the first new one); one pass, as a decoder calls this at every generated token
        kept = [tensor for name, tensor in self._states.items() if name not in states]
        batch_size = kept[0].shape[0] if kept else None
        for name, tensor in states.items():
            if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
                raise TypeError(
                    f"cache state {name!r} must be a batch-first tensor with dim >= 1; got {type(tensor)}"
                )
            if batch_size is None:
                batch_size = tensor.shape[0]
            elif tensor.shape[0] != batch_size:
                raise ValueError(
                    f"cache state {name!r} has batch dim {tensor.shape[0]}, the cache holds batch "
                    f"{batch_size}"
                )
        self._states.update(states)

    def items(self):
        return self._states.items()

    def mark_static(self, *names: str) -> None:
        """Declare ``names`` per-source: equal across the beams of one source, so :meth:`reorder_cache`
        (which only moves rows among the beams of a source) leaves them alone."""
        for name in names:
            if name not in self._states:
                raise KeyError(f"RecurrentStateCache holds no state {name!r}; it has {sorted(self._states)}")
        self._static.update(names)

    @property
    def batch_size(self) -> int:
        return next(iter(self._states.values())).shape[0] if self._states else 0

    # -- what generate() calls --------------------------------------------------------------
    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Number of decoder tokens already consumed."""
        return self._seq_length

    def advance(self, num_tokens: int = 1) -> None:
        """Count ``num_tokens`` more decoded tokens."""
        self._seq_length += num_tokens

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """In place: keep, for every row, the state of the beam it continues (``index_select`` on dim 0);
        per-source states (:meth:`mark_static`) are the same in every beam of a source and stay."""
        for name, tensor in self._states.items():
            if name not in self._static:
                self._states[name] = tensor.index_select(0, beam_idx.to(tensor.device))

    def batch_repeat_interleave(self, repeats: int) -> None:
        """In place: repeat every row ``repeats`` times (expanding a batch for beams or samples)."""
        for name, tensor in self._states.items():
            self._states[name] = tensor.repeat_interleave(repeats, dim=0)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """In place: keep only the rows in ``indices`` (every state, per-source ones included)."""
        for name, tensor in self._states.items():
            self._states[name] = tensor.index_select(0, indices.to(tensor.device))

    def __repr__(self) -> str:
        shapes = ", ".join(f"{name}={tuple(t.shape)}" for name, t in self._states.items())
        return f"RecurrentStateCache(seq_length={self._seq_length}, {shapes})"


def pick_cache(
    past_key_values: RecurrentStateCache | None, cache: RecurrentStateCache | None
) -> RecurrentStateCache | None:
    """The recurrent cache passed under either name (``past_key_values`` <= 5.23, ``cache`` >= 5.24)."""
    if past_key_values is not None and cache is not None and past_key_values is not cache:
        raise ValueError("pass the decoder state as `cache` or `past_key_values`, not two different ones")
    return cache if cache is not None else past_key_values


def with_cache(cache: RecurrentStateCache | None) -> dict[str, RecurrentStateCache | None]:
    """``{CACHE_NAME: cache}``: keyword arguments that put ``cache`` where the installed generate() reads it
    (an output class field, or the input of ``forward`` from ``prepare_inputs_for_generation``)."""
    return {CACHE_NAME: cache}


def cache_of(outputs) -> RecurrentStateCache | None:
    """The cache a model output carries, under whichever name the installed transformers uses."""
    return getattr(outputs, CACHE_NAME, None)


__all__ = ["CACHE_NAME", "RecurrentStateCache", "cache_of", "pick_cache", "with_cache"]
