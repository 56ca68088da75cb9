"""(Bi)LSTM token classifier: embeddings -> packed (bi)RNN -> linear tag scores per token.

Liu et al. (CIKM'18) use it as the "Sequence Labeling" baseline (keyword extraction as word tagging);
the segmentation task uses it as a neural BIO segmenter.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import TokenClassifierOutput

from ...nn.encoder import RecurrentSourceEncoder, RNNEncoder, WordEmbeddings
from ...nn.initialization import init_uniform_weights
from ...nn.loss import token_nll
from .configuration_rnn_tagger import RNNTaggerConfig


class RNNTaggerPreTrainedModel(PreTrainedModel):
    config_class = RNNTaggerConfig
    base_model_prefix = "tagger"
    main_input_name = "input_ids"

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)


class RNNTaggerForTokenClassification(RNNTaggerPreTrainedModel):
    """Token classifier for ``AutoModelForTokenClassification`` and the stock Trainer."""

    def __init__(self, config: RNNTaggerConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        # the same source encoder as the encoder-decoders (nn.encoder.RecurrentSourceEncoder)
        self.encoder = RecurrentSourceEncoder(
            WordEmbeddings(config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout),
            RNNEncoder(
                config.embedding_size,
                config.hidden_size,
                config.num_layers,
                config.cell,
                config.bidirectional,
                config.dropout,
            ),
            pad_token_id=config.pad_token_id,
        )
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(self.encoder.output_size, config.num_labels)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens.embedding = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs,
    ) -> TokenClassifierOutput | tuple:
        """input_ids (B, S), attention_mask (B, S) (default input_ids != pad), labels (B, S) tag ids with
        -100 where no loss is taken -> TokenClassifierOutput with logits (B, S, num_labels) and the mean
        token cross-entropy (divided by ``num_items_in_batch`` when Trainer passes it)."""
        if input_ids is None:
            raise ValueError("RNNTaggerForTokenClassification needs input_ids (B, S)")
        return_dict = self.config.return_dict if return_dict is None else return_dict
        encoded = self.encoder(input_ids, attention_mask)
        logits = self.classifier(self.dropout(encoded.last_hidden_state))
        loss = None
        if labels is not None:
            if labels.shape != input_ids.shape:
                raise ValueError(
                    f"labels {tuple(labels.shape)} must have the shape of input_ids {tuple(input_ids.shape)}"
                )
            loss = token_nll(logits, labels, num_items_in_batch)
        if not return_dict:
            return (loss, logits) if loss is not None else (logits,)
        return TokenClassifierOutput(loss=loss, logits=logits)


__all__ = ["RNNTaggerForTokenClassification", "RNNTaggerPreTrainedModel"]
