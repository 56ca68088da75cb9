"""One preset of a task on prepared task data (:func:`train_preset`), checkpoint selection on a generation
score, pretraining, the decoding chosen on validation, and the saved model folder."""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fs import atomic_output_dir
from .._registration import register_all
from ..inference import encoder_outputs_reused
from ..model_folder import TOKENIZER_FINGERPRINT_KEY, missing_untied, tokenizer_fingerprint
from ..models._warm_start import WARM_START_FIELD, warm_start_model
from ..pretrained import BACKBONE_FIELD, warm_started_model
from ..specs import auto_class_name
from ..tasks.base import DecodingChoice, TaskData
from ..tasks.nl2kw.resources import load_word_vectors
from ..utils import TRAINING_METADATA_FILE

if TYPE_CHECKING:  # torch/transformers/datasets cost seconds at import
    from transformers import PreTrainedModel, PreTrainedTokenizerFast, Seq2SeqTrainer

from .frozen_encoder import EncoderStatesCollator, freeze_encoder
from .trainer import train_seq2seq

#: the .hf_querygen marker kind of a model folder written by save_model_folder (see hf_querygen._fs)
MODEL_FOLDER_KIND = "model"
#: file written beside a trained model: the Trainer's log history (training loss, every evaluation)
LOG_HISTORY_FILE = "log_history.json"
#: the training's log in a model folder (``hf-querygen train``: transformers' records, warnings, the
#: Trainer's log dicts as JSON lines)
TRAIN_LOG_FILE = "train.log"


# ---------------------------------------------------------------- presets on task data
def model_for_config(config: Any) -> PreTrainedModel:
    """A model for ``config`` through its Auto class (:func:`hf_querygen.specs.auto_class_name`), freshly
    initialised; seed first. Warm starts get their backbone's weights instead: a BERT2BERT config
    (:data:`~hf_querygen.models._warm_start.WARM_START_FIELD`) both halves
    (:func:`~hf_querygen.models._warm_start.warm_start_model`), an encoder with a new head built on a
    backbone's config (:data:`~hf_querygen.pretrained.BACKBONE_FIELD`: a token classifier) the encoder's
    (:func:`~hf_querygen.pretrained.warm_started_model`; the head starts at random)."""
    import transformers

    register_all()
    if getattr(config, WARM_START_FIELD, None):
        return warm_start_model(config)
    if getattr(config, BACKBONE_FIELD, None) is not None:
        return warm_started_model(auto_class_name(config), config)
    auto = getattr(transformers, auto_class_name(config))
    return auto.from_config(config)


