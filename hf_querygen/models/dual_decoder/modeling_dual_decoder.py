"""The dual-decoder keyword-query generator of Liu et al. (CIKM'18), Sec. 3, as a transformers model.

A BiLSTM encoder reads the natural-language query (Sec. 3.2). A **pointer decoder** extracts words
from the query by attention over source positions (Eq. 1-4) until it points at the end sentinel
(the ``[EOS]`` our tokenizers append to every source). A **generator decoder** then produces words
of a fixed output vocabulary while attending to both the encoder states and the pointer decoder's
hidden states (Eq. 5-12). Training minimises ``lambda * pointer NLL + (1 - lambda) * generator NLL``
(Eq. 13-14).

Both decoders share ONE output space, the project's extended output space
``[output vocabulary (V) | source positions (S)]`` (:mod:`hf_querygen.nn.copy`): a step in the
pointer phase puts all its probability on position ids ``V + j`` (the vocabulary part is masked),
a step in the generator phase on vocabulary ids (the position part is masked). The phase of each
step is determined by the ids fed so far: the pointer phase ends once the sentinel's id
``V + sentinel_position`` has been emitted. So one sequence ``[BOS] e_1 .. e_m <sentinel> g_1 .. g_k
[EOS]`` carries both decoders' outputs, and the stock ``generate()`` (greedy, beam search,
sampling) runs the three inference phases of Sec. 3.5: the recurrent state in the cache holds both
decoders' states, the phase flag and the pointer decoder's hidden states for Eq. (9)-(11), and is
reordered by beam search. The third phase (union without duplicates) is postprocessing:
:func:`hf_querygen.tasks.nl2kw.decoding.decode_dual_decoder_ids`.

``pointer_only=True`` removes the generator: the paper's Pointer Network baseline (Table 2, row 5).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel

from hf_querygen.nn.attention import AdditiveAttention
from hf_querygen.nn.cache import CACHE_NAME, RecurrentStateCache, pick_cache, with_cache
from hf_querygen.nn.encoder import (
    RecurrentEncoderOutput,
    RecurrentSourceEncoder,
    RNNEncoder,
    WordEmbeddings,
    build_rnn,
)
from hf_querygen.nn.initialization import init_uniform_weights
from hf_querygen.nn.labels import IGNORE_INDEX, shift_labels_right

from .._generation import ExtendedSpaceLMOutput, RecurrentGenerationMixin
from .configuration_dual_decoder import DualDecoderConfig
from .step_decoding import DualDecoderStepDecoding


class DualDecoderEncoder(RecurrentSourceEncoder):
    """Embedding + single-layer BiLSTM over the natural-language query (Sec. 3.2): the shared
    :class:`~hf_querygen.nn.encoder.RecurrentSourceEncoder`. Its output: last_hidden_state (B, S, 2H)
    h_i = [fw h_i ; bw h_i]; final_hidden / final_cell (B, 1, 2H) [fw h_n ; bw h_1] (and the cells), the input
    of Eq. (1)/(5); first_positions (B, S) first position holding the same source word (Eq. 4)."""

    def __init__(self, config: DualDecoderConfig, embeddings: WordEmbeddings):
        # no pad id: a missing attention_mask means "every position is real" (sources end in the sentinel)
        super().__init__(
            embeddings,
            RNNEncoder(
                config.embedding_size, config.hidden_size, num_layers=1, cell="lstm", bidirectional=True
            ),
        )


class DualDecoderPreTrainedModel(PreTrainedModel):
    config_class = DualDecoderConfig
    base_model_prefix = "dual_decoder"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)


class DualDecoderForKeywordGeneration(
    DualDecoderPreTrainedModel, DualDecoderStepDecoding, RecurrentGenerationMixin
):
    """Liu et al. (2018) dual decoder: BiLSTM encoder, pointer decoder, generator decoder.

    Output space: logits (B, T, V + S) are log-probabilities (each step's row is normalised over its
    phase's part, the other part is -inf), V = ``config.output_vocab_size``. The decoding lives in its
    parameter-free mixins: teacher forcing in :class:`~.decoding.DualDecoderDecoding`, cached steps in
    :class:`~.step_decoding.DualDecoderStepDecoding`; this class holds the modules, the loss and the HF API.
    """

    plain_greedy_loop = True  # RecurrentGenerationMixin: plain greedy search skips generate()'s setup

    def __init__(self, config: DualDecoderConfig):
        super().__init__(config)
        hidden, encoder_size = config.hidden_size, 2 * config.hidden_size
        # what the decoding reads at every generated token, as plain attributes: a transformers 5 config
        # attribute read costs about a microsecond, several per token (fixed at init, like the modules)
        self.output_vocab_size: int = config.output_vocab_size
        self.pointer_only: bool = config.pointer_only
        self.pad_token_id: int = config.pad_token_id
        self.decoder_start_token_id: int = config.decoder_start_token_id
        self.eos_token_id: int = config.eos_token_id
        self.unk_token_id: int = config.unk_token_id
        # one table for encoder and both decoders (Sec. 5.1: "shared the same word embeddings"); it is
        # registered once, under the encoder, and reached by the decoders through ``self.embeddings``
        self.encoder = DualDecoderEncoder(
            config,
            WordEmbeddings(config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout),
        )
        # pointer decoder, Eq. (1)-(4)
        self.pointer_init_hidden = nn.Linear(encoder_size, hidden)  # W_s^p, Eq. (1)
        self.pointer_init_cell = nn.Linear(encoder_size, hidden)
        self.pointer_rnn = build_rnn("lstm", config.embedding_size, hidden)
        self.pointer_attention = AdditiveAttention(hidden, encoder_size, config.attention_size)  # Eq. (2)-(3)
        if not config.pointer_only:
            # generator decoder, Eq. (5)-(12)
            self.generator_init_hidden = nn.Linear(encoder_size, hidden)  # W_s^g, Eq. (5)
            self.generator_init_cell = nn.Linear(encoder_size, hidden)
            self.generator_rnn = build_rnn("lstm", config.embedding_size, hidden)
            self.source_attention = AdditiveAttention(
                hidden, encoder_size, config.attention_size
            )  # Eq. (6)-(8)
            self.pointer_state_attention = AdditiveAttention(
                hidden, hidden, config.attention_size
            )  # Eq. (9)-(11)
            self.output_dropout = nn.Dropout(config.dropout)
            self.output_projection = nn.Linear(
                hidden + encoder_size + hidden, config.output_vocab_size
            )  # Eq. (12)
        self.post_init()

    # ------------------------------------------------------------------ HF plumbing
    @property
    def embeddings(self) -> WordEmbeddings:
        return self.encoder.embed_tokens

    def get_encoder(self) -> DualDecoderEncoder:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.embedding = value

    @property
    def logits_are_log_probs(self) -> bool:
        """Always: both decoders' rows are log-probabilities over V + S (see the class docstring)."""
        return True

    # ------------------------------------------------------------------ loss, Eq. (13)-(14)
    def dual_loss(
        self,
        log_probs: torch.Tensor,
        labels: torch.LongTensor,
        generator_phase: torch.Tensor,
        num_items_in_batch: int | torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Eq. (13)-(14): lambda * pointer NLL + (1 - lambda) * generator NLL.

        Both sums run over their label tokens and are divided by the number of ALL label tokens
        (``num_items_in_batch`` when the Trainer passes it, so gradient accumulation matches one
        large batch). Eq. (13) divides by the number of examples instead: a constant factor (the
        mean target length) that Adam is invariant to.

        log_probs (B, T, V + S), labels (B, T) with -100 padding, generator_phase (B, T) bool.
        """
        if num_items_in_batch is None:
            num_items_in_batch = (labels != IGNORE_INDEX).sum().clamp_min(1)
        if labels.shape != log_probs.shape[:-1]:
            raise ValueError(f"labels {tuple(labels.shape)} do not match the rows {tuple(log_probs.shape)}")
        if labels.numel() and int(labels.max()) >= log_probs.shape[-1]:
            raise ValueError(f"label id {int(labels.max())} is outside the {log_probs.shape[-1]} outputs")
        # the rows are log-probabilities already: one gather over the (B, T, V + S) rows, each token weighted
        # by its decoder's lambda, instead of two cross-entropies that each re-normalise every row
        lambda_ = self.config.loss_lambda
        counted = labels != IGNORE_INDEX
        if self.config.pointer_only:
            counted = counted & ~generator_phase
        label_log_probs = log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1).float()
        weights = torch.where(generator_phase, 1.0 - lambda_, lambda_)
        total = -torch.where(counted, label_log_probs * weights, 0.0).sum()
        if isinstance(num_items_in_batch, torch.Tensor):
            num_items_in_batch = num_items_in_batch.to(total.device)
        return total / num_items_in_batch

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.LongTensor | None = None,
        encoder_outputs: RecurrentEncoderOutput | None = None,
        past_key_values: RecurrentStateCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        source_word_ids: torch.LongTensor | None = None,
        cache: RecurrentStateCache | None = None,
        **kwargs,
    ) -> ExtendedSpaceLMOutput:
        """Teacher-forced or incremental decoding.

        Args:
            input_ids: (B, S) source ids ending in [EOS] (the pointer's end sentinel), right-padded.
            attention_mask: (B, S) 1 at real tokens.
            decoder_input_ids: (B, T) extended-space ids fed to the decoders (default: ``labels``
                shifted right behind ``decoder_start_token_id``); with a non-empty cache only the
                new ids.
            encoder_outputs: a :class:`RecurrentEncoderOutput` (generate() passes it).
            past_key_values: a :class:`RecurrentStateCache` holding both decoders' state (transformers
                <= 5.23; ``cache`` is the same under its >= 5.24 name).
            labels: (B, T) extended-space targets ``[V+pos(e_1) .. V+pos(sentinel), g_1 .. g_k, EOS]``,
                -100 at padding (see :func:`hf_querygen.tasks.nl2kw.targets.dual_decoder_labels`).
            source_word_ids: (B, S) optional word ids telling distinct OOV words apart (Eq. 4).

        Returns:
            ExtendedSpaceLMOutput with ``logits`` (B, T, V + S) normalised log-probabilities, ``loss``
            (Eq. 13) when labels are given, the cache when caching (field ``cache`` >= 5.24,
            ``past_key_values`` before), ``encoder_last_hidden_state`` (B, S, 2H).
        """
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("DualDecoderForKeywordGeneration.forward needs input_ids or encoder_outputs")
            encoder_outputs = self.encoder(input_ids, attention_mask, source_word_ids=source_word_ids)
        source_ids = encoder_outputs.source_input_ids
        source_mask = (attention_mask if attention_mask is not None else torch.ones_like(source_ids)).bool()
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("forward needs decoder_input_ids or labels")
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)

        past_key_values = pick_cache(past_key_values, cache)
        use_cache = (
            use_cache
            if use_cache is not None
            else (labels is None and getattr(self.config, "use_cache", True))
        )
        if use_cache:  # generation: step by step, carrying the state in the cache
            log_probs, generator_phase, past_key_values = self._cached_decode(
                decoder_input_ids, encoder_outputs, source_mask, past_key_values
            )
        else:  # teacher forcing (training) or generation without cache: all steps at once
            log_probs, generator_phase = self._decode_parallel(
                decoder_input_ids, encoder_outputs, source_mask
            )
        loss = None
        if labels is not None:
            loss = self.dual_loss(log_probs, labels, generator_phase, kwargs.get("num_items_in_batch"))
        return ExtendedSpaceLMOutput(
            loss=loss,
            logits=log_probs,
            **with_cache(past_key_values if use_cache else None),
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
        )

    def _generation_step(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: RecurrentEncoderOutput,
        attention_mask: torch.Tensor,
        cache: RecurrentStateCache | None,
    ) -> tuple[torch.Tensor, RecurrentStateCache]:
        """What ``forward(..., use_cache=True)`` computes for the plain greedy loop, without the output
        object: (log-probs (B, T, V + S), cache); ``attention_mask`` (B, S) bool (converted by the loop)."""
        log_probs, _, cache = self._cached_decode(decoder_input_ids, encoder_outputs, attention_mask, cache)
        return log_probs, cache

    def prepare_decoder_input_ids_from_labels(self, labels: torch.LongTensor) -> torch.LongTensor:
        """labels (B, T) -> decoder inputs (B, T): [decoder_start, y_1 .. y_{T-1}], -100 -> [PAD]
        (:func:`hf_querygen.nn.labels.shift_labels_right`; the transformers name, which
        DataCollatorForSeq2Seq calls)."""
        return shift_labels_right(labels, self.config.decoder_start_token_id, self.config.pad_token_id)

    def prepare_inputs_for_generation(
        self,
        decoder_input_ids: torch.LongTensor,
        past_key_values: RecurrentStateCache | None = None,
        attention_mask: torch.LongTensor | None = None,
        encoder_outputs: RecurrentEncoderOutput | None = None,
        use_cache: bool | None = None,
        cache: RecurrentStateCache | None = None,
        **kwargs,
    ) -> dict:
        """Feed only the ids the cached state has not consumed yet; the cache goes back under the name the
        installed generate() uses (``cache`` >= 5.24, ``past_key_values`` before)."""
        past_key_values = pick_cache(past_key_values, cache)
        if past_key_values is not None and past_key_values.get_seq_length() > 0:
            decoder_input_ids = decoder_input_ids[:, past_key_values.get_seq_length() :]
        return {
            "decoder_input_ids": decoder_input_ids,
            CACHE_NAME: past_key_values,
            "attention_mask": attention_mask,
            "encoder_outputs": encoder_outputs,
            "use_cache": use_cache,
        }
