"""Model cards and Hub pushes (SetFit / SpanMarker style).

``render_model_card`` fills ``model_cards/hf_querygen_model_card.md`` (shipped as package data through
the ``hf_querygen/model_cards`` link) from a model's config and the training metadata
(:func:`card_kwargs_from_training` reads what
``hf-querygen train`` wrote beside the model); ``push_to_hub`` saves model, tokenizer and card into
one folder and uploads it in a single commit with ``HfApi.upload_folder`` (the stock
``PreTrainedModel.push_to_hub`` would replace our card with a generic one).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData

from ._fs import MODEL_EVALUATIONS_FILE, atomic_write_text
from ._registration import register_all
from .corpora import get_corpus_spec
from .errors import ModelFolderError
from .specs import MODELS, auto_class_name, spec_for_config
from .tasks.base import get_task
from .utils import TRAINING_METADATA_FILE

TEMPLATE_PATH = Path(__file__).resolve().parent / "model_cards" / "hf_querygen_model_card.md"


class _CardPapers(Mapping):
    """model_type -> (paper title, citation, bibtex) for the card, read from each model package's
    :class:`~hf_querygen.specs.ModelSpec` ``paper`` (kept as a mapping for callers of ``PAPERS``)."""

    def _papers(self) -> dict[str, tuple[str, str, str]]:
        return {spec.model_type: spec.paper for _, spec in MODELS.items() if spec.paper is not None}

    def __getitem__(self, model_type: str) -> tuple[str, str, str]:
        return self._papers()[model_type]

    def __iter__(self):
        return iter(self._papers())

    def __len__(self) -> int:
        return len(self._papers())


PAPERS: Mapping[str, tuple[str, str, str]] = _CardPapers()

_UNKNOWN_PAPER = ("a model implemented in hf-querygen", "-", "")


def _eval_results(
    metrics: Mapping[str, float], task: str, dataset: str, split: str, config: str | None = None
) -> list[EvalResult]:
    return [
        EvalResult(
            task_type=task,
            dataset_type=dataset,
            dataset_name=dataset,
            dataset_config=config,
            dataset_split=split,
            metric_type=name,
            metric_value=float(value),
        )
        for name, value in metrics.items()
    ]


def _metrics_table(metrics: Mapping[str, float], title: str) -> str:
    rows = "\n".join(f"| {name} | {float(value):.4f} |" for name, value in metrics.items())
    return f"{title}:\n\n| metric | value |\n|---|---|\n{rows}"


def _plain_transformers_usage(
    config: Any, auto_class: str, pipeline_task: str, repo: str, example: Any
) -> tuple[str, str]:
    """(sentence, code) of the card's "plain transformers" usage. A model of the library's own classes
    loads through the code saved beside it (``trust_remote_code``); a model of transformers' own classes
    (a warm-started BERT2BERT, a BERT token classifier) needs no code: transformers' generate or
    token-classification pipeline reads it, without the library's task decoding (kept keywords, segments)."""
    if spec_for_config(config) is not None:
        return (
            "With plain `transformers`: the repository carries the model's code (`configuration_*.py`, "
            "`modeling_*.py`, `pipeline_*.py`, generated from hf-querygen's source); read it, then allow it "
            "with `trust_remote_code=True`:",
            "from transformers import pipeline\n\n"
            f'predict = pipeline("{pipeline_task}", model="{repo}", trust_remote_code=True)\n'
            f"print(predict({example!r}))",
        )
    intro = (
        f"With plain `transformers`: the weights are a standard `{auto_class}` model, no remote code. "
        "What hf-querygen adds on top (its saved decoding, e.g. keeping every keyword; its task outputs) "
        "needs the library:"
    )
    if isinstance(example, Mapping):  # q2id: the query and its relevant documents, one [SEP]-joined source
        example = " [SEP] ".join([example["query"], *map(str, example.get("relevant_documents", ()))])
    if auto_class == "AutoModelForTokenClassification":
        code = (
            "from transformers import pipeline\n\n"
            f'tag = pipeline("token-classification", model="{repo}")\n'
            f"print(tag({example!r}))  # per word piece: does a segment break follow it"
        )
        return intro, code
    code = (
        f"from transformers import {auto_class}, AutoTokenizer\n\n"
        f'tokenizer = AutoTokenizer.from_pretrained("{repo}")\n'
        f'model = {auto_class}.from_pretrained("{repo}")\n'
        f'inputs = tokenizer([{example!r}], return_tensors="pt")\n'
        "outputs = model.generate(**inputs, num_beams=4, max_new_tokens=32)\n"
        "print(tokenizer.batch_decode(outputs, skip_special_tokens=True))"
    )
    return intro, code


