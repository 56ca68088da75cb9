"""A model folder on disk: the checks that name a missing, corrupted or mismatched file, and the one
loader of a folder written by ``hf-querygen train`` / ``--save-models`` (:func:`load_trained`). Below
training (which writes such folders) and the hub (which exports them), so neither imports the other."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidInputError, ModelFolderError
from .specs import auto_class_name
from .utils import TRAINING_METADATA_FILE
from .validation import (
    GENERATION_BOOLS,
    GENERATION_FLOATS,
    GENERATION_INTS,
    GENERATION_POSITIVE_FLOATS,
    check_generation_kwargs,
)

if TYPE_CHECKING:  # torch/transformers cost seconds at import
    from transformers import PreTrainedModel, PreTrainedTokenizerFast


def _folder_file_error(model_dir: Path, name: str, problem: str) -> Exception:
    return ModelFolderError(
        f"model folder {model_dir}: {name} {problem}; re-save the model (hf-querygen train --output-dir "
        f"{model_dir} --overwrite, or model.save_pretrained + tokenizer.save_pretrained)"
    )


def _json_object(model_dir: Path, name: str, required: bool = True) -> dict[str, Any] | None:
    path = model_dir / name
    if not path.is_file():
        if required:
            raise _folder_file_error(model_dir, name, "is missing")
        return None
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _folder_file_error(model_dir, name, f"is corrupted (not JSON: {err})") from err
    if not isinstance(value, dict):
        raise _folder_file_error(
            model_dir, name, f"is corrupted (a JSON {type(value).__name__}, not an object)"
        )
    return value


def _check_safetensors(model_dir: Path, name: str) -> None:
    """Open ``name``'s header: safetensors checks that the header is JSON and that the tensors' byte
    ranges fit in the file, so an empty, truncated or garbage file fails here, not inside torch."""
    from safetensors import safe_open

    path = model_dir / name
    if not path.is_file():
        raise _folder_file_error(model_dir, name, "is missing")
    if path.stat().st_size == 0:
        raise _folder_file_error(model_dir, name, "is empty (0 bytes)")
    try:
        with safe_open(str(path), framework="pt") as handle:
            handle.keys()
    except Exception as err:  # SafetensorError is not exported under a stable name
        raise _folder_file_error(
            model_dir, name, f"is truncated or corrupted ({type(err).__name__}: {err})"
        ) from err


#: the config.json / tokenizer_config.json field with the SHA-256 of every code file written beside it
CODE_HASHES_FIELD = "hf_querygen_code_sha256"


def code_hashes(sources: Mapping[str, str]) -> dict[str, str]:
    """file name -> SHA-256 of its UTF-8 text: recorded at save time beside ``auto_map``."""
    import hashlib

    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in sorted(sources.items())}


def _code_references(config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(where in the config, reference) for every ``auto_map`` and ``custom_pipelines`` entry."""
    found: list[tuple[str, Any]] = []
    auto_map = config.get("auto_map")
    if auto_map is not None:
        if not isinstance(auto_map, dict):
            return [("auto_map", auto_map)]
        for key, value in auto_map.items():
            values = value if isinstance(value, list) else [value]
            found += [(f"auto_map[{key!r}]", v) for v in values if v is not None]
    pipelines = config.get("custom_pipelines")
    if pipelines is not None:
        if not isinstance(pipelines, dict):
            return [*found, ("custom_pipelines", pipelines)]
        for task, info in pipelines.items():
            impl = info.get("impl") if isinstance(info, dict) else info
            found.append((f"custom_pipelines[{task!r}].impl", impl))
    return found


