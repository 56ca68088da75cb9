"""Configuration of the query-based pointer-generator baselines of Zhang et al. CIKM'20 Table 4 (PG of
Hasselqvist et al. 2017 with See et al.'s coverage; RSA-style relevance-scaled attention as a switch)."""

from __future__ import annotations

from transformers import PretrainedConfig

from ...nn.encoder import check_rnn_hyper_parameters
from ...validation import check_output_vocabulary


class QueryPointerGeneratorConfig(PretrainedConfig):
    """Flat configuration of :class:`QueryPointerGeneratorForIntentDescription`.

    Args:
        vocab_size: rows of the shared embedding table; also the size of the copy space (every token id).
        output_vocab_size: ids ``0 .. output_vocab_size - 1`` the decoder can generate (the rest only by
            copying a source word); defaults to ``vocab_size``.
        embedding_size, hidden_size (per encoder direction), decoder_hidden_size, attention_size: sizes.
        use_query: encode the query and add W_q x^q to the attention score and the initial state
            (Hasselqvist et al. 2017); False = the query-independent pointer-generator.
        coverage: See et al.'s coverage vector in the attention and the coverage loss.
        coverage_loss_weight: lambda of See Eq. (13).
        relevance_scaled_attention: RSA-style (Baumel et al. 2018): the attention on every source word is
            multiplied by its sentence's relevance to the query (share of distinct query words the sentence
            contains, plus ``relevance_floor``) and renormalised.
        relevance_floor: added to every sentence relevance, so that no sentence is cut off entirely.
        diversity_attention: SD2-style diversity (after Nema et al. 2017): the context vector is made
            (gated) orthogonal to the previous step's diversified context, d_t = c_t - g_t proj_{d_{t-1}}(c_t)
            with g_t = sigmoid(w [s_t; c_t]), so successive steps read different content. A re-implementation
            from the idea, not from their code.
        max_source_tokens: the relevant mega-document is read as one word sequence, cut at this length.
        dropout, init_range, max_decoding_length, special ids: as for the other RNN models.
    """

    model_type = "query_pointer_generator"
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(
        self,
        vocab_size: int = 50,
        output_vocab_size: int | None = None,
        embedding_size: int = 128,
        hidden_size: int = 256,
        decoder_hidden_size: int | None = None,
        attention_size: int | None = None,
        use_query: bool = True,
        coverage: bool = True,
        coverage_loss_weight: float = 1.0,
        relevance_scaled_attention: bool = False,
        relevance_floor: float = 0.05,
        diversity_attention: bool = False,
        max_source_tokens: int = 400,
        dropout: float = 0.0,
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
        output_vocab_size = vocab_size if output_vocab_size is None else output_vocab_size
        decoder_hidden_size = hidden_size if decoder_hidden_size is None else decoder_hidden_size
        decoder_start_token_id = bos_token_id if decoder_start_token_id is None else decoder_start_token_id
        check_output_vocabulary(
            "QueryPointerGeneratorConfig",
            vocab_size,
            output_vocab_size,
            pad_token_id=pad_token_id,
            unk_token_id=unk_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            decoder_start_token_id=decoder_start_token_id,
        )
        if relevance_scaled_attention and not use_query:
            raise ValueError("QueryPointerGeneratorConfig: relevance_scaled_attention needs use_query=True")
        if coverage_loss_weight < 0 or relevance_floor < 0 or max_source_tokens < 1:
            raise ValueError(
                "QueryPointerGeneratorConfig: coverage_loss_weight and relevance_floor must be >= 0 and "
                f"max_source_tokens >= 1; got {coverage_loss_weight}, {relevance_floor}, {max_source_tokens}"
            )
        check_rnn_hyper_parameters(
            "QueryPointerGeneratorConfig",
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
        self.coverage = coverage
        self.coverage_loss_weight = coverage_loss_weight
        self.relevance_scaled_attention = relevance_scaled_attention
        self.relevance_floor = relevance_floor
        self.diversity_attention = diversity_attention
        self.max_source_tokens = max_source_tokens
        self.dropout = dropout
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


__all__ = ["QueryPointerGeneratorConfig"]
