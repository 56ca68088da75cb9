"""BERT2BERT with a pointer over the source word pieces (See et al. 2017 on Rothe et al. 2020), registered
with AutoConfig and AutoModelForSeq2SeqLM; warm-started from a backbone like the plain BERT2BERT
(:mod:`hf_querygen.models._warm_start`)."""

from typing import Any

from ...specs import MODELS, CardPaper, ModelSpec
from ...utils import lazy_attribute
from .._tiny import tiny_labels, tiny_source
from .configuration_bert2bert_pointer import Bert2BertPointerConfig

_EXPORTS = {"Bert2BertPointerModel": "modeling_bert2bert_pointer"}

#: the special ids of the tiny model: [PAD] 0, [CLS] (decoder start) 2, [SEP] (end) 3
_TINY_IDS = {"pad_token_id": 0, "decoder_start_token_id": 2, "eos_token_id": 3}

SEE2017 = CardPaper(
    "a BERT2BERT (Rothe et al., TACL 2020) with the pointer-generator switch of See et al. (ACL 2017)",
    "See, Liu, Manning. Get To The Point: Summarization with Pointer-Generator Networks. ACL 2017. "
    "Rothe, Narayan, Severyn. Leveraging Pre-trained Checkpoints for Sequence Generation Tasks. TACL 2020.",
    "@inproceedings{see2017get,\n  title={Get To The Point: Summarization with Pointer-Generator Networks},"
    "\n  author={See, Abigail and Liu, Peter J. and Manning, Christopher D.},\n  booktitle={ACL},\n"
    "  year={2017}\n}\n@article{rothe2020leveraging,\n  title={Leveraging Pre-trained Checkpoints for "
    "Sequence Generation Tasks},\n  author={Rothe, Sascha and Narayan, Shashi and Severyn, Aliaksei},\n"
    "  journal={TACL},\n  year={2020}\n}",
)


def _tiny_config(**overrides) -> Bert2BertPointerConfig:
    from transformers import BertConfig

    sizes = dict(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=_TINY_IDS["pad_token_id"],
    )
    encoder = BertConfig(**sizes)
    decoder = BertConfig(**sizes, is_decoder=True, add_cross_attention=True)
    config = Bert2BertPointerConfig.from_encoder_decoder_configs(encoder, decoder, **_TINY_IDS, **overrides)
    config.vocab_size = encoder.vocab_size
    return config


def _tiny_inputs(config: Bert2BertPointerConfig, seed: int = 0) -> dict:
    import torch

    input_ids, mask = tiny_source(config.vocab_size, seed, config.pad_token_id, config.eos_token_id)
    generator = torch.Generator().manual_seed(seed + 1)
    rows = []
    for row, length in enumerate((5, 3, 2)):
        words = torch.randint(4, config.vocab_size, (length - 1,), generator=generator).tolist()
        words[0] = int(input_ids[row, 0])  # a source piece: the pointer can copy it
        rows.append(words + [config.eos_token_id])
    return {"input_ids": input_ids, "attention_mask": mask, "labels": tiny_labels(rows)}


SPEC = MODELS.register(
    "bert2bert_pointer",
    ModelSpec(
        config_class=Bert2BertPointerConfig,
        model_class=f"{__name__}.modeling_bert2bert_pointer:Bert2BertPointerModel",
        auto_class="AutoModelForSeq2SeqLM",
        tiny_config=_tiny_config,
        tiny_inputs=_tiny_inputs,
        family="bert2bert",
        paper=SEE2017,
        resizes_token_embeddings=False,
    ),
)

__all__ = ["SEE2017", "Bert2BertPointerConfig", "Bert2BertPointerModel"]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