def train_preset(
    data: TaskData,
    preset: str,
    output_dir: str | Path,
    *,
    seed: int = 42,
    preset_overrides: Mapping[str, Any] | None = None,
    training_preset: str | None = None,
    training_overrides: Mapping[str, Any] | None = None,
    early_stopping_patience: int | None = 3,
    group_by_length: bool = True,
    resume: bool = False,
    callbacks: Sequence | None = None,
    pretrain_on: str | None = None,
    pretrain_steps: int = 400,
    word_vectors: str | None = None,
    freeze_embeddings: bool = False,
    frozen_encoder: bool = False,
    select_on: str | None = None,
    selection_decoding: Mapping[str, Any] | None = None,
) -> Seq2SeqTrainer:
    """Train model ``preset`` on ``data`` (a :class:`~hf_querygen.tasks.base.TaskData`) with the stock
    ``Seq2SeqTrainer``; checkpoints and the best model go to ``output_dir``.

    ``word_vectors``: a name of ``task.word_vectors`` loaded into the shared input embeddings before
    training (``freeze_embeddings``: kept fixed). ``pretrain_on``: a name of ``task.pretraining_data``;
    the model first trains ``pretrain_steps`` steps on those pairs (same trainer, same training
    arguments, no evaluation; the result is kept in ``output_dir/pretrained`` so a resumed run skips it),
    then trains on ``data``'s TRAIN split as usual (early stopping on validation). ``frozen_encoder``: an
    encoder-decoder's encoder does not train, and each distinct source is encoded once
    (:mod:`hf_querygen.training.frozen_encoder`; pretraining included).

    The model config is ``data.task.model_config(preset, data, **preset_overrides)``; the training
    arguments are :data:`DEFAULT_TRAINING_ARGUMENTS` < the training preset (``training_preset``, else
    the preset's own name when it has one) < ``training_overrides`` (any ``Seq2SeqTrainingArguments``
    field). The train / validation splits are the task's encoding for the config's model family.
    ``resume`` continues from the last checkpoint in ``output_dir``. ``select_on``: a score of
    ``task.score`` (e.g. ``"ROUGE-L"`` for k2q, ``"rougeL_recall"`` for q2id) or ``"rouge_goal"`` (the
    mean of ROUGE-1 recall, ROUGE-L recall and ROUGE-L F1): every evaluation then also decodes the
    VALIDATION split with ``task.predict`` (keyword arguments ``selection_decoding``), and the best
    checkpoint and early stopping follow that score instead of the validation loss.
    Returns the trainer (its model is the best one, in eval mode).
    """
    from transformers import set_seed

    from ..presets import TRAINING_PRESETS, check_config_overrides

    check_config_overrides(preset, preset_overrides or {}, what="preset_overrides (--set)")
    task = data.task
    set_seed(seed)
    config = task.model_config(preset, data, **dict(preset_overrides or {}))
    model = model_for_config(config)
    if word_vectors is not None:
        embedding = model.get_input_embeddings()
        vectors = task.word_vectors(word_vectors, data, embedding.weight.shape[1])
        load_word_vectors(embedding, data.tokenizer.get_vocab(), vectors, freeze=freeze_embeddings)
    elif freeze_embeddings:
        raise ValueError("freeze_embeddings needs word_vectors (frozen random embeddings are not a system)")
    family = task.family_of(config)
    encoded = data.encoded(family)
    collator = task.collator(data.tokenizer)
    training_name = training_preset or (preset if preset in TRAINING_PRESETS else None)
    arguments = dict(TRAINING_PRESETS.get(training_name)) if training_name else {}
    overrides = {"seed": seed, "save_total_limit": 1, **dict(training_overrides or {})}
    if frozen_encoder:
        collator = EncoderStatesCollator(collator, freeze_encoder(model))
        progress = not {**arguments, **overrides}.get("disable_tqdm", True)  # a bar where training shows one
        for split in ("train", "validation"):  # sorted by length: less padding than the Trainer's batches
            if split in encoded:
                collator.encode_all(
                    encoded[split], progress=progress, description=f"encoding {split} sources"
                )
    score_model = None
    if select_on is not None:
        if "validation" not in data.splits:
            raise ValueError(f"select_on={select_on!r} needs a validation split")
        score_model = _validation_scorer(data, select_on, selection_decoding or {})
        overrides.update(metric_for_best_model=select_on, greater_is_better=True)
    if pretrain_on is not None:
        _pretrain(
            model,
            data,
            family,
            pretrain_on,
            pretrain_steps,
            Path(output_dir) / "pretrained",
            arguments,
            seed,
            collator,
        )
    # a frozen encoder reads the validation sources of every evaluation into the same states
    reuse = encoder_outputs_reused(model) if frozen_encoder else contextlib.nullcontext()
    with reuse:
        trainer = train_seq2seq(
            model,
            data.tokenizer,
            encoded["train"],
            encoded["validation"] if "validation" in encoded else None,
            output_dir,
            training_preset=arguments,
            max_new_tokens=task.max_new_tokens(data),
            early_stopping_patience=early_stopping_patience,
            callbacks=callbacks,
            group_by_length=group_by_length,
            resume_from_checkpoint=resume,
            data_collator=collator,
            label_names=["labels"],  # the joint model's optional tag_labels must not hide the eval loss
            score_model=score_model,
            compute_loss_func=task.loss_function(data, family, model),
            **overrides,
        )
    trainer.model.eval()
    return trainer


#: ``select_on="rouge_goal"``: the mean of the three scores an intent description model is judged on
ROUGE_GOAL_METRICS = ("rouge1_recall", "rougeL_recall", "rougeL_f")


def with_rouge_goal(scores: dict[str, float]) -> dict[str, float]:
    """``scores`` plus ``rouge_goal`` (the mean of :data:`ROUGE_GOAL_METRICS`) when they have ROUGE."""
    if all(metric in scores for metric in ROUGE_GOAL_METRICS):
        scores["rouge_goal"] = sum(scores[m] for m in ROUGE_GOAL_METRICS) / len(ROUGE_GOAL_METRICS)
    return scores


#: ``select_on="selection_criterion"``: the checkpoint is chosen by what :func:`choose_decoding` maximises,
#: the WORST selection split's gain over the task's floor (k2q: the echoed keyword query), not by one
#: pooled validation score that the larger source of queries dominates
SELECTION_CRITERION = "selection_criterion"


