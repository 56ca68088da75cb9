"""Training glue around the stock ``Seq2SeqTrainer`` (no training loop of our own).

* :func:`train_seq2seq`: ``Seq2SeqTrainingArguments`` from a paper's training preset, early stopping on
  the validation loss (``EarlyStoppingCallback`` + ``load_best_model_at_end``), bucketed batches,
  resuming from the last checkpoint, the generation config set deliberately before saving;
* :func:`train_preset`: one preset of a task on prepared task data (config sized by the task, the
  task's encoding for the model family) -- what ``hf-querygen train`` and the experiment runner call;
* :func:`save_model_folder`: model + tokenizer + generation config + training metadata + model card,
  written to a temporary folder and renamed (a folder either is complete or does not exist);
* :func:`train_model`: corpus -> task data -> :func:`train_preset` -> :func:`save_model_folder`, for a
  :class:`Recipe` (how) and a :class:`DataSelection` (on what).

The package's rooms: :mod:`.trainer` (the Trainer set-up), :mod:`.task_training` (a preset on task
data, selection, the model folder), :mod:`.model_training` (:func:`train_model`). Decoding lives in
:mod:`hf_querygen.inference` and the tasks' ``predict``; the CLI in :mod:`hf_querygen.commands`.
"""

from ..utils import TRAINING_METADATA_FILE
from .model_training import QUICK_SETTINGS, train_model
from .recipe import DataSelection, Recipe
from .task_training import (
    LOG_HISTORY_FILE,
    MODEL_FOLDER_KIND,
    ROUGE_GOAL_METRICS,
    TRAIN_LOG_FILE,
    choose_decoding,
    data_fingerprint,
    model_for_config,
    save_model_folder,
    train_preset,
)
from .trainer import (
    DEFAULT_TRAINING_ARGUMENTS,
    BucketedBatchSampler,
    LogFileCallback,
    TimeLimitCallback,
    check_resumable_checkpoint,
    configure_generation,
    make_compute_metrics,
    quiet_console,
    source_length_keys,
    text_generation_scores,
    train_seq2seq,
)

__all__ = [
    "DataSelection",
    "Recipe",
    "DEFAULT_TRAINING_ARGUMENTS",
    "LOG_HISTORY_FILE",
    "MODEL_FOLDER_KIND",
    "QUICK_SETTINGS",
    "ROUGE_GOAL_METRICS",
    "TRAINING_METADATA_FILE",
    "TRAIN_LOG_FILE",
    "BucketedBatchSampler",
    "LogFileCallback",
    "TimeLimitCallback",
    "check_resumable_checkpoint",
    "choose_decoding",
    "configure_generation",
    "data_fingerprint",
    "make_compute_metrics",
    "model_for_config",
    "quiet_console",
    "save_model_folder",
    "source_length_keys",
    "text_generation_scores",
    "train_model",
    "train_preset",
    "train_seq2seq",
]
