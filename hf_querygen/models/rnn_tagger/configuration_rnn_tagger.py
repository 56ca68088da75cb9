"""Configuration of the (Bi)LSTM token classifier: the sequence-labeling baseline of Liu et al. (CIKM'18)
and a neural BIO query segmenter."""

from __future__ import annotations

from transformers import PretrainedConfig

from ...nn.encoder import RNN_CELLS, check_rnn_hyper_parameters
from ...validation import check_bool, check_choice, check_float, check_int


class RNNTaggerConfig(PretrainedConfig):
    """Flat configuration of :class:`RNNTaggerForTokenClassification`.

    Args:
        vocab_size: rows of the embedding table.
        embedding_size: word embedding size.
        hidden_size: RNN size per direction.
        num_layers: stacked RNN layers.
        cell: "lstm", "gru" or "rnn".
        bidirectional: read both directions (BiLSTM).
        dropout: on embeddings, between layers and before the classifier.
        init_range: weights start uniform in [-init_range, init_range].
        pad_token_id: padding id of the inputs.
        id2label / label2id / num_labels: the tag set (standard transformers fields).
    """

    model_type = "rnn_tagger"

    def __init__(
        self,
        vocab_size: int = 50,
        embedding_size: int = 60,
        hidden_size: int = 128,
        num_layers: int = 1,
        cell: str = "lstm",
        bidirectional: bool = True,
        dropout: float = 0.0,
        init_range: float = 0.1,
        pad_token_id: int = 0,
        **kwargs,
    ):
        owner = type(self).__name__
        for name, value in (
            ("vocab_size", vocab_size),
            ("embedding_size", embedding_size),
            ("hidden_size", hidden_size),
            ("num_layers", num_layers),
        ):
            check_int(owner, name, value, minimum=1)
        check_int(owner, "pad_token_id", pad_token_id, minimum=0)
        check_choice(owner, "cell", cell, tuple(RNN_CELLS))
        check_bool(owner, "bidirectional", bidirectional)
        check_float(owner, "dropout", dropout, 0.0, 1.0, high_open=True)
        check_float(owner, "init_range", init_range, 0.0, None)
        check_rnn_hyper_parameters(
            "RNNTaggerConfig",
            cell,
            dropout,
            vocab_size=vocab_size,
            embedding_size=embedding_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
        )
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.cell = cell
        self.bidirectional = bidirectional
        self.dropout = dropout
        self.init_range = init_range
        super().__init__(pad_token_id=pad_token_id, **kwargs)
