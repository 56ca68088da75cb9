"""The question well-formedness classifier behind the ``wellformedness`` metric (helper of
:mod:`hf_querygen.metrics.wellformedness`, not a metric module itself).

Data: the query-wellformedness corpus (Faruqui & Das, EMNLP'18; ``load_corpus("wikianswers",
"wellformedness")``): 25,100 Paralex queries, each rated by five annotators; a query is well-formed when at
least four of five say so (rating >= 0.8, the paper's threshold, ``is_well_formed``). 38% of the training
queries are well-formed, so the majority class ("not well-formed") is right 62% of the time.

Model: the backbone (default the offline all-MiniLM-L6-v2, :func:`hf_querygen.pretrained.resolve_backbone`)
fine-tuned as a two-class ``AutoModelForSequenceClassification`` by the stock ``Trainer`` (AdamW, linear
warm-up and decay, cross-entropy on the binary label), the checkpoint with the best validation (``dev``)
accuracy kept; the test split is scored once, after the selection, and stored beside the majority class's
accuracy. A question is judged well-formed when ``p(well-formed) >= 0.5``.

Case and the ending: every text, in training and in scoring, goes through :func:`question_text`: lower-cased,
whitespace collapsed, trailing punctuation replaced by one `` ?``. Every corpus query ends with `` ?``, so the
corpus says nothing about the ending, and the K2Q models write lower-cased, tokenised questions
(``what is the capital of france ?``): the classifier judges the words, never the casing or the final mark.

The classifier is built once and cached (``<cache_dir()>/wellformedness/<key>``, ``key`` = SHA-256 of the
corpus files, the backbone's identity and the training settings: :func:`classifier_key`), never shipped:
``hf-querygen wellformedness-classifier`` (or :func:`build_classifier`) builds it; the training resumes from
its last checkpoint after an interruption. Deterministic for a given torch build and thread count.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_querygen._fs import atomic_output_dir, remove_tree
from hf_querygen.corpora import load_corpus, resolve_data_dir
from hf_querygen.corpora.wikianswers import WELL_FORMED_RATING, WELLFORMEDNESS_DIR
from hf_querygen.errors import InvalidInputError, ModelFolderError
from hf_querygen.pretrained import DEFAULT_BACKBONE, Backbone, cache_dir, file_sha256, resolve_backbone
from hf_querygen.validation import check_string_list

if TYPE_CHECKING:
    from transformers import Trainer, TrainingArguments

#: the marker kind of a classifier folder (hf_querygen._fs)
CLASSIFIER_KIND = "wellformedness-classifier"
#: what the folder holds beside the weights: provenance and the measured accuracies
INFO_FILE = "hf_querygen_wellformedness.json"
#: bump when the training or the text normalisation changes (part of the cache key)
FORMAT_VERSION = 1
CORPUS_FILES = ("train.tsv", "dev.tsv", "test.tsv")
THRESHOLD = 0.5
_ENDING = "?.!,;: \t"


@dataclass(frozen=True)
class ClassifierSettings:
    """How the classifier is trained. The defaults fit a shared 2-core CPU (half an epoch, about 35 min at one
    loaded thread): the dev accuracy is measured 4 times on the first 1,000 dev queries, the best checkpoint
    kept; the test split is scored whole, once."""

    epochs: float = 0.5
    learning_rate: float = 8e-5
    batch_size: int = 32
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    #: validation (dev) accuracy is measured this many times per epoch; the best checkpoint is kept
    evaluations_per_epoch: int = 8
    max_length: int = 48
    seed: int = 0
    #: cap the training / validation examples (None = all): selection on the first max_validation dev queries
    max_train: int | None = None
    max_validation: int | None = 1000


def question_text(text: str) -> str:
    """What the classifier reads: lower-cased, whitespace collapsed, the ending punctuation replaced by
    `` ?`` (the corpus' form: ``"what is the capital of france ?"``)."""
    if not isinstance(text, str):
        raise InvalidInputError(f"wellformedness: expected a question string, got {type(text).__name__}")
    words = " ".join(text.lower().split()).rstrip(_ENDING)
    return f"{words} ?" if words else "?"


def corpus_fingerprint(data_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """SHA-256 of each file of the corpus (what the classifier is trained, selected and tested on)."""
    folder = resolve_data_dir(data_dir) / WELLFORMEDNESS_DIR
    return {name: file_sha256(folder / name) for name in CORPUS_FILES if (folder / name).is_file()}


def backbone_fingerprint(backbone: Backbone) -> dict[str, Any]:
    """The backbone's identity: its pinned id and revision (verified files), else the SHA-256 of every
    file of its folder (a local checkpoint)."""
    if backbone.source == "pypi":
        return backbone.describe()
    files = sorted(p for p in backbone.path.rglob("*") if p.is_file() and not p.name.startswith("."))
    return {
        **backbone.describe(),
        "files": {p.relative_to(backbone.path).as_posix(): file_sha256(p) for p in files},
    }


def classifier_key(
    backbone: Backbone, settings: ClassifierSettings, data_dir: str | os.PathLike | None = None
) -> str:
    """The cache key: SHA-256 (first 16 hex digits) of the corpus files, the backbone and the settings."""
    payload = {
        "format": FORMAT_VERSION,
        "corpus": corpus_fingerprint(data_dir),
        "backbone": backbone_fingerprint(backbone),
        "settings": asdict(settings),
        "threshold": WELL_FORMED_RATING,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def classifier_dir(
    backbone: str | os.PathLike | Backbone = DEFAULT_BACKBONE,
    settings: ClassifierSettings | None = None,
    data_dir: str | os.PathLike | None = None,
    cache: str | os.PathLike | None = None,
) -> Path:
    """Where the classifier of these inputs lives (built or not)."""
    resolved = backbone if isinstance(backbone, Backbone) else resolve_backbone(backbone)
    key = classifier_key(resolved, settings or ClassifierSettings(), data_dir)
    return Path(cache) if cache is not None else cache_dir() / "wellformedness" / key


def _splits(data_dir: str | os.PathLike | None, settings: ClassifierSettings) -> dict[str, Any]:
    corpus = load_corpus("wikianswers", "wellformedness", data_dir=data_dir)
    caps = {"train": settings.max_train, "validation": settings.max_validation, "test": None}
    out = {}
    for split, cap in caps.items():
        ds = corpus[split]
        if cap is not None:
            ds = ds.select(range(min(cap, len(ds))))
        out[split] = ds
    return out


def _encode(dataset: Any, tokenizer: Any, max_length: int) -> Any:
    texts = [question_text(q) for q in dataset["query"]]
    encoded = tokenizer(texts, truncation=True, max_length=max_length)
    import datasets

    return datasets.Dataset.from_dict(
        {**encoded, "labels": [int(x) for x in dataset["is_well_formed"]]}
    ).with_format(None)


def _accuracy(eval_prediction: Any) -> dict[str, float]:
    import numpy as np

    logits, labels = eval_prediction
    return {"accuracy": float((np.asarray(logits).argmax(-1) == np.asarray(labels)).mean())}


def build_classifier(
    backbone: str | os.PathLike | Backbone = DEFAULT_BACKBONE,
    data_dir: str | os.PathLike | None = None,
    settings: ClassifierSettings | None = None,
    output_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> Path:
    """Train, select on validation and test the classifier; publish it in the cache (or ``output_dir``).

    An existing classifier of the same key is returned as it is (``overwrite`` builds it again). The
    Trainer's checkpoints live in ``<folder>.work`` until the folder is published, so an interrupted
    build resumes. Returns the folder (``AutoModelForSequenceClassification``, tokenizer, :data:`INFO_FILE`).
    """
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        set_seed,
    )

    settings = settings or ClassifierSettings()
    resolved = backbone if isinstance(backbone, Backbone) else resolve_backbone(backbone)
    target = classifier_dir(resolved, settings, data_dir, output_dir)
    if (target / INFO_FILE).is_file() and not overwrite:
        return target
    work = target.with_name(target.name + ".work")
    set_seed(settings.seed)
    splits = _splits(data_dir, settings)
    tokenizer = AutoTokenizer.from_pretrained(str(resolved.path), local_files_only=True)
    encoded = {name: _encode(ds, tokenizer, settings.max_length) for name, ds in splits.items()}
    model = AutoModelForSequenceClassification.from_pretrained(
        str(resolved.path),
        num_labels=2,
        id2label={0: "not_well_formed", 1: "well_formed"},
        label2id={"not_well_formed": 0, "well_formed": 1},
        local_files_only=True,
    )
    args = _training_arguments(settings, work, len(encoded["train"]), progress)
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=encoded["train"],
        eval_dataset=encoded["validation"],
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=_accuracy,
    )
    resume = work.is_dir() and any(p.name.startswith("checkpoint-") for p in work.iterdir())
    trainer.train(resume_from_checkpoint=True if resume else None)
    validation = trainer.evaluate(encoded["validation"])["eval_accuracy"]
    test = trainer.evaluate(encoded["test"], metric_key_prefix="test")["test_accuracy"]
    info = _classifier_info(data_dir, resolved, settings, splits, trainer, validation, test)
    with atomic_output_dir(target, CLASSIFIER_KIND, overwrite=True, what="wellformedness classifier") as out:
        trainer.model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        (out / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    remove_tree(work)
    return target


def _training_arguments(
    settings: ClassifierSettings, work: Path, n_train: int, progress: bool
) -> TrainingArguments:
    """The Trainer's arguments: ``evaluations_per_epoch`` evaluations (and checkpoints) per epoch in
    ``work``, the best by validation accuracy restored at the end."""
    import torch
    from transformers import TrainingArguments

    steps_per_epoch = -(-n_train // settings.batch_size)
    eval_steps = max(1, steps_per_epoch // settings.evaluations_per_epoch)
    return TrainingArguments(
        output_dir=str(work),
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=64,
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        warmup_steps=int(settings.warmup_ratio * steps_per_epoch * settings.epochs),
        num_train_epochs=settings.epochs,
        eval_strategy="steps",
        eval_steps=eval_steps,
        save_strategy="steps",
        save_steps=eval_steps,
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model="accuracy",
        greater_is_better=True,
        seed=settings.seed,
        data_seed=settings.seed,
        report_to=[],
        logging_steps=max(1, eval_steps // 5),
        disable_tqdm=not progress,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        save_only_model=False,
    )


def _classifier_info(
    data_dir: str | os.PathLike | None,
    resolved: Backbone,
    settings: ClassifierSettings,
    splits: Mapping[str, Any],
    trainer: Trainer,
    validation: float,
    test: float,
) -> dict[str, Any]:
    """The :data:`INFO_FILE` of a built classifier: corpus, backbone, settings, sizes and accuracies
    (with the majority class of TRAIN's beside them)."""
    train_labels = list(splits["train"]["is_well_formed"])
    majority = sum(train_labels) * 2 >= len(train_labels)  # the majority class of TRAIN
    return {
        "corpus": "wikianswers/wellformedness (Faruqui & Das 2018)",
        "well_formed_rating": WELL_FORMED_RATING,
        "corpus_files": corpus_fingerprint(data_dir),
        "backbone": resolved.describe(),
        "settings": asdict(settings),
        "format_version": FORMAT_VERSION,
        "threshold": THRESHOLD,
        "text": "question_text: lower-cased, whitespace collapsed, ending punctuation -> ' ?'",
        "sizes": {name: len(ds) for name, ds in splits.items()},
        "best_checkpoint": trainer.state.best_model_checkpoint
        and Path(trainer.state.best_model_checkpoint).name,
        "validation_accuracy": float(validation),
        "test_accuracy": float(test),
        "majority_class": "well_formed" if majority else "not_well_formed",
        "majority_validation_accuracy": _share(splits["validation"]["is_well_formed"], majority),
        "majority_test_accuracy": _share(splits["test"]["is_well_formed"], majority),
    }


def _share(labels: Sequence[bool], value: bool) -> float:
    labels = list(labels)
    return sum(1 for x in labels if bool(x) == value) / len(labels)


def default_classifier(data_dir: str | os.PathLike | None = None) -> Path:
    """The cached classifier of the default backbone and settings; a clear error with the command that
    builds it when it is not there (building takes 3-35 minutes on one CPU thread, by the machine)."""
    folder = classifier_dir(DEFAULT_BACKBONE, ClassifierSettings(), data_dir)
    if not (folder / INFO_FILE).is_file():
        raise ModelFolderError(
            f"wellformedness: the classifier is not built yet ({folder}); build it once with "
            "`hf-querygen wellformedness-classifier` (3-35 minutes on one CPU thread), or pass "
            "classifier=<a folder written by build_classifier>"
        )
    return folder


class WellformednessClassifier:
    """A built classifier folder: :meth:`probabilities` of well-formedness for questions."""

    def __init__(self, folder: str | os.PathLike, device: str | None = None):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.folder = Path(folder)
        info_path = self.folder / INFO_FILE
        if not info_path.is_file():
            raise ModelFolderError(
                f"wellformedness: {self.folder} is not a classifier folder (no {INFO_FILE}); build one with "
                "`hf-querygen wellformedness-classifier`"
            )
        self.info: dict[str, Any] = json.loads(info_path.read_text(encoding="utf-8"))
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            str(self.folder), local_files_only=True
        )
        if device is None:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model.to(device).eval()
        self.device = device
        self.max_length = int(self.info.get("settings", {}).get("max_length", 48))
        self.threshold = float(self.info.get("threshold", THRESHOLD))
        self._seen: dict[str, float] = {}

    def probabilities(self, questions: Sequence[str], batch_size: int = 64) -> list[float]:
        """``p(well-formed)`` of each question (after :func:`question_text`), in input order. Each distinct
        text is classified once per loaded classifier (tables score the same fallback outputs many times)."""
        import torch

        check_string_list("wellformedness", "predictions", questions)
        texts = [question_text(q) for q in questions]
        new = sorted({t for t in texts if t not in self._seen}, key=lambda t: (len(t), t))  # little padding
        with torch.no_grad():
            for start in range(0, len(new), batch_size):
                chunk = new[start : start + batch_size]
                batch = self.tokenizer(
                    chunk, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
                ).to(self.device)
                probs = torch.softmax(self.model(**batch).logits.float(), dim=-1)[:, 1]
                self._seen.update(zip(chunk, (float(p) for p in probs.tolist()), strict=True))
        return [self._seen[t] for t in texts]


_LOADED: dict[tuple[str, str | None], WellformednessClassifier] = {}


def load_classifier(folder: str | os.PathLike, device: str | None = None) -> WellformednessClassifier:
    """A classifier folder, loaded once per process."""
    key = (str(Path(folder).resolve()), device)
    if key not in _LOADED:
        _LOADED[key] = WellformednessClassifier(folder, device)
    return _LOADED[key]


def wellformedness_scores(
    predictions: Sequence[str], classifier: str | os.PathLike | WellformednessClassifier | None = None
) -> dict[str, Any]:
    """``wellformed``: share of predictions judged well-formed (``p >= threshold``);
    ``wellformed_probability``: mean ``p(well-formed)``; ``n``. ``classifier``: a folder or a loaded
    classifier (default: the cached one of the default backbone, :func:`default_classifier`)."""
    check_string_list("wellformedness", "predictions", predictions)
    if not predictions:
        raise InvalidInputError("wellformedness: no predictions to score (predictions=[])")
    if not isinstance(classifier, WellformednessClassifier):
        classifier = load_classifier(classifier if classifier is not None else default_classifier())
    probs = classifier.probabilities(list(predictions))
    return {
        "wellformed": sum(p >= classifier.threshold for p in probs) / len(probs),
        "wellformed_probability": sum(probs) / len(probs),
        "n": len(probs),
    }


def classifier_report(folder: str | os.PathLike) -> Mapping[str, Any]:
    """The stored provenance and accuracies of a classifier folder (without loading the weights)."""
    path = Path(folder) / INFO_FILE
    if not path.is_file():
        raise ModelFolderError(f"wellformedness: {folder} is not a classifier folder (no {INFO_FILE})")
    return json.loads(path.read_text(encoding="utf-8"))