def _validation_scorer(
    data: TaskData, select_on: str, decoding: Mapping[str, Any]
) -> Callable[[PreTrainedModel], dict[str, float]]:
    """model -> the task's scores on the VALIDATION split (decoded by ``task.predict`` with ``decoding``),
    plus ``rouge_goal`` when the scores have ROUGE; with ``select_on="selection_criterion"``, that
    criterion (:data:`SELECTION_CRITERION`) and the metric of each selection split."""
    if select_on == SELECTION_CRITERION:
        measure = _selection_measure(data, DecodingChoice())  # the primary metric, every example
        if measure is None:
            raise ValueError(f"select_on={select_on!r}: the task has no selection splits in this data")

        def criterion(model: PreTrainedModel) -> dict[str, float]:
            row = measure(model, dict(decoding))
            by_split = {f"{name} {measure.metric}": value for name, value in row["by_split"].items()}
            return {SELECTION_CRITERION: row["criterion"], **by_split}

        return criterion

    task, sources, references = data.task, data.sources("validation"), data.references("validation")

    def score(model: PreTrainedModel) -> dict[str, float]:
        outputs = task.predict(model, data.tokenizer, sources, **dict(decoding))
        scores = with_rouge_goal(task.score(outputs, references, sources))
        if select_on not in scores:
            raise ValueError(f"select_on={select_on!r} is not one of the task's scores {sorted(scores)}")
        return scores

    return score


def _pretrain(
    model: PreTrainedModel,
    data: TaskData,
    family: str,
    name: str,
    steps: int,
    output_dir: Path,
    arguments: Mapping[str, Any],
    seed: int,
    collator: Callable | None = None,
) -> None:
    """``train_preset(pretrain_on=...)``: ``steps`` steps of the stock trainer on the task's pretraining
    pairs, encoded exactly as TRAIN (same tokenizer, target order and output vocabulary) and batched by
    ``collator`` (the main training's; default the task's); the weights are kept in ``output_dir`` and
    reloaded when it already holds them (resume)."""
    import datasets
    from safetensors.torch import load_file

    weights = output_dir / "model.safetensors"
    if weights.is_file():
        state = load_file(str(weights))
        loaded = model.load_state_dict(state, strict=False)
        missing = missing_untied(model, loaded.missing_keys, state)  # tied weights are stored once
        if missing or loaded.unexpected_keys:
            raise ValueError(
                f"pretrained weights in {weights} do not fit the model (missing {missing}, unexpected "
                f"{loaded.unexpected_keys}); delete {output_dir} to pretrain again"
            )
        return
    if steps < 1:
        raise ValueError(f"pretrain_steps must be >= 1, got {steps}")
    pairs, _ = data.task.pretraining_data(name, data)
    # pairs the task holds as one of its splits (k2q's synthetic_first) were encoded with the others
    held = next((split for split, dataset in data.splits.items() if dataset is pairs), None)
    if held is not None:
        encoded = data.encoded(family)[held]
    else:
        encoded = TaskData(data.task, datasets.DatasetDict(train=pairs), data.tokenizer, data.state)
        encoded = encoded.encoded(family)["train"]
    trainer = train_seq2seq(
        model,
        data.tokenizer,
        encoded,
        None,
        output_dir / "checkpoints",
        training_preset=dict(arguments),
        max_new_tokens=data.task.max_new_tokens(data),
        group_by_length=True,
        data_collator=collator or data.task.collator(data.tokenizer),
        label_names=["labels"],
        seed=seed,
        max_steps=steps,
        save_strategy="no",
        logging_steps=50,
    )
    trainer.model.save_pretrained(str(output_dir))
    import shutil

    shutil.rmtree(output_dir / "checkpoints", ignore_errors=True)


def save_model_folder(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    directory: str | Path,
    metadata: Mapping[str, Any],
    overwrite: bool = False,
    log_history: Sequence[Mapping[str, Any]] | None = None,
    log_file: str | Path | None = None,
) -> Path:
    """Write a self-contained model folder: weights, config, generation config, tokenizer,
    ``hf_querygen_training.json`` (``metadata``), ``log_history.json`` (the Trainer's curves: training
    loss and every evaluation, when given), ``train.log`` (a copy of ``log_file``, the training's log,
    when given) and a model card (README.md, :mod:`hf_querygen.hub`).

    Atomic: everything is written to a temporary sibling folder that is renamed at the end, so an
    interrupted run never leaves a half-written model. An existing folder is an error
    (:class:`~hf_querygen.errors.OutputExistsError`) unless ``overwrite`` and the library wrote it (then
    it is replaced only once the new one is complete); a folder holding anything else is never replaced.
    """
    from ..hub import card_kwargs_from_training, render_model_card

    directory = Path(directory)
    # replaces only a model folder this library wrote (its .hf_querygen marker); see hf_querygen._fs
    with atomic_output_dir(directory, MODEL_FOLDER_KIND, overwrite, what="model") as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        recorded = {**dict(metadata), TOKENIZER_FINGERPRINT_KEY: tokenizer_fingerprint(tokenizer)}
        (staging / TRAINING_METADATA_FILE).write_text(
            json.dumps(recorded, indent=2, default=str) + "\n", encoding="utf-8"
        )
        if log_history is not None:  # what a plot of convergence needs
            (staging / LOG_HISTORY_FILE).write_text(
                json.dumps(list(log_history), indent=1, default=str) + "\n", encoding="utf-8"
            )
        if log_file is not None and Path(log_file).is_file():
            shutil.copyfile(log_file, staging / TRAIN_LOG_FILE)
        render_model_card(model, **card_kwargs_from_training(staging)).save(staging / "README.md")
    return directory


