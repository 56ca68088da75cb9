"""Configuration of the joint ATS2S+SL baseline of Liu et al. (CIKM'18, Table 2 row 8)."""

from __future__ import annotations

from ...validation import check_float, check_int, invalid
from ..rnn_seq2seq.configuration_rnn_seq2seq import RNNSeq2SeqConfig


class JointSeq2SeqTaggerConfig(RNNSeq2SeqConfig):
    """An :class:`RNNSeq2SeqConfig` (the attentional seq2seq part) plus the tagger head.

    Args:
        num_tag_labels: tags per source token (2: not a keyword / keyword).
        tag_loss_weight: weight of the tagging loss added to the decoder loss (the paper trains the
            two "jointly together" without a weight: 1.0).
        **kwargs: every :class:`RNNSeq2SeqConfig` argument (copy must stay "none": the decoder is the
            plain attentional seq2seq of row 3).
    """

    model_type = "joint_seq2seq_tagger"

    def __init__(self, num_tag_labels: int = 2, tag_loss_weight: float = 1.0, **kwargs):
        owner = type(self).__name__
        if kwargs.get("copy", "none") != "none":
            raise invalid(
                owner, "copy", kwargs["copy"], "'none' (the decoder is the attentional seq2seq of row 3)"
            )
        check_int(owner, "num_tag_labels", num_tag_labels, minimum=2)
        check_float(owner, "tag_loss_weight", tag_loss_weight, 0.0, None)
        self.num_tag_labels = num_tag_labels
        self.tag_loss_weight = tag_loss_weight
        super().__init__(**kwargs)
