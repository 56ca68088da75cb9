"""Q2ID (query -> intent description, Zhang et al. CIKM'20).

* :mod:`.encoding`: the nested inputs, their caps, the collator and decoding back to text (every name
  importable from here);
* :mod:`.pieces`: the query and its documents as one word-piece sequence and the contrastive loss of a
  warm-started encoder-decoder;
* :mod:`.task`: the registered :class:`~hf_querygen.tasks.q2id.task.Q2IDTask`.
"""

from typing import Any

from ...utils import lazy_attribute

# lazy: .encoding loads torch, and importing .task (a registry lookup by name) must not
_EXPORTS = {
    "ENCODED_COLUMNS": "encoding",
    "NESTED_COLUMNS": "encoding",
    "Q2IDCaps": "encoding",
    "Q2IDCollator": "encoding",
    "cap_report": "encoding",
    "decode_description": "encoding",
    "encode_q2id": "encoding",
    "encode_q2id_dataset": "encoding",
    "restate_query": "encoding",
    "split_document": "encoding",
    "train_q2id_tokenizer": "encoding",
    "whole_sentences": "encoding",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
