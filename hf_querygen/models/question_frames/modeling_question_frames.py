"""The question-frame model: which question frame to put a keyword query in (beyond Ding & Balog'18).

A keyword query's question is written as a frame around the query (``what are the X``, ``which X``,
``find information about X``; ``X`` alone is the query unchanged). The frames are the most frequent ones
of the training pairs; this model scores them for a query from three views of its words (their mean
embedding, the first word, the last word: "how ..." and "... recipe" ask differently) and is trained to
put its probability on the frames whose filled question is closest to the reference (ROUGE-L), the
marginal likelihood of that best set (Eq. 1 below). It writes only what the user typed plus question
words, so it never drops or changes a keyword; it cannot reorder them or insert words between them.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

from ...nn.encoder import WordEmbeddings
from ...nn.initialization import init_uniform_weights
from ...nn.labels import IGNORE_INDEX
from .configuration_question_frames import QuestionFramesConfig


class QuestionFramesPreTrainedModel(PreTrainedModel):
    config_class = QuestionFramesConfig
    base_model_prefix = "question_frames"
    main_input_name = "input_ids"

    def _init_weights(self, module: nn.Module) -> None:
        init_uniform_weights(module, self.config.init_range)


class QuestionFramesForQuestionGeneration(QuestionFramesPreTrainedModel):
    """Frame scores for ``AutoModelForSequenceClassification`` and the stock Trainer; the k2q task turns
    the best frames into questions (:meth:`hf_querygen.tasks.k2q.task.K2QTask.generate_questions`)."""

    def __init__(self, config: QuestionFramesConfig):
        super().__init__(config)
        self.embed_tokens = WordEmbeddings(
            config.vocab_size, config.embedding_size, config.pad_token_id, config.dropout
        )
        self.query = nn.Linear(len(config.query_views) * config.embedding_size, config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.hidden_size, len(config.frames))
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens.embedding

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens.embedding = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        return_dict: bool | None = None,
    ) -> SequenceClassifierOutput | tuple:
        """input_ids (B, S) keyword-query words then [EOS], right-padded; attention_mask (B, S) (default
        input_ids != pad); labels (B, K): the indices of the frames whose filled question scores best
        against the reference, -100 after them -> SequenceClassifierOutput with logits (B, F) over
        ``config.frames`` and the loss of Eq. 1."""
        if input_ids is None:
            raise ValueError("QuestionFramesForQuestionGeneration needs input_ids (B, S)")
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if attention_mask is None:
            attention_mask = (input_ids != self.config.pad_token_id).long()
        mask = attention_mask.to(torch.bool)  # (B, S)
        embedded = self.embed_tokens(input_ids)  # (B, S, E)
        # the words are the positions before [EOS]; a query of no word reads [EOS] as its word
        lengths = mask.sum(-1)  # (B,)
        words = mask & (torch.arange(mask.shape[1], device=mask.device) < (lengths - 1).clamp(min=1)[:, None])
        rows = torch.arange(input_ids.shape[0], device=input_ids.device)
        views = {
            "mean": lambda: (
                (embedded * words.unsqueeze(-1)).sum(1) / words.sum(-1, keepdim=True).clamp(min=1)
            ),
            "first": lambda: embedded[:, 0],
            "last": lambda: embedded[rows, (lengths - 2).clamp(min=0)],
        }  # each (B, E)
        read = torch.cat([views[view]() for view in self.config.query_views], dim=-1)  # (B, len(views) * E)
        hidden = torch.tanh(self.query(read))  # (B, H)
        logits = self.classifier(self.dropout(hidden))  # (B, F)
        loss = None
        if labels is not None:
            loss = best_frames_nll(logits, labels)
        if not return_dict:
            return (loss, logits) if loss is not None else (logits,)
        return SequenceClassifierOutput(loss=loss, logits=logits)


def best_frames_nll(logits: torch.Tensor, labels: torch.LongTensor) -> torch.Tensor:
    """Eq. 1: the mean over examples of -log sum_{f in best(x)} p(f | x), the marginal likelihood of the
    frames tied for the best ROUGE-L against the reference (ties are common: "what X" and "what is X"
    may both keep the same words of the reference). logits (B, F); labels (B, K) frame ids, -100 padding
    (a row of only -100 takes no loss)."""
    if labels.dim() == 1:
        labels = labels.unsqueeze(-1)
    if labels.dim() != 2 or labels.shape[0] != logits.shape[0]:
        raise ValueError(
            f"labels {tuple(labels.shape)} must be (B, K) frame ids for logits {tuple(logits.shape)}"
        )
    valid = labels != IGNORE_INDEX
    if bool(((labels < 0) & valid).any()) or bool((labels >= logits.shape[-1]).any()):
        raise ValueError(f"frame ids must lie in [0, {logits.shape[-1]}) or be -100, got {labels.tolist()}")
    log_probs = logits.float().log_softmax(-1)  # (B, F)
    picked = log_probs.gather(-1, labels.clamp(min=0)).masked_fill(~valid, float("-inf"))  # (B, K)
    has = valid.any(-1)
    per_example = -picked.logsumexp(-1)  # (B,)
    return torch.where(has, per_example, 0.0).sum() / has.sum().clamp(min=1)


__all__ = ["QuestionFramesForQuestionGeneration", "QuestionFramesPreTrainedModel", "best_frames_nll"]
