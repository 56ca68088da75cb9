"""Configuration of the configurable RNN encoder-decoder (vanilla / attentional seq2seq, Song'17,
EDNet / AttNet / CopyNet of Ding'18, the RNN segmenter of Lin'17). Named paper settings live in
:mod:`hf_querygen.presets`."""

from __future__ import annotations

from transformers import PretrainedConfig

from ...nn.attention import ATTENTION_KINDS
from ...nn.encoder import RNN_CELLS, check_rnn_hyper_parameters
from ...validation import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_optional_int,
    check_output_vocabulary,
    invalid,
)

ATTENTION_CHOICES = ("none", *ATTENTION_KINDS)
COPY_CHOICES = ("none", "copynet")
BRIDGE_CHOICES = ("linear", "tanh", "zeros")
ATTENTION_QUERY_CHOICES = ("previous", "current")


class RNNSeq2SeqConfig(PretrainedConfig):
    """Flat configuration of :class:`RNNSeq2SeqForConditionalGeneration`.

    Args:
        vocab_size: rows of the (shared) embedding table.
        output_vocab_size: decoder output vocabulary = token ids ``0 .. output_vocab_size - 1`` (the
            tokenizer puts the most frequent target words first); defaults to ``vocab_size``.
        embedding_size: word embedding size.
        hidden_size: encoder RNN size per direction.
        decoder_hidden_size: decoder RNN size (default ``hidden_size``).
        num_encoder_layers / num_decoder_layers: stacked RNN layers.
        cell: "lstm", "gru" or "rnn" (tanh, Lin'17) for encoder and decoder.
        bidirectional_encoder: encoder reads both directions (Liu'18 Sec. 3.2, Ding'18).
        attention: "none", "bahdanau", "luong-dot", "luong-general", "luong-concat" or "luong-local".
        attention_size: hidden size of additive / concat scores and the local-p position predictor
            (default ``decoder_hidden_size``).
        local_attention_window: D of Luong local-p attention (sigma = D / 2).
        local_attention_score: score function inside the local window ("dot", "general", "concat").
        attention_query: "previous" = attend with s_{t-1} and feed the context into the RNN input
            (Bahdanau 2015; Song'17's z_t = f(z_{t-1}, e(y_{t-1}), c_t)); "current" = attend with s_t after
            the RNN step and predict from tanh(W_c [c_t; s_t]) (Luong 2015, Eq. 5-6). Default: "previous"
            for bahdanau, "current" for the Luong kinds.
        input_feeding: feed the previous attentional vector into the RNN input (Luong 2015 Sec. 3.3);
            default True exactly when ``attention_query == "current"``.
        copy: "none" or "copynet" (Gu et al. 2016): logits then span the extended output space
            ``output_vocab_size + source length``.
        copy_selective_read: with copynet, add Gu's selective read zeta(y_{t-1}) (Eq. 9) to the RNN input.
        dropout: on embeddings, between stacked layers and on the output features.
        bridge: how the decoder's initial state comes from the encoder summary [h_n fwd; h_1 bwd]:
            "linear" (Liu'18 Eq. 1), "tanh" (Bahdanau 2015) or "zeros".
        tie_word_embeddings: the encoder and decoder share one embedding table (Liu'18 Sec. 5.1).
        init_range: weights start uniform in [-init_range, init_range] (Ding'18 use 0.1 for embeddings).
        max_decoding_length: default ``generation_config.max_length`` of a new model.
        pad/unk/bos/eos_token_id, decoder_start_token_id: special ids, all < ``output_vocab_size``.
    """

    model_type = "rnn_seq2seq"
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(
        self,
        vocab_size: int = 50,
        output_vocab_size: int | None = None,
        embedding_size: int = 60,
        hidden_size: int = 128,
        decoder_hidden_size: int | None = None,
        num_encoder_layers: int = 1,
        num_decoder_layers: int = 1,
        cell: str = "lstm",
        bidirectional_encoder: bool = True,
        attention: str = "none",
        attention_size: int | None = None,
        local_attention_window: int = 2,
        local_attention_score: str = "general",
        attention_query: str | None = None,
        input_feeding: bool | None = None,
        copy: str = "none",
        copy_selective_read: bool = True,
        dropout: float = 0.0,
        bridge: str = "linear",
        tie_word_embeddings: bool = True,
        init_range: float = 0.1,
        max_decoding_length: int = 32,
        pad_token_id: int = 0,
        unk_token_id: int = 1,
        bos_token_id: int = 2,
        eos_token_id: int = 3,
        decoder_start_token_id: int | None = None,
        is_encoder_decoder: bool = True,
        **kwargs,
    ):
        """Check and store every field (described in the class docstring). Stays long because a
        ``PretrainedConfig`` takes each field as its own keyword argument (so ``from_pretrained`` and
        ``AutoConfig`` restore it by name), and each is checked and stored in one flat sequence."""
        owner = type(self).__name__
        # Types and ranges first, each error naming the argument, value and what is allowed (otherwise a
        # wrong type surfaces later as an unnamed TypeError inside torch).
        for name, value in (
            ("vocab_size", vocab_size),
            ("embedding_size", embedding_size),
            ("hidden_size", hidden_size),
            ("num_encoder_layers", num_encoder_layers),
            ("num_decoder_layers", num_decoder_layers),
            ("local_attention_window", local_attention_window),
            ("max_decoding_length", max_decoding_length),
        ):
            check_int(owner, name, value, minimum=1)
        for name, value in (
            ("output_vocab_size", output_vocab_size),
            ("decoder_hidden_size", decoder_hidden_size),
            ("attention_size", attention_size),
        ):
            check_optional_int(owner, name, value, minimum=1)
        for name, value in (
            ("pad_token_id", pad_token_id),
            ("unk_token_id", unk_token_id),
            ("bos_token_id", bos_token_id),
            ("eos_token_id", eos_token_id),
        ):
            check_int(owner, name, value, minimum=0)
        check_optional_int(owner, "decoder_start_token_id", decoder_start_token_id, minimum=0)
        check_choice(owner, "cell", cell, tuple(RNN_CELLS))
        check_choice(owner, "local_attention_score", local_attention_score, ("dot", "general", "concat"))
        check_float(owner, "dropout", dropout, 0.0, 1.0, high_open=True)
        check_float(owner, "init_range", init_range, 0.0, None)
        for name, value in (
            ("bidirectional_encoder", bidirectional_encoder),
            ("copy_selective_read", copy_selective_read),
            ("tie_word_embeddings", tie_word_embeddings),
            ("is_encoder_decoder", is_encoder_decoder),
        ):
            check_bool(owner, name, value)
        if input_feeding is not None:
            check_bool(owner, "input_feeding", input_feeding)
        output_vocab_size = vocab_size if output_vocab_size is None else output_vocab_size
        decoder_hidden_size = hidden_size if decoder_hidden_size is None else decoder_hidden_size
        decoder_start_token_id = bos_token_id if decoder_start_token_id is None else decoder_start_token_id
        choices = {
            "attention": (attention, ATTENTION_CHOICES),
            "copy": (copy, COPY_CHOICES),
            "bridge": (bridge, BRIDGE_CHOICES),
        }
        for name, (value, allowed) in choices.items():
            check_choice(owner, name, value, allowed)
        if attention_query is None:
            attention_query = "previous" if attention in ("none", "bahdanau") else "current"
        check_choice(owner, "attention_query", attention_query, ATTENTION_QUERY_CHOICES)
        if input_feeding is None:
            input_feeding = attention != "none" and attention_query == "current"
        if input_feeding and (attention == "none" or attention_query != "current"):
            raise invalid(
                owner,
                "input_feeding",
                input_feeding,
                "False here: input_feeding needs Luong-style attention (attention_query='current')",
            )
        if copy == "copynet" and attention == "none":
            raise invalid(
                owner,
                "copy",
                copy,
                "'none' here: copy='copynet' needs an attention (Gu et al. build CopyNet on AttNet)",
            )
        check_output_vocabulary(
            owner,
            vocab_size,
            output_vocab_size,
            pad_token_id=pad_token_id,
            unk_token_id=unk_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            decoder_start_token_id=decoder_start_token_id,
        )
        check_rnn_hyper_parameters(
            "RNNSeq2SeqConfig",
            cell,
            dropout,
            vocab_size=vocab_size,
            embedding_size=embedding_size,
            hidden_size=hidden_size,
            decoder_hidden_size=decoder_hidden_size,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            local_attention_window=local_attention_window,
        )
        self.vocab_size = vocab_size
        self.output_vocab_size = output_vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.decoder_hidden_size = decoder_hidden_size
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.cell = cell
        self.bidirectional_encoder = bidirectional_encoder
        self.attention = attention
        self.attention_size = attention_size or decoder_hidden_size
        self.local_attention_window = local_attention_window
        self.local_attention_score = local_attention_score
        self.attention_query = attention_query
        self.input_feeding = input_feeding
        self.copy = copy
        self.copy_selective_read = copy_selective_read
        self.dropout = dropout
        self.bridge = bridge
        self.tie_word_embeddings = tie_word_embeddings
        self.init_range = init_range
        self.max_decoding_length = max_decoding_length
        self.unk_token_id = unk_token_id
        super().__init__(
            pad_token_id=pad_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            decoder_start_token_id=decoder_start_token_id,
            is_encoder_decoder=is_encoder_decoder,
            **kwargs,
        )

    @property
    def encoder_output_size(self) -> int:
        """H_out of the encoder: hidden_size times the number of directions."""
        return self.hidden_size * (2 if self.bidirectional_encoder else 1)
