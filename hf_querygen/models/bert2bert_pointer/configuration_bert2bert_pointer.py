"""Configuration of the BERT2BERT pointer-generator: a warm-started encoder-decoder (Rothe et al., TACL 2020)
with See et al.'s (ACL 2017) copy switch over the source word pieces."""

from __future__ import annotations

from transformers import EncoderDecoderConfig


class Bert2BertPointerConfig(EncoderDecoderConfig):
    """An :class:`~transformers.EncoderDecoderConfig` (``encoder`` and ``decoder`` sub-configs, the special
    ids) whose model adds a pointer over the source pieces (:class:`Bert2BertPointerModel`).

    The encoder and decoder share one word-piece vocabulary (the backbone's), so copying a source piece is
    producing its id: the output space stays the vocabulary (``vocab_size``), with no extended copy slots.
    Source positions holding ``pad_token_id``, ``decoder_start_token_id`` ([CLS]) or ``eos_token_id``
    ([SEP], which also separates the documents of a q2id source) are never copied."""

    model_type = "bert2bert_pointer"
