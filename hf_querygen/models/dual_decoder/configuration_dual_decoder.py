"""Configuration of the dual-decoder keyword-query generator (Liu et al., CIKM'18, Sec. 3)."""

from __future__ import annotations

from transformers import PretrainedConfig

from ...validation import check_bool, check_float, check_int, check_optional_int, check_output_vocabulary

#: the paper's hyper-parameters (Sec. 5.1): embeddings 60, LSTMs 128, dropout 0.4, lambda 0.5
LIU2018_DUAL_DECODER: dict[str, float | int | bool] = {
    "embedding_size": 60,
    "hidden_size": 128,
    "dropout": 0.4,
    "loss_lambda": 0.5,
    "pointer_only": False,
}


class DualDecoderConfig(PretrainedConfig):
    """Flat configuration of :class:`DualDecoderForKeywordGeneration`.

    Args:
        vocab_size: size of the shared (encoder + both decoders) embedding table.
        output_vocab_size: the generator's output vocabulary = token ids ``0 .. output_vocab_size-1``
            (the most frequent keyword words, Sec. 3.4); defaults to ``vocab_size``.
        embedding_size: word embedding size (paper: 60).
        hidden_size: LSTM size of the encoder (per direction) and of both decoders (paper: 128).
        attention_size: size of the additive attentions' hidden layer (default ``hidden_size``).
        dropout: dropout on embeddings and on the generator's output features (paper: 0.4).
        loss_lambda: weight of the pointer NLL in Eq. (13); the generator gets ``1 - loss_lambda``.
        pointer_only: drop the generator decoder: the paper's Pointer Network baseline.
        init_range: weights start uniform in [-init_range, init_range] (not stated in the paper).
        pad/unk/bos/eos_token_id, decoder_start_token_id: special ids ([PAD]=0, [UNK]=1, [BOS]=2,
            [EOS]=3 in our tokenizers); the encoder input must end with [EOS], which serves as the
            pointer decoder's end sentinel (Sec. 3.3).
    """

    model_type = "dual_decoder"

    def __init__(
        self,
        vocab_size: int = 50,
        output_vocab_size: int | None = None,
        embedding_size: int = 60,
        hidden_size: int = 128,
        attention_size: int | None = None,
        dropout: float = 0.4,
        loss_lambda: float = 0.5,
        pointer_only: bool = False,
        init_range: float = 0.1,
        pad_token_id: int = 0,
        unk_token_id: int = 1,
        bos_token_id: int = 2,
        eos_token_id: int = 3,
        decoder_start_token_id: int = 2,
        is_encoder_decoder: bool = True,
        **kwargs,
    ):
        owner = type(self).__name__
        for name, value in (
            ("vocab_size", vocab_size),
            ("embedding_size", embedding_size),
            ("hidden_size", hidden_size),
        ):
            check_int(owner, name, value, minimum=1)
        check_optional_int(owner, "output_vocab_size", output_vocab_size, minimum=1)
        check_optional_int(owner, "attention_size", attention_size, minimum=1)
        for name, value in (
            ("pad_token_id", pad_token_id),
            ("unk_token_id", unk_token_id),
            ("bos_token_id", bos_token_id),
            ("eos_token_id", eos_token_id),
            ("decoder_start_token_id", decoder_start_token_id),
        ):
            check_int(owner, name, value, minimum=0)
        check_float(owner, "dropout", dropout, 0.0, 1.0, high_open=True)
        check_float(owner, "loss_lambda", loss_lambda, 0.0, 1.0)  # Eq. (13) weight
        check_float(owner, "init_range", init_range, 0.0, None)
        check_bool(owner, "pointer_only", pointer_only)
        check_bool(owner, "is_encoder_decoder", is_encoder_decoder)
        output_vocab_size = vocab_size if output_vocab_size is None else output_vocab_size
        check_output_vocabulary(
            owner,
            vocab_size,
            output_vocab_size,
            pad=pad_token_id,
            unk=unk_token_id,
            bos=bos_token_id,
            eos=eos_token_id,
        )
        self.vocab_size = vocab_size
        self.output_vocab_size = output_vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.attention_size = attention_size or hidden_size
        self.dropout = dropout
        self.loss_lambda = loss_lambda
        self.pointer_only = pointer_only
        self.init_range = init_range
        self.unk_token_id = unk_token_id
        super().__init__(
            pad_token_id=pad_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            decoder_start_token_id=decoder_start_token_id,
            is_encoder_decoder=is_encoder_decoder,
            **kwargs,
        )