def check_remote_code(model_dir: str | Path, config_name: str = "config.json") -> list[str]:
    """Check, before transformers imports any of them, the code files a folder's ``auto_map`` /
    ``custom_pipelines`` name: each reference is ``module.Class`` with a module in the folder (not another
    repository's, not a path outside it), the file is there, and its content is the one saved with the
    folder (the SHA-256 recorded in :data:`CODE_HASHES_FIELD`; a folder without it: the file compiles and
    defines the class). Raises :class:`ModelFolderError` naming the file; returns the files checked."""
    import ast
    import hashlib
    import re

    model_dir = Path(model_dir)
    config = _json_object(model_dir, config_name, required=False) or {}
    recorded = config.get(CODE_HASHES_FIELD)
    if recorded is not None and not (
        isinstance(recorded, dict) and all(isinstance(v, str) for v in recorded.values())
    ):
        raise _folder_file_error(model_dir, config_name, f"has a damaged {CODE_HASHES_FIELD} entry")
    checked: dict[str, set[str]] = {}
    for where, reference in _code_references(config):
        if not isinstance(reference, str) or not re.fullmatch(r"[A-Za-z_]\w*\.[A-Za-z_]\w*", reference):
            raise _folder_file_error(
                model_dir,
                config_name,
                f"has {where}={reference!r}, not 'module.Class' of a code file in the folder (a reference "
                "to another repository or a path outside the folder is refused)",
            )
        module, class_name = reference.split(".")
        checked.setdefault(f"{module}.py", set()).add(class_name)
    for name, classes in sorted(checked.items()):
        path = model_dir / name
        if not path.is_file():
            raise _folder_file_error(model_dir, name, f"is missing (named by {config_name})")
        data = path.read_bytes()
        if recorded is not None and name in recorded:
            if hashlib.sha256(data).hexdigest() != recorded[name]:
                raise _folder_file_error(
                    model_dir,
                    name,
                    f"is not the code saved with this model (damaged, truncated or swapped: its SHA-256 "
                    f"differs from the one {config_name} recorded)",
                )
            continue
        try:
            tree = ast.parse(data.decode("utf-8"), filename=str(path))
        except (UnicodeDecodeError, SyntaxError, ValueError) as err:
            line = f" line {err.lineno}" if isinstance(err, SyntaxError) and err.lineno else ""
            raise _folder_file_error(model_dir, name, f"is damaged ({type(err).__name__}{line})") from err
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        missing = sorted(classes - defined)
        if missing:
            raise _folder_file_error(
                model_dir, name, f"does not define {', '.join(missing)} (named by {config_name})"
            )
    return sorted(checked)


def check_model_folder(model_dir: str | Path, require_tokenizer: bool = True) -> dict[str, Any]:
    """Check that ``model_dir`` is a complete model folder before transformers opens it; returns its
    config.json. Raises :class:`~hf_querygen.errors.ModelFolderError` naming the folder and the file
    that is missing, empty, truncated or not valid JSON / safetensors."""
    model_dir = Path(model_dir)
    if not model_dir.exists():
        raise ModelFolderError(
            f"model folder {model_dir} does not exist; pass a folder written by `hf-querygen train` "
            "(--output-dir) or by save_pretrained"
        )
    if not model_dir.is_dir():
        raise ModelFolderError(f"model folder {model_dir} is a file, not a folder; pass the folder")
    if not (model_dir / "config.json").is_file():
        raise ModelFolderError(
            f"model folder {model_dir} holds no trained model: config.json is missing; pass a folder "
            "written by `hf-querygen train` (--output-dir) or by save_pretrained"
        )
    config = _json_object(model_dir, "config.json")
    if "model_type" not in config:
        raise _folder_file_error(model_dir, "config.json", "has no model_type")
    index = _json_object(model_dir, "model.safetensors.index.json", required=False)
    if index is not None:  # sharded weights: check every shard the index names
        for shard in sorted(set(dict(index.get("weight_map") or {}).values())):
            _check_safetensors(model_dir, str(shard))
    else:
        _check_safetensors(model_dir, "model.safetensors")
    check_remote_code(model_dir)
    if require_tokenizer:
        _json_object(model_dir, "tokenizer.json")
        _json_object(model_dir, "tokenizer_config.json", required=False)
        check_remote_code(model_dir, "tokenizer_config.json")
    generation = _json_object(model_dir, "generation_config.json", required=False)
    if generation is not None:
        _check_generation_config(model_dir, generation)
    _check_saved_decoding(model_dir, config)
    return config


def _check_saved_decoding(model_dir: Path, config: Mapping[str, Any]) -> None:
    """config.json's ``task_decoding`` (the decoding chosen on validation and saved with the model) by
    the rules of a caller's decoding arguments, when the folder is opened rather than at the first call
    (the task's own check, :meth:`hf_querygen.tasks.Task.saved_decoding`, also refuses names the model's
    family cannot honour)."""
    saved = config.get("task_decoding")
    if saved is None:
        return
    if not isinstance(saved, dict):
        raise _folder_file_error(
            model_dir, "config.json", f"has task_decoding={saved!r}; expected an object of decoding arguments"
        )
    try:
        check_generation_kwargs("task_decoding", saved, default_beams=None)
    except InvalidInputError as err:
        raise _folder_file_error(model_dir, "config.json", f"has a bad {err}") from err


