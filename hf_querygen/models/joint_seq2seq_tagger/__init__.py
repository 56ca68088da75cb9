"""Joint ATS2S+SL baseline of Liu et al. (CIKM'18): attentional seq2seq + tagger on one shared encoder."""

from typing import Any

from ...specs import MODELS, ModelSpec
from ...utils import lazy_attribute
from .._papers import LIU2018_JOINT
from .._tiny import copyable_positions, tiny_labels, tiny_source
from .configuration_joint_seq2seq_tagger import JointSeq2SeqTaggerConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "JointSeq2SeqTaggerForConditionalGeneration": "modeling_joint_seq2seq_tagger",
    "JointSeq2SeqTaggerOutput": "modeling_joint_seq2seq_tagger",
}


def _tiny_config(**overrides) -> JointSeq2SeqTaggerConfig:

    settings = dict(
        vocab_size=40,
        output_vocab_size=24,
        embedding_size=8,
        hidden_size=8,
        decoder_hidden_size=12,
        attention="bahdanau",
        dropout=0.0,
        max_decoding_length=12,
    )
    return JointSeq2SeqTaggerConfig(**{**settings, **overrides})


def _tiny_inputs(config: JointSeq2SeqTaggerConfig, seed: int = 0) -> dict:
    """Seq2seq labels with one copy id per row where possible: the tags derive from it (a keyword)."""
    input_ids, mask = tiny_source(config.vocab_size, seed, config.pad_token_id, config.eos_token_id)
    copyable = copyable_positions(input_ids, mask, config.output_vocab_size, config.eos_token_id)
    rows = []
    for row in range(input_ids.shape[0]):
        copied = [config.output_vocab_size + j for j in copyable[row][:1]]
        rows.append(copied + [4 + row, config.eos_token_id])
    return {"input_ids": input_ids, "attention_mask": mask, "labels": tiny_labels(rows)}


SPEC = MODELS.register(
    "joint_seq2seq_tagger",
    ModelSpec(
        config_class=JointSeq2SeqTaggerConfig,
        model_class=f"{__name__}.modeling_joint_seq2seq_tagger:JointSeq2SeqTaggerForConditionalGeneration",
        auto_class="AutoModelForSeq2SeqLM",
        tiny_config=_tiny_config,
        tiny_inputs=_tiny_inputs,
        variants={"lstm-bahdanau": {}},
        exact_accumulation=False,
        family="joint",
        paper=LIU2018_JOINT,
    ),
)

__all__ = [
    "JointSeq2SeqTaggerConfig",
    "JointSeq2SeqTaggerForConditionalGeneration",
    "JointSeq2SeqTaggerOutput",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
