"""Configuration of CtrsGen (Zhang et al., CIKM'20, "Query Understanding via Intent Description
Generation") and of its Table 3 ablations, which are settings of the same model (see
:mod:`hf_querygen.presets`, ``zhang2020*``)."""

from __future__ import annotations

from transformers import PretrainedConfig

from ...nn.encoder import check_rnn_hyper_parameters
from ...validation import check_output_vocabulary

DECODER_ATTENTION_CHOICES = ("contrast", "concat")
IRRELEVANT_ENCODING_CHOICES = ("per_document", "concatenated")
CONTRAST_SOFTMAX_CHOICES = ("relevant", "irrelevant", "none")
CONTRAST_COMBINATION_CHOICES = ("product", "renormalized")
DOCUMENT_CONTEXT_CHOICES = ("sentence", "word")


class CtrsGenConfig(PretrainedConfig):
    """Flat configuration of :class:`CtrsGenForIntentDescription`.

    Args:
        vocab_size: rows of the shared word embedding table (query, documents and decoder input).
        output_vocab_size: decoder output vocabulary = token ids ``0 .. output_vocab_size - 1`` (the
            tokenizer puts target words first); defaults to ``vocab_size``.
        embedding_size: word embedding size (paper: 300).
        hidden_size: GRU size per direction of every encoder (paper: 256); encoder states are 2x this.
        decoder_hidden_size: decoder GRU size (paper: 256, default ``hidden_size``).
        attention_size: hidden size of the additive attentions (default ``decoder_hidden_size``).
        use_query: encode the query (x^q, alpha^q, c^q); False = CtrsGen-Q: the query-aware encoder
            attention gamma then scores sentences with a learned vector in place of x^q Q, h0 = W_r x^r and
            the decoder has no query context.
        use_irrelevant: encode the irrelevant documents and subtract their similarity in the contrast
            score (Eq. 8); False = CtrsGen-I (m_u = 0, as for a query without irrelevant documents).
        decoder_attention: "contrast" (Sec. 4.5: alpha^q, alpha^r and beta) or "concat" (CtrsGen-I+Con:
            one additive attention over the concatenated query word states and relevant sentence states;
            the irrelevant documents are not used).
        irrelevant_encoding: "per_document" (Sec. 4.4: each irrelevant document is its own sentence
            sequence) or "concatenated" (CtrsGen-IrCon: one irrelevant mega-document, like the relevant).
        irrelevant_as_relevant: CtrsGen-ReIrCon: the irrelevant documents' sentences are appended to the
            relevant mega-document and no contrast is taken.
        share_document_encoder: relevant and irrelevant documents use the same word/sentence encoders
            (the paper says "similar" framework, Sec. 4.4; not stated whether the weights are shared).
        contrast_lambda: lambda of Eq. (8) (paper: 0.5).
        contrast_softmax: the axis of the softmax in Eq. (11), which the paper leaves open:
            "relevant" (for each irrelevant sentence, normalise over the relevant sentences: m_u then
            says which relevant sentences are the closest to some irrelevant sentence), "irrelevant"
            (normalise over the irrelevant sentences, then take the max over the same axis, as printed
            literally; with a single irrelevant sentence this is 1 for every u and the contrast vanishes),
            or "none" (m_u = max tanh(h_u W6 h_nt)).
        contrast_combination: Eq. (12) c^d = sum_u beta_u alpha_u h_u: "product" as printed (the weights
            beta * alpha sum to less than 1) or "renormalized" (divided by sum_u beta_u alpha_u).
        document_context: what Eq. (12) sums: "sentence" the sentence states h_u^r as printed, or "word":
            a per-step word attention inside every relevant sentence, c^d = sum_u (beta alpha)_u sum_l
            alpha_{u,l} h_{u,l} (hierarchical attention over words).
        copy: beyond the paper: a pointer-generator switch (See et al. 2017, Eq. 8-9, the layer of the
            query pointer-generator, :class:`hf_querygen.nn.coverage.PointerGeneratorMixture`) over the query
            words and the relevant documents' words, so that a topic word outside the output vocabulary can
            be written. The output space is then every token id (``vocab_size``); ``logits`` are
            log-probabilities and labels may be any token id (one no source word supplies trains as
            ``[UNK]``).
        dropout: on embeddings and on the output features.
        tie_word_embeddings: the decoder input embedding is the encoders' table.
        init_range: parameters start uniform in [-init_range, init_range] (paper: 0.1).
        max_decoding_length: default ``generation_config.max_length``.
        pad/unk/bos/eos_token_id, decoder_start_token_id: special ids, all < ``output_vocab_size``.
    """

    model_type = "ctrsgen"
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(
        self,
        vocab_size: int = 50,
        output_vocab_size: int | None = None,
        embedding_size: int = 300,
        hidden_size: int = 256,
        decoder_hidden_size: int | None = None,
        attention_size: int | None = None,
        use_query: bool = True,
        use_irrelevant: bool = True,
        decoder_attention: str = "contrast",
        irrelevant_encoding: str = "per_document",
        irrelevant_as_relevant: bool = False,
        share_document_encoder: bool = True,
        contrast_lambda: float = 0.5,
        contrast_softmax: str = "relevant",
        contrast_combination: str = "product",
        document_context: str = "sentence",
        copy: bool = False,
        dropout: float = 0.0,
        tie_word_embeddings: bool = True,
        init_range: float = 0.1,
        max_decoding_length: int = 64,
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
        output_vocab_size = vocab_size if output_vocab_size is None else output_vocab_size
        decoder_hidden_size = hidden_size if decoder_hidden_size is None else decoder_hidden_size
        decoder_start_token_id = bos_token_id if decoder_start_token_id is None else decoder_start_token_id
        choices = {
            "decoder_attention": (decoder_attention, DECODER_ATTENTION_CHOICES),
            "irrelevant_encoding": (irrelevant_encoding, IRRELEVANT_ENCODING_CHOICES),
            "contrast_softmax": (contrast_softmax, CONTRAST_SOFTMAX_CHOICES),
            "contrast_combination": (contrast_combination, CONTRAST_COMBINATION_CHOICES),
            "document_context": (document_context, DOCUMENT_CONTEXT_CHOICES),
        }
        for name, (value, allowed) in choices.items():
            if value not in allowed:
                raise ValueError(f"CtrsGenConfig: {name}={value!r} is not one of {allowed}")
        if not 0.0 <= contrast_lambda <= 1.0:
            raise ValueError(f"CtrsGenConfig: contrast_lambda must be in [0, 1]; got {contrast_lambda}")
        if decoder_attention == "concat" and not use_query:
            raise ValueError(
                "CtrsGenConfig: decoder_attention='concat' concatenates query states: needs use_query"
            )
        check_output_vocabulary(
            "CtrsGenConfig",
            vocab_size,
            output_vocab_size,
            pad_token_id=pad_token_id,
            unk_token_id=unk_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            decoder_start_token_id=decoder_start_token_id,
        )
        check_rnn_hyper_parameters(
            "CtrsGenConfig",
            "gru",
            dropout,
            vocab_size=vocab_size,
            embedding_size=embedding_size,
            hidden_size=hidden_size,
            decoder_hidden_size=decoder_hidden_size,
        )
        self.vocab_size = vocab_size
        self.output_vocab_size = output_vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.decoder_hidden_size = decoder_hidden_size
        self.attention_size = attention_size or decoder_hidden_size
        self.use_query = use_query
        self.use_irrelevant = use_irrelevant
        self.decoder_attention = decoder_attention
        self.irrelevant_encoding = irrelevant_encoding
        self.irrelevant_as_relevant = irrelevant_as_relevant
        self.share_document_encoder = share_document_encoder
        self.contrast_lambda = contrast_lambda
        self.contrast_softmax = contrast_softmax
        self.contrast_combination = contrast_combination
        self.document_context = document_context
        if not isinstance(copy, bool):
            raise ValueError(f"CtrsGenConfig: copy must be True or False; got {copy!r}")
        self.copy = copy
        self.dropout = dropout
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
            tie_word_embeddings=tie_word_embeddings,
            **kwargs,
        )

    @property
    def encoder_output_size(self) -> int:
        """2 * hidden_size: every encoder is a BiGRU."""
        return 2 * self.hidden_size

    @property
    def encodes_irrelevant(self) -> bool:
        """Whether the irrelevant documents enter the model as a contrast set (not merged, not dropped)."""
        return (
            self.use_irrelevant and self.decoder_attention == "contrast" and not self.irrelevant_as_relevant
        )


__all__ = ["CtrsGenConfig"]