#: generation_config.json fields and the values they take (the ones ``generate`` reads as numbers): the
#: table of the call-time check (:func:`hf_querygen.validation.check_generation_kwargs`)
_GENERATION_INTS = GENERATION_INTS
_GENERATION_POSITIVE_FLOATS = GENERATION_POSITIVE_FLOATS
_GENERATION_FLOATS = GENERATION_FLOATS
_GENERATION_BOOLS = GENERATION_BOOLS
_GENERATION_TOKEN_IDS = ("pad_token_id", "bos_token_id", "decoder_start_token_id", "eos_token_id")


def _check_generation_config(model_dir: Path, generation: dict[str, Any]) -> None:
    """Types and ranges of the generation config's fields (``generate`` would fail deep inside, or
    silently decode differently, on a string, a float count or a negative id)."""
    import math

    def bad(field: str, expected: str) -> Exception:
        return _folder_file_error(
            model_dir, "generation_config.json", f"has {field}={generation[field]!r}; expected {expected}"
        )

    def is_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    for field, low in _GENERATION_INTS.items():
        value = generation.get(field)
        if value is not None and not (is_int(value) and value >= low):
            raise bad(field, f"an integer >= {low}")
    for field in (*_GENERATION_POSITIVE_FLOATS, *_GENERATION_FLOATS):
        value = generation.get(field)
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not number or (field in _GENERATION_POSITIVE_FLOATS and value <= 0):
            raise bad(field, "a finite number" + (" > 0" if field in _GENERATION_POSITIVE_FLOATS else ""))
    if generation.get("top_p") is not None and generation["top_p"] > 1:
        raise bad("top_p", "a number in (0, 1]")
    for field in _GENERATION_BOOLS:
        if generation.get(field) is not None and not isinstance(generation[field], bool):
            raise bad(field, "true or false")
    stopping = generation.get("early_stopping")
    if stopping is not None and not (isinstance(stopping, bool) or stopping == "never"):
        raise bad("early_stopping", 'true, false or "never"')
    for field in _GENERATION_TOKEN_IDS:
        value = generation.get(field)
        ids = value if isinstance(value, list) and field == "eos_token_id" else [value]
        if value is not None and not all(is_int(i) and i >= 0 for i in ids):
            raise bad(
                field,
                "a token id (an integer >= 0)" + (" or a list of them" if field == "eos_token_id" else ""),
            )


_FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}


def missing_untied(model: PreTrainedModel, missing: Sequence[str], stored: Collection[str]) -> list[str]:
    """The names of ``missing`` whose tensor no name in ``stored`` holds. Tied weights are one tensor
    under several names, saved once: a BERT2BERT's output projection is its decoder's word embeddings,
    tied inside the decoder (transformers lists such ties on the submodule that declares them, so the
    top model's ``_tied_weights_keys`` does not name them). A missing name is filled when any name of
    the same tensor was stored."""
    names_of: dict[int, set[str]] = {}
    for name, tensor in chain(
        model.named_parameters(remove_duplicate=False), model.named_buffers(remove_duplicate=False)
    ):
        names_of.setdefault(id(tensor), set()).add(name)
    aliases = {name: names for names in names_of.values() for name in names}
    stored = set(stored)
    return [key for key in missing if not (aliases.get(key, {key}) & stored)]


