"""The question-frame model (keyword query -> the question frame to put it in), registered with
AutoConfig and AutoModelForSequenceClassification; the k2q task decodes its frames into questions."""

from typing import Any

from ...specs import MODELS, CardPaper, ModelSpec
from ...utils import lazy_attribute
from .._tiny import tiny_labels, tiny_source
from .configuration_question_frames import QuestionFramesConfig

#: the modeling module imports transformers' modeling stack (seconds, which AutoConfig never needs):
#: its names load on first access
_EXPORTS = {
    "QuestionFramesForQuestionGeneration": "modeling_question_frames",
    "QuestionFramesPreTrainedModel": "modeling_question_frames",
    "best_frames_nll": "modeling_question_frames",
}

#: the task it serves (the model itself is ours, beyond the paper)
DING2018 = CardPaper(
    "a learned question-frame model for keyword-to-question generation (beyond Ding & Balog, ICTIR'18)",
    "Ding, Balog. Generating Synthetic Data for Neural Keyword-to-Question Models. ICTIR 2018.",
    "@inproceedings{ding2018generating,\n  title={Generating Synthetic Data for Neural Keyword-to-Question"
    " Models},\n  author={Ding, Heng and Balog, Krisztian},\n  booktitle={ICTIR},\n  year={2018}\n}",
)


def _tiny_config(**overrides) -> QuestionFramesConfig:
    settings = dict(
        vocab_size=40,
        frames=["X", "what X", "what is the X", "find information about X"],
        embedding_size=8,
        hidden_size=8,
    )
    return QuestionFramesConfig(**{**settings, **overrides})


def _tiny_inputs(config: QuestionFramesConfig, seed: int = 0) -> dict:
    input_ids, mask = tiny_source(config.vocab_size, seed, config.pad_token_id, eos_token_id=3)
    # the best frames of each example: one, two tied, one
    return {"input_ids": input_ids, "attention_mask": mask, "labels": tiny_labels([[1], [0, 2], [3]])}


SPEC = MODELS.register(
    "question_frames",
    ModelSpec(
        config_class=QuestionFramesConfig,
        model_class=f"{__name__}.modeling_question_frames:QuestionFramesForQuestionGeneration",
        auto_class="AutoModelForSequenceClassification",
        tiny_config=_tiny_config,
        tiny_inputs=_tiny_inputs,
        family="frames",
        paper=DING2018,
        variants={"default": {}, "wide-hidden": dict(hidden_size=16)},
        generates=False,
        exports=("best_frames_nll",),
    ),
)

__all__ = [
    "QuestionFramesConfig",
    "QuestionFramesForQuestionGeneration",
    "QuestionFramesPreTrainedModel",
    "best_frames_nll",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