def render_model_card(
    model: Any,
    *,
    model_name: str | None = None,
    repo_id: str | None = None,
    task: str = "text2text-generation",
    dataset: str | None = None,
    dataset_split: str = "test",
    eval_metrics: Mapping[str, float] | None = None,
    hyperparameters: Mapping[str, Any] | None = None,
    training_data: str | None = None,
    limitations: str | None = None,
    license: str = "apache-2.0",
    language: str | list[str] = "en",
    pipeline_task: str = "query-reformulation",
    evaluations: Sequence[Mapping[str, Any]] = (),
    hub_datasets: Sequence[str] | None = None,
    example_input: Any = None,
) -> ModelCard:
    """A filled model card for ``model`` (a PreTrainedModel of this package); ``task`` is the Hub
    ``pipeline_tag``, ``pipeline_task`` the ``transformers.pipeline`` task shown in the usage code.

    ``eval_metrics`` are scores on ``dataset_split`` of ``dataset`` (the validation scores ``train``
    recorded); ``evaluations`` more results, each ``{"corpus", "config", "split", "metrics"}`` (what
    ``hf-querygen evaluate`` recorded, :func:`recorded_evaluations`). All of them go to the card's
    ``model-index`` and its evaluation table. ``hub_datasets``: the training data's Hub dataset ids (the
    card's ``datasets:``); ``license``: the training data's (:func:`corpus_card_kwargs`).
    ``example_input``: what the usage code passes (default: the pipeline task's
    :attr:`~hf_querygen.tasks.base.Task.example_input`)."""
    config = model.config
    model_type = config.model_type
    paper_title, citation, bibtex = PAPERS.get(model_type, _UNKNOWN_PAPER)
    model_name = model_name or f"hf-querygen {model_type}"
    eval_metrics = dict(eval_metrics or {})
    results = _eval_results(eval_metrics, task, dataset, dataset_split) if eval_metrics and dataset else []
    for evaluation in evaluations:
        results += _eval_results(
            evaluation["metrics"], task, evaluation["corpus"], evaluation["split"], evaluation.get("config")
        )
    card_data = ModelCardData(
        model_name=model_name,
        language=language,
        license=license,
        library_name="transformers",
        pipeline_tag=task,
        tags=["hf-querygen", model_type, "query-reformulation"],
        # Hub dataset ids only (``hub_datasets``); a corpus name that is no Hub id stays in the card's text
        datasets=list(hub_datasets) if hub_datasets else None,
        metrics=sorted({result.metric_type for result in results} | set(eval_metrics)) or None,
        eval_results=results or None,
    )
    table = _evaluation_tables(eval_metrics, dataset, dataset_split, evaluations)
    repo = repo_id or "REPO_ID"
    auto_class = auto_class_name(config)
    example = example_input or get_task(pipeline_task).example_input
    usage = _usage_code(auto_class, pipeline_task, repo, example)
    plain_intro, plain_code = _plain_transformers_usage(config, auto_class, pipeline_task, repo, example)
    return ModelCard.from_template(
        card_data,
        template_path=str(TEMPLATE_PATH),
        model_name=model_name,
        auto_class=auto_class,
        model_summary=f"A {model_type} model for {task}.",
        paper_title=paper_title,
        paper_citation=citation,
        bibtex=bibtex,
        model_type=model_type,
        architecture=", ".join(getattr(config, "architectures", None) or [type(model).__name__]),
        task=task,
        num_parameters=f"{sum(p.numel() for p in model.parameters()):,}",
        vocab_size=getattr(config, "vocab_size", "-"),
        output_vocab_size=getattr(config, "output_vocab_size", getattr(config, "vocab_size", "-")),
        usage_code=usage,
        plain_usage_intro=plain_intro,
        plain_usage_code=plain_code,
        training_data=training_data or (f"`{dataset}`" if dataset else "Not recorded."),
        hyperparameters=dict(hyperparameters or {}),
        eval_results_table=table,
        limitations=limitations or _limitations(),
    )


