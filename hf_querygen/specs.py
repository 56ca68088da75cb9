"""What a model package declares about itself, once: :class:`ModelSpec`, registered in :data:`MODELS`.

A model package's ``__init__.py`` registers one :class:`ModelSpec` (config class, model class, the Auto
class that loads it, its family, a tiny test configuration and inputs, the paper for its card). Everything
else derives from that registration:

* the transformers Auto registration (:meth:`ModelSpec.register_auto`, run by
  :func:`hf_querygen._registration.register_all`);
* the public names of ``hf_querygen`` (``hf_querygen.DualDecoderConfig``, resolved through
  :meth:`ModelSpec.exports`);
* the shared model contract (``tests/model_contract.py`` parametrises over :data:`MODELS`);
* the tasks' family lookup (:func:`family_of`: which encoding trains a config, which decoding reads it);
* the model card's paper (:func:`card_paper`).

The module lives on the bottom floor (beside :mod:`hf_querygen.registry`): tasks and the hub read model
specs without importing the model packages' code; the packages are discovered (every sub-package of
``hf_querygen.models``) and imported on the first lookup, with the ``hf_querygen.plugins`` entry points.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .registry import Registry


class CardPaper(NamedTuple):
    """The paper a model card cites: a title phrase, a one-line citation and its BibTeX."""

    title: str
    citation: str
    bibtex: str


#: what a card says for a model without a declared paper
UNKNOWN_PAPER = CardPaper("a model implemented in hf-querygen", "-", "")


class ClassReference:
    """A :class:`ModelSpec` field holding a class, given as the class itself or as ``"module:Class"``;
    read, the class (imported on the first read). A model class imports transformers' modeling stack
    (seconds), which ``AutoConfig`` alone never needs: the registration of the configs reads the
    name and module of the reference without importing it."""

    def __init__(self, *, optional: bool = False) -> None:
        self.optional = optional

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = f"_{name}_reference"

    def __get__(self, spec: Any, owner: type | None = None) -> Any:
        if spec is None:
            if self.optional:  # the dataclass default
                return None
            raise AttributeError(self.name)
        value = spec.__dict__[self.slot]
        if isinstance(value, str):
            module, _, name = value.partition(":")
            value = getattr(importlib.import_module(module), name)
            spec.__dict__[self.slot] = value
        return value

    def __set__(self, spec: Any, value: Any) -> None:
        if isinstance(value, str) and not all(value.partition(":")[::2]):
            raise ValueError(f"{self.name} {value!r}: give the class or 'module:Class'")
        spec.__dict__[self.slot] = value

    def reference(self, spec: Any) -> tuple[str, str] | None:
        """``(module, class name)`` of the field, without importing it (None for an empty field)."""
        value = spec.__dict__[self.slot]
        if value is None:
            return None
        if isinstance(value, str):
            module, _, name = value.partition(":")
            return module, name
        return value.__module__, value.__name__


@dataclass(frozen=True)
class ModelSpec:
    """Everything the library (and its test contract) knows about one model.

    Args:
        config_class / model_class: the transformers classes; the model class may be given as
            ``"module:Class"`` (:class:`ClassReference`), imported only when first read, so that
            registering the config (``AutoConfig``) does not import the model's modeling stack.
        auto_class: name of the ``transformers`` Auto class that loads a saved folder
            ("AutoModelForSeq2SeqLM", "AutoModelForTokenClassification").
        tiny_config: ``(**overrides) -> config``: a tiny random configuration (vocab ~40, hidden 8-16).
        tiny_inputs: ``(config, seed) -> dict`` of tensors for ``forward``: ``input_ids`` (B, S) and
            ``attention_mask`` (B, S) right-padded with rows of different lengths, and ``labels`` valid for
            the model (-100 at padding).
        family: what the tasks encode for and decode from: a name (``"hierarchical"``) or
            ``config -> name`` (the dual decoder is ``"pointer"`` or ``"dual"`` by its config); None: the
            generic ``"seq2seq"`` for an encoder-decoder, ``"tagging"`` otherwise.
        paper: the paper its model card cites.
        tokenizer_class: a tokenizer class of the library that ``AutoTokenizer`` must resolve by the name
            saved with a model (registered against this config class); a class or ``"module:Class"``.
        exports: extra public names of ``hf_querygen`` defined in the package (the config and model
            classes are always exported).
        variants: named config overrides that the contract also runs (e.g. "copynet", "pointer_only").
        generates: whether the model decodes with ``generate()``.
        exact_accumulation: whether k accumulated micro-batches give exactly the update of one batch (False
            for a loss with a part the Trainer's ``num_items_in_batch`` does not count, e.g. the joint model's
            per-tag-token mean; the contract then checks the update to within a few percent).
        source_keys: the ``tiny_inputs`` that describe the source, passed to ``generate()`` and the encoder
            (a model with nested document inputs lists them all).
        row_inputs: ``(inputs, row) -> dict``: one example of the tiny batch alone, without padding (for
            "batch = single"; default: ``input_ids`` / ``attention_mask`` cut to the row's length).
        resizes_token_embeddings: whether ``resize_token_embeddings`` keeps the old ids' outputs; False for a
            model that refuses it with an error naming what to do instead (an encoder-decoder of two
            embedding tables, like transformers' ``EncoderDecoderModel``).
    """

    config_class: type
    model_class: ClassReference = ClassReference()  # type: ignore[assignment]
    auto_class: str
    tiny_config: Callable[..., Any]
    tiny_inputs: Callable[[Any, int], dict]
    family: str | Callable[[Any], str] | None = None
    paper: CardPaper | None = None
    tokenizer_class: ClassReference = ClassReference(optional=True)  # type: ignore[assignment]
    exports: tuple[str, ...] = ()
    variants: dict[str, dict[str, Any]] = field(default_factory=lambda: {"default": {}})
    generates: bool = True
    exact_accumulation: bool = True
    source_keys: tuple[str, ...] = ("input_ids", "attention_mask")
    row_inputs: Callable[[dict, int], dict] | None = None
    resizes_token_embeddings: bool = True

    @property
    def model_type(self) -> str:
        return self.config_class.model_type

    @property
    def module(self) -> str:
        """The model package: the package of ``configuration_x.py`` (transformers layout), else the module
        defining the config class."""
        module = self.config_class.__module__
        package, _, last = module.rpartition(".")
        return package if last.startswith("configuration_") else module

    @property
    def model_reference(self) -> tuple[str, str]:
        """``(module, class name)`` of the model class, without importing it."""
        return vars(ModelSpec)["model_class"].reference(self)

    @property
    def tokenizer_reference(self) -> tuple[str, str] | None:
        """``(module, class name)`` of the tokenizer class (None without one), without importing it."""
        return vars(ModelSpec)["tokenizer_class"].reference(self)

    def public_names(self) -> tuple[str, ...]:
        """The names ``hf_querygen`` exports for this model (config and model classes first)."""
        names = (self.config_class.__name__, self.model_reference[1], *self.exports)
        return tuple(dict.fromkeys(names))

    def public_object(self, name: str) -> Any:
        """The object of one of :meth:`public_names`."""
        if name == self.config_class.__name__:
            return self.config_class
        if name == self.model_reference[1]:
            return self.model_class
        return getattr(importlib.import_module(self.module), name)

    def family_of(self, config: Any) -> str:
        if callable(self.family):
            return self.family(config)
        if self.family is not None:
            return self.family
        return generic_family(config)

    def register_config(self) -> None:
        """Make ``AutoConfig`` resolve this model type (idempotent)."""
        import transformers

        transformers.AutoConfig.register(self.model_type, self.config_class, exist_ok=True)

    def register_model(self) -> None:
        """Make the spec's Auto model class resolve this config class (idempotent; imports the model)."""
        import transformers

        getattr(transformers, self.auto_class).register(self.config_class, self.model_class, exist_ok=True)

    def register_tokenizer(self) -> None:
        """Make ``AutoTokenizer`` resolve the spec's tokenizer class, if any (idempotent)."""
        import transformers

        if self.tokenizer_reference is not None:
            transformers.AutoTokenizer.register(
                self.config_class, tokenizer_class=self.tokenizer_class, exist_ok=True
            )

    def register_auto(self) -> None:
        """Make ``AutoConfig``, the spec's Auto model class and ``AutoTokenizer`` resolve this model type
        at once (idempotent; the library's own registration does it in phases, see
        :mod:`hf_querygen._registration`)."""
        self.register_config()
        self.register_model()
        self.register_tokenizer()


def model_packages() -> list[str]:
    """Every model package shipped with the library: the sub-packages of ``hf_querygen.models`` (found
    on disk without importing them; a name starting with ``_`` is a helper, not a model)."""
    folder = Path(__file__).resolve().parent / "models"
    return [
        f"hf_querygen.models.{info.name}"
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda info: info.name)
        if info.ispkg and not info.name.startswith("_")
    ]


#: model name -> :class:`ModelSpec`; the model packages (and plugins) register on import, lazily loaded
MODELS: Registry[ModelSpec] = Registry("model", modules=model_packages)


def spec_for_config(config: Any) -> ModelSpec | None:
    """The registered spec of ``config``'s model type (None for a model this library does not know)."""
    model_type = getattr(config, "model_type", None)
    for _name, spec in MODELS.items():
        if spec.model_type == model_type:
            return spec
    return None


def generic_family(config: Any) -> str:
    """The family of a model that declares none: ``seq2seq`` for an encoder-decoder, else ``tagging``."""
    return "seq2seq" if getattr(config, "is_encoder_decoder", False) else "tagging"


#: config.json field holding a saved model's family: its remote code (hf_querygen.hub_code) runs without
#: the ModelSpec registrations, so it reads the family from there
FAMILY_FIELD = "hf_querygen_family"


def family_of(config: Any) -> str:
    """The model family of a config (which encoding trains it, which decoding reads it), as its model
    package declared it (:attr:`ModelSpec.family`); without a registered spec (a folder's remote code),
    the family saved in the config (:data:`FAMILY_FIELD`), else the generic one."""
    spec = spec_for_config(config)
    if spec is not None:
        return spec.family_of(config)
    saved = getattr(config, FAMILY_FIELD, None)
    return saved if isinstance(saved, str) else generic_family(config)


def auto_class_name(config: Any) -> str:
    """The name of the ``transformers`` Auto class that builds and loads ``config``'s model: its package's
    (:attr:`ModelSpec.auto_class`), else ``AutoModelForSeq2SeqLM`` for an encoder-decoder and
    ``AutoModelForTokenClassification`` for the rest."""
    spec = spec_for_config(config)
    if spec is not None:
        return spec.auto_class
    encoder_decoder = getattr(config, "is_encoder_decoder", False)
    return "AutoModelForSeq2SeqLM" if encoder_decoder else "AutoModelForTokenClassification"


def card_paper(model_type: str) -> CardPaper:
    """The paper the card of a ``model_type`` model cites (:data:`UNKNOWN_PAPER` if none is declared)."""
    for _name, spec in MODELS.items():
        if spec.model_type == model_type and spec.paper is not None:
            return spec.paper
    return UNKNOWN_PAPER


__all__ = [
    "FAMILY_FIELD",
    "MODELS",
    "UNKNOWN_PAPER",
    "CardPaper",
    "ClassReference",
    "ModelSpec",
    "auto_class_name",
    "card_paper",
    "family_of",
    "generic_family",
    "model_packages",
    "spec_for_config",
]
