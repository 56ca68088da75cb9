"""Configurable RNN encoder-decoder (LSTM|GRU|tanh-RNN; attention none|Bahdanau|Luong global/local;
copy none|CopyNet) registered with AutoConfig and AutoModelForSeq2SeqLM."""

from typing import Any

from ...specs import MODELS, ModelSpec
from ...utils import lazy_attribute
from .._papers import SONG2017
from .._tiny import copyable_positions, tiny_labels, tiny_source
from .configuration_rnn_seq2seq import RNNSeq2SeqConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "RNNSeq2SeqEncoder": "modeling_rnn_seq2seq",
    "RNNSeq2SeqEncoderOutput": "modeling_rnn_seq2seq",
    "RNNSeq2SeqForConditionalGeneration": "modeling_rnn_seq2seq",
    "RNNSeq2SeqPreTrainedModel": "modeling_rnn_seq2seq",
}


def _tiny_config(**overrides) -> RNNSeq2SeqConfig:
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
    return RNNSeq2SeqConfig(**{**settings, **overrides})


def _tiny_inputs(config: RNNSeq2SeqConfig, seed: int = 0) -> dict:
    import torch

    input_ids, mask = tiny_source(config.vocab_size, seed, config.pad_token_id, config.eos_token_id)
    generator = torch.Generator().manual_seed(seed + 1)
    copyable = copyable_positions(input_ids, mask, config.output_vocab_size, config.eos_token_id)
    rows = []
    for row, length in enumerate((5, 3, 2)):
        words = torch.randint(4, config.output_vocab_size, (length - 1,), generator=generator).tolist()
        if config.copy == "copynet" and copyable[row]:
            words[0] = config.output_vocab_size + copyable[row][0]  # copy a source word (extended id)
        rows.append(words + [config.eos_token_id])
    return {"input_ids": input_ids, "attention_mask": mask, "labels": tiny_labels(rows)}


SPEC = MODELS.register(
    "rnn_seq2seq",
    ModelSpec(
        config_class=RNNSeq2SeqConfig,
        model_class=f"{__name__}.modeling_rnn_seq2seq:RNNSeq2SeqForConditionalGeneration",
        auto_class="AutoModelForSeq2SeqLM",
        tiny_config=_tiny_config,
        tiny_inputs=_tiny_inputs,
        paper=SONG2017,
        tokenizer_class="hf_querygen.tokenization:JiebaWordTokenizer",  # AutoTokenizer resolves it by name
        variants={
            "gru-bahdanau": dict(cell="gru"),
            "lstm-vanilla": dict(attention="none"),
            "lstm-luong-general-2layers-untied": dict(
                attention="luong-general",
                num_encoder_layers=2,
                num_decoder_layers=2,
                tie_word_embeddings=False,
            ),
            "lstm-luong-dot": dict(attention="luong-dot", decoder_hidden_size=16),
            "gru-luong-concat-no-input-feeding": dict(
                cell="gru", attention="luong-concat", input_feeding=False
            ),
            "lstm-luong-local": dict(attention="luong-local", local_attention_window=1),
            "lstm-song2017-local-previous": dict(attention="luong-local", attention_query="previous"),
            "rnn-unidirectional-2layers": dict(
                cell="rnn", bidirectional_encoder=False, num_encoder_layers=2, num_decoder_layers=2
            ),
            "gru-copynet": dict(cell="gru", copy="copynet"),
            # no input feeding, no selective read: the decoder runs all teacher-forced steps in one RNN call
            "lstm-copynet-luong-parallel": dict(
                attention="luong-general", copy="copynet", copy_selective_read=False, input_feeding=False
            ),
        },
    ),
)

__all__ = [
    "RNNSeq2SeqConfig",
    "RNNSeq2SeqEncoder",
    "RNNSeq2SeqEncoderOutput",
    "RNNSeq2SeqForConditionalGeneration",
    "RNNSeq2SeqPreTrainedModel",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