def _limitations(backbone: str | None = None, inputs: str | None = None) -> str:
    """The card's limitations: where the model's vocabulary comes from (a warm-started model's backbone,
    else a word-level vocabulary of its training data), then what the task needs at inference."""
    if backbone:
        text = f"Warm-started from `{backbone}` (its word pieces) and fine-tuned on small public corpora"
    else:
        text = "Word-level vocabulary trained on small public corpora"
    text += "; see the hf-querygen README for the measured quality beside the paper's numbers."
    return f"{inputs}\n\n{text}" if inputs else text


def _evaluation_tables(
    eval_metrics: Mapping[str, float],
    dataset: str | None,
    dataset_split: str,
    evaluations: Sequence[Mapping[str, Any]],
) -> str:
    """The card's evaluation section: one metrics table per split scored (training's, then each
    recorded evaluation's)."""
    tables = []
    if eval_metrics:
        tables.append(_metrics_table(eval_metrics, f"Split `{dataset_split}` of `{dataset}`"))
    for evaluation in evaluations:
        where = f"`{evaluation['corpus']}`"
        if evaluation.get("config"):
            where += f" (config `{evaluation['config']}`)"
        tables.append(_metrics_table(evaluation["metrics"], f"Split `{evaluation['split']}` of {where}"))
    return "\n\n".join(tables)


def _usage_code(auto_class: str, pipeline_task: str, repo: str, example: Any) -> str:
    """The card's usage snippet: the model and tokenizer by their Auto classes, and the pipeline."""
    return (
        f'model = {auto_class}.from_pretrained("{repo}")\n'
        f'tokenizer = AutoTokenizer.from_pretrained("{repo}")\n'
        f'predict = pipeline("{pipeline_task}", model="{repo}")\n'
        f"print(predict({example!r}))"
    )


#: keys of ``hf_querygen_training.json`` shown as training hyper-parameters on the card
_TRAINING_KEYS = (
    "preset",
    "corpus",
    "config",
    "seed",
    "global_steps",
    "train_examples",
    "validation_examples",
    "vocab_size",
    "output_vocab_size",
    "max_source_length",
    "max_target_length",
    "copy",
)


