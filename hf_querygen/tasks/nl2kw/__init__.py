"""Natural-language query -> keyword query (Liu et al., CIKM'18): targets, encodings, decoding, the task.

What the task adds on top of the generic seq2seq preprocessing (:mod:`hf_querygen.tasks.seq2seq`), in
rooms whose names this package joins (every name of the first three is importable from here):

* :mod:`.targets`: the keyword words' target order (TF-IDF, Sec. 3.1; or natural), their
  extractive / generative split (Sec. 3.1), the dual decoder's labels in the extended output space
  (Sec. 3.3) and the tag labels of the sequence-labeling models;
* :mod:`.decoding`: the keyword-length prior and its logits processor (the length lever) and the
  postprocessing of generated ids into a :class:`KeywordQuery` (the third inference phase, Sec. 3.5);
* :mod:`.encoding`: the dataset encoding for each kind of model (:func:`encode_nl2kw`);
* :mod:`.resources`: out-of-corpus texts, synthetic pairs and word vectors (training only);
* :mod:`.task`: the registered :class:`~hf_querygen.tasks.nl2kw.task.NL2KWTask`.
"""

# the three rooms import nothing heavy at their top (torch, datasets inside their functions): joining them
# here costs a module of this package nothing
from .decoding import (
    KeywordLengthPrior,
    KeywordQuery,
    MinKeywordsLogitsProcessor,
    decode_dual_decoder_ids,
)
from .encoding import ENCODING_MODES, add_keyword_targets, encode_nl2kw
from .targets import (
    KEYWORD_ORDERS,
    TAG_LABELS,
    KeywordTargets,
    NaturalKeywordOrder,
    Normalizer,
    TfidfKeywordOrder,
    dual_decoder_labels,
    fit_keyword_order,
    keyword_tag_labels,
    keyword_targets,
    resolve_normalizer,
    unique_words,
)

__all__ = [
    "ENCODING_MODES",
    "KEYWORD_ORDERS",
    "TAG_LABELS",
    "KeywordLengthPrior",
    "KeywordQuery",
    "KeywordTargets",
    "MinKeywordsLogitsProcessor",
    "NaturalKeywordOrder",
    "Normalizer",
    "TfidfKeywordOrder",
    "add_keyword_targets",
    "decode_dual_decoder_ids",
    "dual_decoder_labels",
    "encode_nl2kw",
    "fit_keyword_order",
    "keyword_tag_labels",
    "keyword_targets",
    "resolve_normalizer",
    "unique_words",
]