def choose_decoding(
    model: PreTrainedModel,
    data: TaskData,
    base: Mapping[str, Any] | None = None,
    choice: DecodingChoice | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The decoding of ``choice.grid`` (:class:`~hf_querygen.tasks.base.DecodingChoice`; default: the
    task's grid; each entry on top of ``base``, and ``overrides`` on top of both: a budget's
    ``row_decoding``) chosen on VALIDATION, and one row per entry: ``{"decoding", "criterion", "by_split",
    "floor", "scores", "examples"}`` (``scores``: every score of each split, ``by_split``: the metric,
    ``examples``: how many of each split were decoded). Ties: the earlier, simpler entry.
    ``(base + overrides, [])`` without a grid or without the selection splits. A system brings its own
    choice through its recipe (``System.decoding_choice``; zhang2020/ctrsgen_copy, ding2018/warm_start),
    so that ``train --system`` decodes as its table row does.

    Each of ``task.selection_splits(data)`` is scored on its own with ``choice.metric`` (default
    ``task.primary_metric``; ``"rouge_goal"`` is :func:`with_rouge_goal`'s). With a
    ``task.selection_floor`` (k2q: the keyword query echoed) the criterion is the WORST split's gain over
    that floor: a decoding that wins on one source of queries but loses to the trivial output on another
    (k2q: QALD questions vs users' TREC topics) is not chosen over one that beats it on both; without a
    floor, the mean of the splits' scores. ``choice.sample``: each split is scored on at most that many
    of its examples, the same seeded draw for every entry (a 49M-parameter beam search over a whole
    validation split per entry costs more than the training budget allows); None: all of them."""
    task = data.task
    choice = choice or DecodingChoice()
    grid = choice.grid
    if grid is None:  # the task's grid: only the candidates this model's family can honour
        config = getattr(model, "config", None)
        family = task.family_of(config) if config is not None else None
        grid = [c for c in task.decoding_grid if family is None or task.honours(family, c)]
    grid = tuple(dict(candidate, **(overrides or {})) for candidate in grid)
    measure = _selection_measure(data, choice)
    if not grid or measure is None:
        return {**dict(base or {}), **dict(overrides or {})}, []
    # each candidate is measured as itself: a decoding saved earlier (config.task_decoding, the default
    # of Task.predict) must not fill in the keys a candidate leaves out
    config = getattr(model, "config", None)
    saved = getattr(config, "task_decoding", None)
    if config is not None:
        config.task_decoding = None
    measured: dict[str, dict[str, Any]] = {}  # overrides can make entries equal: each is decoded once
    rows = []
    try:
        with encoder_outputs_reused(model):  # every entry decodes the same sources
            for candidate in grid:
                decoding = {**dict(base or {}), **candidate}
                key = json.dumps(decoding, sort_keys=True, default=str)
                if key not in measured:
                    measured[key] = measure(model, decoding)
                rows.append(copy.deepcopy(measured[key]))
    finally:
        if config is not None:
            config.task_decoding = saved
    best = max(rows, key=lambda row: row["criterion"])  # max keeps the first of equal scores
    return dict(best["decoding"]), rows


class _SelectionMeasure:
    """(model, decoding) -> ``{"decoding", "criterion", "by_split", "floor", "scores", "examples"}`` on
    the task's selection splits (:func:`choose_decoding`'s rows), each on at most ``sample`` of its
    examples: each split scored on its own with ``metric``; the criterion is the worst split's gain over
    the task's floor, or without a floor the splits' mean."""

    def __init__(
        self, data: TaskData, names: tuple[str, ...], metric: str, sample: int | None = None
    ) -> None:
        self.data, self.names, self.metric = data, names, metric
        self.sources, self.references = {}, {}
        for name in names:
            sources, references = list(data.sources(name)), list(data.references(name))
            kept = _seeded_sample(len(sources), sample)
            self.sources[name] = [sources[i] for i in kept]
            self.references[name] = [references[i] for i in kept]
        floors = {name: data.task.selection_floor(self.sources[name]) for name in names}
        self.floor = {
            name: self.scores_of(name, outputs)[metric]
            for name, outputs in floors.items()
            if outputs is not None
        }

    def scores_of(self, name: str, outputs: Sequence[Any]) -> dict[str, float]:
        scores = with_rouge_goal(self.data.task.score(outputs, self.references[name], self.sources[name]))
        if self.metric not in scores:
            raise ValueError(
                f"decoding metric {self.metric!r} is not one of the task's scores {sorted(scores)}"
            )
        return scores

    def __call__(self, model: PreTrainedModel, decoding: dict[str, Any]) -> dict[str, Any]:
        task, tokenizer = self.data.task, self.data.tokenizer
        scores = {
            name: self.scores_of(name, task.predict(model, tokenizer, self.sources[name], **decoding))
            for name in self.names
        }
        by_split = {name: split_scores[self.metric] for name, split_scores in scores.items()}
        if self.floor:
            criterion = min(by_split[name] - self.floor[name] for name in self.names)
        else:
            criterion = sum(by_split.values()) / len(by_split)
        return {
            "decoding": decoding,
            "criterion": criterion,
            "by_split": by_split,
            "floor": self.floor,
            "scores": scores,
            "examples": {name: len(sources) for name, sources in self.sources.items()},
        }


def _seeded_sample(size: int, sample: int | None) -> list[int]:
    """``sample`` of ``range(size)`` in their order, the same for every call (all when None or more)."""
    import random

    if sample is None or sample >= size:
        return list(range(size))
    return sorted(random.Random(0).sample(range(size), sample))


def _selection_measure(data: TaskData, choice: DecodingChoice) -> _SelectionMeasure | None:
    """The measure of the task's selection splits present in ``data`` (None when there are none), with
    ``choice``'s metric (default: the task's primary one), each on at most ``choice.sample`` examples."""
    names = tuple(name for name in data.task.selection_splits(data) if name in data.splits)
    if not names:
        return None
    return _SelectionMeasure(data, names, choice.metric or data.task.primary_metric, choice.sample)


def data_fingerprint(data: TaskData) -> str:
    """sha1 over the prepared train and validation pairs (source, target) and the tokenizer's
    vocabulary: equal exactly when two trainings saw the same data (``train --system`` and
    ``reproduce --save-models`` both save it)."""
    import hashlib

    digest = hashlib.sha1()
    task = data.task
    for split in ("train", "validation"):
        if split not in data.splits:
            continue
        digest.update(f"[{split}]".encode())
        columns = data.splits[split][task.source_column], data.splits[split][task.reference_column]
        for source, target in zip(*columns, strict=True):
            digest.update(f"{source}\t{target}\n".encode())
    digest.update(json.dumps(sorted(data.tokenizer.get_vocab().items())).encode())
    return digest.hexdigest()


def _training_summary(trainer: Seq2SeqTrainer) -> dict[str, Any]:
    history = trainer.state.log_history
    evaluations = [log for log in history if "eval_loss" in log]
    losses = [log["loss"] for log in history if "loss" in log]
    best = min(evaluations, key=lambda log: log["eval_loss"]) if evaluations else {}
    selected_on = trainer.args.metric_for_best_model or "eval_loss"
    selected_on = selected_on if selected_on.startswith("eval_") else f"eval_{selected_on}"
    return {
        "global_steps": trainer.state.global_step,
        "epochs": trainer.state.epoch,
        "best_eval_loss": best.get("eval_loss"),
        # the checkpoint kept (load_best_model_at_end) is the best by this metric
        "selected_on": selected_on,
        "best_metric": trainer.state.best_metric,
        "best_checkpoint_step": _checkpoint_step(trainer.state.best_model_checkpoint),
        "evaluations": [
            {k: v for k, v in log.items() if k.startswith("eval_") or k in ("step", "epoch")}
            for log in evaluations
        ],
        "train_loss_curve": [
            [log["step"], log["loss"]] for log in history if "loss" in log and "step" in log
        ],
        "first_logged_train_loss": losses[0] if losses else None,
        "last_logged_train_loss": losses[-1] if losses else None,
    }


def _checkpoint_step(path: str | None) -> int | None:
    """``.../checkpoint-1200`` -> 1200."""
    if not path:
        return None
    tail = Path(path).name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


#: --quick for ``train``: a step budget and a validation subset (a smoke run, minutes on a CPU)