def _check_loaded_weights(model_dir: Path, model: PreTrainedModel, info: Mapping[str, Any]) -> None:
    """The weights in the folder are the model's: none missing (transformers would initialise them
    at random), none unexpected (a file of another model), none of a non-float dtype where the model
    has floats, and none NaN or infinite."""
    from safetensors import safe_open

    weight_files = [model_dir / "model.safetensors"]
    index = _json_object(model_dir, "model.safetensors.index.json", required=False)
    if index is not None:
        weight_files = [
            model_dir / shard for shard in sorted(set(dict(index.get("weight_map") or {}).values()))
        ]
    stored: dict[str, tuple[str, str]] = {}  # tensor name -> (its file, its dtype)
    for path in weight_files:
        with safe_open(str(path), framework="pt") as handle:
            for key in handle.keys():
                stored[key] = (path.name, handle.get_slice(key).get_dtype())
    missing = sorted(missing_untied(model, list(info.get("missing_keys", ())), stored))
    unexpected = sorted(info.get("unexpected_keys", ()))
    mismatched = sorted(str(k[0] if isinstance(k, tuple) else k) for k in info.get("mismatched_keys", ()))
    for problem, keys in (
        ("lacks tensors the model needs (they would be random)", missing),
        ("holds tensors this model does not have (weights of another model?)", unexpected),
        ("holds tensors of the wrong shape", mismatched),
    ):
        if keys:
            shown = ", ".join(keys[:5]) + (f" (+{len(keys) - 5} more)" if len(keys) > 5 else "")
            raise _folder_file_error(model_dir, "model.safetensors", f"{problem}: {shown}")
    state = model.state_dict()
    for key, (file_name, dtype) in stored.items():
        if key in state and state[key].is_floating_point() and dtype not in _FLOAT_DTYPES:
            raise _folder_file_error(
                model_dir, file_name, f"stores tensor {key} as {dtype}; the model expects floats"
            )
    import torch

    for key, tensor in state.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise _folder_file_error(
                model_dir, "model.safetensors", f"tensor {key} holds NaN or infinite values"
            )


#: the training metadata key of the tokenizer's vocabulary hash (written by save_model_folder)
TOKENIZER_FINGERPRINT_KEY = "tokenizer_sha256"


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerFast) -> str:
    """A hash of the tokenizer's vocabulary (token -> id), to tie a model folder's tokenizer to it."""
    import hashlib

    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    return hashlib.sha256(json.dumps(vocab, ensure_ascii=False).encode("utf-8")).hexdigest()


def _check_tokenizer_agrees(
    model_dir: Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, metadata: Mapping[str, Any]
) -> None:
    """The tokenizer is the one the model was trained with: its ids fit the embedding, its special ids
    are the config's, and (folders written by ``train``) its vocabulary hash is the recorded one."""
    config = model.config
    size = len(tokenizer)
    rows = getattr(config, "vocab_size", None)
    if isinstance(rows, int) and size > rows:
        raise _folder_file_error(
            model_dir,
            "tokenizer.json",
            f"has {size} tokens but the model's vocabulary has {rows} (a tokenizer from another model?)",
        )
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "unk_token_id"):
        ours, theirs = getattr(config, name, None), getattr(tokenizer, name, None)
        if isinstance(ours, int) and isinstance(theirs, int) and ours != theirs:
            raise _folder_file_error(
                model_dir,
                "tokenizer.json",
                f"has {name}={theirs} but config.json has {ours} (a tokenizer from another model?)",
            )
    recorded = metadata.get(TOKENIZER_FINGERPRINT_KEY)
    if isinstance(recorded, str) and recorded != tokenizer_fingerprint(tokenizer):
        raise _folder_file_error(
            model_dir,
            "tokenizer.json",
            f"is not the tokenizer the model was trained with ({TRAINING_METADATA_FILE} records another "
            "vocabulary)",
        )


def load_trained(model_dir: str | Path) -> tuple[PreTrainedModel, PreTrainedTokenizerFast, dict[str, Any]]:
    """(model, tokenizer, metadata) from a folder written by ``hf-querygen train`` / ``--save-models``.

    A missing, incomplete or corrupted folder raises :class:`~hf_querygen.errors.ModelFolderError`
    naming the folder and the file (:func:`check_model_folder`)."""
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    from ._registration import register_all

    register_all()
    model_dir = Path(model_dir)
    check_model_folder(model_dir)
    metadata = _json_object(model_dir, TRAINING_METADATA_FILE, required=False) or {}
    try:
        config = AutoConfig.from_pretrained(model_dir)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise _folder_file_error(model_dir, "config.json", f"cannot be loaded ({err})") from err
    auto = getattr(transformers, auto_class_name(config))
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # a local folder loads in a second: no bar
    try:
        model, info = auto.from_pretrained(model_dir, output_loading_info=True)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise _folder_file_error(model_dir, "model.safetensors", f"cannot be loaded ({err})") from err
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    _check_loaded_weights(model_dir, model, info)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    except Exception as err:  # the tokenizers library raises its own Exception subclass
        raise _folder_file_error(model_dir, "tokenizer.json", f"cannot be loaded ({err})") from err
    _check_tokenizer_agrees(model_dir, model, tokenizer, metadata)
    return model, tokenizer, metadata