def _recipe_hyperparameters(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What a recipe-trained folder (``train --system``) records beyond :data:`_TRAINING_KEYS`: the
    recipe, the backbone, its ``train_preset`` options (a two-stage row's first stage, a frozen encoder, the
    checkpoint's selection), the decoding saved with the model (chosen on validation when
    ``decoding_selection`` is there) and the training time."""
    rows: dict[str, Any] = {
        "system": metadata.get("system"),
        "budget": metadata.get("budget"),
        "backbone": _backbone(metadata),
        "training options": _compact(metadata.get("train_options")),
    }
    if metadata.get("decoding"):
        chosen = " (chosen on validation)" if metadata.get("decoding_selection") else ""
        rows["decoding" + chosen] = _compact(metadata["decoding"])
    if metadata.get("seconds") is not None:
        threads = metadata.get("torch_threads")
        rows["training seconds"] = f"{metadata['seconds']}" + (f" ({threads} threads)" if threads else "")
    return {name: value for name, value in rows.items() if value}


def _backbone(metadata: Mapping[str, Any]) -> str | None:
    """The backbone a folder was warm-started from (its prepare options), or None."""
    return (metadata.get("prepare_options") or {}).get("backbone")


def _compact(value: Any) -> str | None:
    """A mapping as one line of JSON for a table cell (None when empty)."""
    return json.dumps(dict(value), sort_keys=True) if value else None


def card_kwargs_from_training(model_dir: str | Path) -> dict[str, Any]:
    """``render_model_card`` keyword arguments from the metadata ``hf-querygen train`` saved in
    ``model_dir``: corpus, validation scores and the training settings."""
    path = Path(model_dir) / TRAINING_METADATA_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: the folder was not written by `hf-querygen train`")
    metadata = json.loads(path.read_text(encoding="utf-8"))
    validation = {
        key.removeprefix("eval_"): value
        for key, value in metadata.get("validation", {}).items()
        if key.startswith("eval_")
        and not key.endswith(("_runtime", "_per_second"))
        and not key.startswith("eval_n_")
    }
    corpus = metadata.get("corpus")
    data_kwargs = corpus_card_kwargs(corpus, metadata.get("config"))
    task_kwargs: dict[str, Any] = {}
    inputs = None
    if metadata.get("task"):
        from transformers import AutoConfig

        register_all()
        task = get_task(metadata["task"])
        config = AutoConfig.from_pretrained(model_dir)
        task_kwargs = {"task": task.card_pipeline_tag(config), "pipeline_task": task.pipeline_task}
        inputs = task.card_inputs(config, metadata)
    where = data_kwargs.pop("where")
    if metadata.get("system"):  # a table row's recipe: its data is the paper's fold, not one corpus
        where = (
            f"Built by the recipe `{metadata['system']}` (`hf-querygen train --system {metadata['system']}`: "
            f"the `{metadata.get('reproduction')}` reproduction's data, budget `{metadata.get('budget')}`)."
        )
        synthetic = metadata.get("synthetic_set") or {}
        if synthetic.get("name"):
            where += f" Synthetic set: {synthetic['name']}, {synthetic.get('pairs')} pairs."
    training_data = (
        f"`{corpus}` (config `{metadata.get('config')}`), {metadata.get('train_examples')} training pairs: "
        f"`{metadata.get('source_column')}` -> `{metadata.get('target_column')}`. " + where
    )
    hyperparameters = {key: metadata[key] for key in _TRAINING_KEYS if key in metadata}
    return {
        **task_kwargs,
        **data_kwargs,
        "limitations": _limitations(_backbone(metadata), inputs),
        "dataset": corpus,
        "dataset_split": "validation",
        "eval_metrics": validation,
        "hyperparameters": {**_recipe_hyperparameters(metadata), **hyperparameters},
        "training_data": training_data,
    }


def corpus_card_kwargs(corpus: str | None, config: str | None) -> dict[str, Any]:
    """What a model card says of its training corpus: ``license`` (the data's, from the corpus's
    registration), ``hub_datasets`` (its Hub id, or none) and ``where`` (a sentence: the Hub dataset, or
    that it is not on the Hub and the command that builds it)."""
    if not corpus:
        return {"where": "The training corpus was not recorded."}
    try:
        spec = get_corpus_spec(corpus)
    except (KeyError, ValueError):  # a plugin's or an older folder's corpus this installation lacks
        return {"where": f"Corpus `{corpus}` is not one of this installation's corpora."}
    license_note = f" License: {spec.license_details}" if spec.license_details else ""
    if spec.hub_dataset_id:
        where = (
            f"On the Hub: [`{spec.hub_dataset_id}`](https://huggingface.co/datasets/{spec.hub_dataset_id})."
        )
    else:
        where = (
            f"The corpus is not on the Hub: `hf-querygen corpus build {corpus}` builds it from the raw "
            "upstream files (see the hf-querygen README)."
        )
    return {
        "license": spec.license,
        "hub_datasets": [spec.hub_dataset_id] if spec.hub_dataset_id else [],
        "where": where + license_note,
    }


def save_for_hub(model: Any, save_directory: str | Path, tokenizer: Any = None, **card_kwargs: Any) -> Path:
    """``save_pretrained`` of model (+ tokenizer) and a rendered ``README.md`` in one folder."""
    save_directory = Path(save_directory)
    model.save_pretrained(save_directory)
    if tokenizer is not None:
        tokenizer.save_pretrained(save_directory)
    render_model_card(model, **card_kwargs).save(save_directory / "README.md")
    return save_directory


def push_to_hub(
    model: Any,
    repo_id: str,
    tokenizer: Any = None,
    *,
    private: bool | None = None,
    token: str | None = None,
    commit_message: str = "Upload hf-querygen model",
    **card_kwargs: Any,
) -> str:
    """Create ``repo_id`` if needed and upload model, tokenizer and model card in one commit.

    Returns the commit URL."""
    api = HfApi(library_name="hf-querygen", token=token)
    repo_id = api.create_repo(repo_id, private=private, exist_ok=True).repo_id
    with tempfile.TemporaryDirectory() as tmp:
        save_for_hub(model, tmp, tokenizer=tokenizer, repo_id=repo_id, **card_kwargs)
        info = api.upload_folder(repo_id=repo_id, folder_path=tmp, commit_message=commit_message)
    return str(info.commit_url)


# ------------------------------------------------------------------------------------- evaluations
#: ``hf-querygen evaluate`` records its scores here, beside the model (the export puts them on the card);
#: the library's own file in a model folder (hf_querygen._fs.COMPANION_FILES), never a foreign one
EVALUATIONS_FILE = MODEL_EVALUATIONS_FILE


def read_evaluations(model_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``model_dir``'s :data:`EVALUATIONS_FILE` (``[]`` without one); a file that is not
    a JSON list of objects is a :class:`~hf_querygen.errors.ModelFolderError` naming it."""
    path = Path(model_dir) / EVALUATIONS_FILE
    if not path.is_file():
        return []
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ModelFolderError(
            f"{path} is damaged ({type(err).__name__}: {err}); move it away to record evaluations afresh"
        ) from err
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ModelFolderError(
            f"{path} is damaged: expected a JSON list of evaluation records, got {type(records).__name__}; "
            "move it away to record evaluations afresh"
        )
    return records


def record_evaluation(model_dir: str | Path, result: Mapping[str, Any]) -> Path:
    """Add one ``hf-querygen evaluate`` result (corpus, config, split, examples, limit, metrics) to the
    model folder's :data:`EVALUATIONS_FILE`; the same corpus/config/split replaces the older entry.
    Written to a temporary file and renamed, so a reader never sees half a file."""
    path = Path(model_dir) / EVALUATIONS_FILE
    key = (result.get("corpus"), result.get("config"), result.get("split"))
    records = [
        r for r in read_evaluations(model_dir) if (r.get("corpus"), r.get("config"), r.get("split")) != key
    ]
    records.append(
        {name: result.get(name) for name in ("corpus", "config", "split", "examples", "limit")}
        | {"metrics": {k: float(v) for k, v in result["metrics"].items() if _is_number(v)}}
    )
    atomic_write_text(path, json.dumps(records, indent=2) + "\n")
    return path


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def recorded_evaluations(model_dir: str | Path, split: str = "test") -> list[dict[str, Any]]:
    """The evaluations of ``split`` recorded in ``model_dir`` that scored the whole split (no ``--limit``)."""
    records = read_evaluations(model_dir)
    return [r for r in records if r.get("split") == split and not r.get("limit") and r.get("metrics")]
