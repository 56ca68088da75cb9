"""The shared model test contract, in the style of transformers' ``ModelTesterMixin``.

Every model registered in :data:`hf_querygen.models.MODELS` (and each of its variants) must:

* save -> load through its Auto class with no missing / unexpected keys and bit-identical outputs;
* give for a right-padded batch what each example gives alone (forward and ``generate``);
* generate the same with the recurrent cache as without (greedy and beam), feeding one token per step;
* find with beam search a sequence at least as likely as greedy search's;
* train: one Trainer step lowers the loss of its batch, and 2 accumulated micro-batches of 2 give the
  parameters of one batch of 4;
* survive ``resize_token_embeddings`` (old ids keep their outputs; save -> load still works);
* obey the LogitsProcessors (repetition_penalty, no_repeat_ngram_size, min_length, bad_words_ids) in greedy
  and beam search, with processors acting on log-probabilities for the copy models.

``test_model_contract.py`` parametrises these checks over the registry: a new model gets them all by
registering a :class:`~hf_querygen.models.ModelSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import transformers

from hf_querygen.models import MODELS, ModelSpec
from hf_querygen.nn.labels import IGNORE_INDEX

#: every (model name, variant) pair of the registry; the test ids read "dual_decoder/pointer_only"
CASES = [(name, variant) for name, spec in MODELS.items() for variant in spec.variants]
GENERATING_CASES = [(name, variant) for name, variant in CASES if MODELS.get(name).generates]

#: random tiny models are near uniform; sharpening the weights makes decoding take real decisions
SHARPEN = 4.0


@dataclass
class Case:
    name: str
    variant: str
    spec: ModelSpec
    model: torch.nn.Module
    inputs: dict

    @property
    def config(self):
        return self.model.config

    @property
    def source(self) -> dict:
        """The source inputs of the tiny batch (what ``generate()`` and the encoder get)."""
        return {key: self.inputs[key] for key in self.spec.source_keys}

    def row(self, row: int) -> dict:
        """Source inputs of example ``row`` alone, without padding."""
        if self.spec.row_inputs is not None:
            return self.spec.row_inputs(self.inputs, row)
        length = int(self.inputs["attention_mask"][row].sum())
        return {
            "input_ids": self.inputs["input_ids"][row : row + 1, :length],
            "attention_mask": self.inputs["attention_mask"][row : row + 1, :length],
        }

    @property
    def output_space(self) -> int:
        return self.model(**self.inputs).logits.shape[-1]

    def generate(self, **settings) -> transformers.generation.utils.GenerateOutput:
        defaults = dict(max_new_tokens=7, output_scores=True, return_dict_in_generate=True)
        return self.model.generate(**self.source, **{**defaults, **settings})


def build_case(name: str, variant: str, seed: int = 0, sharpen: float = SHARPEN, train: bool = False) -> Case:
    spec = MODELS.get(name)
    config = spec.tiny_config(**spec.variants[variant])
    torch.manual_seed(seed)
    model = spec.model_class(config)
    if sharpen != 1.0:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.mul_(sharpen)
    model.train(train)
    return Case(name, variant, spec, model, spec.tiny_inputs(config, seed))


def load_realigned(auto_class: str, path) -> torch.nn.Module:
    """``from_pretrained`` through the named Auto class, weights copied into freshly allocated memory:
    safetensors maps them at arbitrary alignment and CPU kernels vectorise by alignment, which can move the
    last bit of an output; re-allocated, the outputs of equal weights are bit-identical."""
    model = getattr(transformers, auto_class).from_pretrained(path).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.data = parameter.data.clone()
    return model


def real_length(sequence: torch.Tensor, eos_token_id: int) -> int:
    """Length of a generated row up to and including its first [EOS] (the whole row without one)."""
    ids = sequence.tolist()
    return ids.index(eos_token_id) + 1 if eos_token_id in ids[1:] else len(ids)


def content(sequence: torch.Tensor, eos_token_id: int) -> list[int]:
    """The generated tokens of a row: after the decoder start, before [EOS] and padding."""
    ids = sequence.tolist()[1:]
    return ids[: ids.index(eos_token_id)] if eos_token_id in ids else ids


def sequence_log_probs(case: Case, sequences: torch.Tensor) -> torch.Tensor:
    """Teacher-forced log p(sequence | source) (B,) of generated rows ``[start, y_1 .. y_n, EOS, pad..]``,
    summed up to and including the first [EOS]."""
    eos = case.config.eos_token_id
    labels = sequences[:, 1:].clone()
    for row in range(labels.shape[0]):
        labels[row, real_length(sequences[row], eos) - 1 :] = IGNORE_INDEX
    with torch.no_grad():
        logits = case.model(**case.source, decoder_input_ids=sequences[:, :-1]).logits
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    picked = log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return picked.masked_fill(labels == IGNORE_INDEX, 0.0).sum(dim=1)
