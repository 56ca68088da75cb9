"""Liu et al. (CIKM'18) dual-decoder keyword-query generator (pointer + generator decoders)."""

from typing import Any

from ...specs import MODELS, ModelSpec
from ...utils import lazy_attribute
from .._papers import LIU2018
from .._tiny import copyable_positions, tiny_labels, tiny_source
from .configuration_dual_decoder import LIU2018_DUAL_DECODER, DualDecoderConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "DualDecoderForKeywordGeneration": "modeling_dual_decoder",
    "DualDecoderPreTrainedModel": "modeling_dual_decoder",
}


def _tiny_config(**overrides) -> DualDecoderConfig:
    settings = dict(vocab_size=40, output_vocab_size=12, embedding_size=8, hidden_size=12, dropout=0.0)
    return DualDecoderConfig(**{**settings, **overrides})


def _tiny_inputs(config: DualDecoderConfig, seed: int = 0) -> dict:
    """Labels ``[V + pos(e_1) .. V + pos(sentinel), g_1 .. g_k, EOS]`` (pointer part, then generator part)."""
    import torch

    vocab = config.output_vocab_size
    input_ids, mask = tiny_source(config.vocab_size, seed, config.pad_token_id, config.eos_token_id)
    generator = torch.Generator().manual_seed(seed + 1)
    copyable = copyable_positions(input_ids, mask, vocab, config.eos_token_id)
    rows = []
    for row in range(input_ids.shape[0]):
        sentinel = vocab + int(mask[row].sum()) - 1
        pointed = [vocab + j for j in copyable[row][:2]]
        generated = (
            [] if config.pointer_only else torch.randint(4, vocab, (2 - row % 2,), generator=generator)
        )
        rows.append(pointed + [sentinel] + [int(g) for g in generated] + [config.eos_token_id])
    return {"input_ids": input_ids, "attention_mask": mask, "labels": tiny_labels(rows)}


def _family(config: DualDecoderConfig) -> str:
    """The pointer-only ablation encodes and decodes without the generator part."""
    return "pointer" if config.pointer_only else "dual"


SPEC = MODELS.register(
    "dual_decoder",
    ModelSpec(
        config_class=DualDecoderConfig,
        model_class=f"{__name__}.modeling_dual_decoder:DualDecoderForKeywordGeneration",
        auto_class="AutoModelForSeq2SeqLM",
        tiny_config=_tiny_config,
        tiny_inputs=_tiny_inputs,
        variants={"dual": {}, "pointer_only": dict(pointer_only=True)},
        family=_family,
        paper=LIU2018,
        exports=("LIU2018_DUAL_DECODER",),
    ),
)

__all__ = [
    "LIU2018_DUAL_DECODER",
    "DualDecoderConfig",
    "DualDecoderForKeywordGeneration",
    "DualDecoderPreTrainedModel",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
