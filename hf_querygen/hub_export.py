"""Hub repository folders: ``hf-querygen export`` of a trained model or a dataset folder, their checks
(the card's ``model-index`` through huggingface_hub's metadata tools, the files a repository needs) and
one-commit uploads (:func:`push_folder`). The cards themselves are :mod:`hf_querygen.hub`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, ModelCard

from ._fs import MARKER_FILE, atomic_output_dir, check_output_dir
from .corpora import build_dataset_folder
from .corpora._base import dataset_folder, get_corpus_spec
from .errors import HubPushError, InvalidInputError, ModelFolderError
from .hub import EVALUATIONS_FILE, card_kwargs_from_training, recorded_evaluations, render_model_card
from .model_folder import check_remote_code, load_trained
from .specs import MODELS
from .utils import TRAINING_METADATA_FILE

# ------------------------------------------------------------------------------------------ export
#: the .hf_querygen marker kind of an export folder (model or dataset repository)
EXPORT_KIND = "export"
#: files every exported model repository has (beside the code files its config names)
MODEL_REPO_FILES = (
    "README.md",
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)


def export_model(
    model_dir: str | Path, out_dir: str | Path, *, repo_id: str | None = None, overwrite: bool = False
) -> Path:
    """Write the Hub repository folder of a trained model: weights, config (``auto_map``,
    ``custom_pipelines``), generation config, tokenizer, the model's self-contained code, the training
    metadata and a model card whose ``model-index`` holds the validation scores from training and the
    test-split scores ``hf-querygen evaluate`` recorded. Checked with :func:`check_model_repo`."""
    model_dir, out = Path(model_dir), Path(out_dir)
    check_output_dir(out, EXPORT_KIND, overwrite, what="export", protected=[model_dir])  # before loading
    model, tokenizer, metadata = load_trained(model_dir)
    evaluations = recorded_evaluations(model_dir)
    # built in a sibling and renamed into place: only an export folder hf-querygen wrote is replaced,
    # never a user's folder nor one holding the source (hf_querygen._fs)
    with atomic_output_dir(out, EXPORT_KIND, overwrite, what="export", protected=[model_dir]) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        _drop_local_only_keys(staging / "tokenizer_config.json")
        card_kwargs: dict[str, Any] = card_kwargs_from_training(model_dir) if metadata else {}
        if metadata:
            (staging / TRAINING_METADATA_FILE).write_text(
                json.dumps(metadata, indent=2) + "\n", encoding="utf-8"
            )
        if (model_dir / EVALUATIONS_FILE).is_file():
            (staging / EVALUATIONS_FILE).write_bytes((model_dir / EVALUATIONS_FILE).read_bytes())
        card = render_model_card(
            model,
            model_name=repo_id.split("/")[-1] if repo_id else None,
            repo_id=repo_id,
            evaluations=evaluations,
            **card_kwargs,
        )
        card.save(staging / "README.md")
        problems = check_model_repo(staging)
        if problems:
            raise ModelFolderError(f"export of {model_dir} to {out} is incomplete: " + "; ".join(problems))
    return out


#: keys transformers writes into ``tokenizer_config.json`` about where this machine loaded the tokenizer
#: from: meaningless (and misleading: ``local_files_only``) in a Hub repository
LOCAL_ONLY_TOKENIZER_KEYS = ("is_local", "local_files_only")


def _drop_local_only_keys(path: Path) -> None:
    config = json.loads(path.read_text(encoding="utf-8"))
    kept = {key: value for key, value in config.items() if key not in LOCAL_ONLY_TOKENIZER_KEYS}
    if kept != config:
        path.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def validate_card_metadata(card_path: str | Path) -> list[str]:
    """What is wrong with a card's metadata, as far as ``huggingface_hub`` can tell offline: the YAML
    header parses into ``ModelCardData``, its ``model-index`` converts to ``EvalResult`` objects and back
    unchanged (the Hub's own conversion), each result has a metric value and a dataset, and the fields the
    Hub indexes (license, library_name, pipeline_tag) are set."""
    from huggingface_hub.repocard_data import eval_results_to_model_index, model_index_to_eval_results

    problems = []
    try:
        card = ModelCard.load(card_path)
    except Exception as err:  # huggingface_hub raises ValueError / yaml errors for a broken header
        return [f"{card_path}: the card does not load ({err})"]
    data = card.data.to_dict()
    for key in ("license", "library_name", "pipeline_tag"):
        if not data.get(key):
            problems.append(f"{card_path}: metadata has no {key!r}")
    index = data.get("model-index")
    if index:
        try:
            name, results = model_index_to_eval_results(index)
        except (KeyError, TypeError, ValueError) as err:
            return problems + [f"{card_path}: model-index does not parse ({err!r})"]
        if eval_results_to_model_index(name, results) != index:
            problems.append(f"{card_path}: model-index does not round-trip through huggingface_hub")
        for result in results:
            if result.metric_value is None or not result.dataset_name or not result.dataset_split:
                problems.append(f"{card_path}: result {result.metric_type!r} lacks a value, dataset or split")
    return problems


def _is_transformers_model_type(model_type: Any) -> bool:
    """Whether transformers itself defines ``model_type`` (not one of the library's registrations)."""
    from transformers import CONFIG_MAPPING

    ours = {spec.model_type for _, spec in MODELS.items()}
    return isinstance(model_type, str) and model_type in CONFIG_MAPPING and model_type not in ours


def check_model_repo(folder: str | Path) -> list[str]:
    """What a model repository folder lacks for a Hub user (empty list: nothing): the files of
    :data:`MODEL_REPO_FILES`, no local-only tokenizer keys, every code file ``auto_map`` /
    ``custom_pipelines`` name (a model of transformers' own classes needs none), and card metadata that
    passes :func:`validate_card_metadata`."""
    folder = Path(folder)
    problems = [f"missing {name}" for name in MODEL_REPO_FILES if not (folder / name).is_file()]
    if (folder / "tokenizer_config.json").is_file():
        tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        local = [key for key in LOCAL_ONLY_TOKENIZER_KEYS if key in tokenizer_config]
        if local:
            problems.append(f"tokenizer_config.json: keys about this machine's copy: {local}")
    config = {}
    if (folder / "config.json").is_file():
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("is_encoder_decoder") and not (folder / "generation_config.json").is_file():
        problems.append("missing generation_config.json")
    # transformers' own classes (a warm-started BERT2BERT, a BERT tagger) load without remote code; the
    # library's pipelines serve them where it is installed
    if config and not _is_transformers_model_type(config.get("model_type")):
        auto_map = config.get("auto_map") or {}
        if "AutoConfig" not in auto_map or len(auto_map) < 2:
            problems.append("config.json: auto_map lacks AutoConfig or the model's Auto class")
        references = list(auto_map.values()) + [
            p["impl"] for p in (config.get("custom_pipelines") or {}).values()
        ]
        if not config.get("custom_pipelines"):
            problems.append("config.json: no custom_pipelines")
        for reference in references:
            if not (folder / f"{reference.split('.')[0]}.py").is_file():
                problems.append(f"missing {reference.split('.')[0]}.py (named by config.json)")
        try:  # every code file named, in the folder, and the one saved with the model
            check_remote_code(folder)
        except ModelFolderError as err:
            problems.append(str(err))
    if (folder / "README.md").is_file():
        problems += validate_card_metadata(folder / "README.md")
    return problems


def export_dataset(
    source: str | Path, out_dir: str | Path, *, data_dir: str | Path | None = None, overwrite: bool = False
) -> Path:
    """Write the Hub repository folder of a dataset: ``source`` is a corpus name (built into ``out_dir``
    from the raw files, as ``hf-querygen corpus build``) or a built folder (``dataset_scripts/<name>``:
    its README.md and data files are copied; the build script stays behind). Checked with
    :func:`check_dataset_repo`."""
    import shutil

    out = Path(out_dir)
    source_path = Path(source)
    if not source_path.is_dir():
        get_corpus_spec(str(source))  # an unknown name fails before anything is written
    origin = source_path if source_path.is_dir() else Path(dataset_folder(str(source)))
    with atomic_output_dir(out, EXPORT_KIND, overwrite, what="export", protected=[origin]) as staging:
        if source_path.is_dir():
            card = source_path / "README.md"
            if not card.is_file():
                raise InvalidInputError(f"export: {source_path} has no README.md (dataset card with configs)")
            shutil.copy2(card, staging / "README.md")
            for data_file in _dataset_data_files(source_path):
                target = staging / data_file
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source_path / data_file, target)
        else:
            # the checkout's card (license, prose) is the starting point; the build rewrites its header
            card = origin / "README.md"
            if card.is_file():
                shutil.copy2(card, staging / "README.md")
            build_dataset_folder(str(source), staging, data_dir=data_dir, progress=False)
        problems = check_dataset_repo(staging)
        if problems:
            raise InvalidInputError(
                f"export of dataset {source} to {out} is incomplete: " + "; ".join(problems)
            )
    return out


def _dataset_configs(folder: Path) -> list[dict[str, Any]]:
    from huggingface_hub import DatasetCard

    data = DatasetCard.load(folder / "README.md").data.to_dict()
    return list(data.get("configs") or [])


def _dataset_data_files(folder: Path) -> list[str]:
    files = []
    for config in _dataset_configs(folder):
        for entry in config.get("data_files") or []:
            paths = entry["path"] if isinstance(entry["path"], list) else [entry["path"]]
            files += paths
    missing = [f for f in files if not (folder / f).is_file()]
    if missing:
        raise InvalidInputError(
            f"export: {folder} lacks data files its card lists ({', '.join(missing[:5])}"
            f"{', ...' if len(missing) > 5 else ''}): build it first (hf-querygen corpus build)"
        )
    return files


def check_dataset_repo(folder: str | Path) -> list[str]:
    """What a dataset repository folder lacks (empty: nothing): a card whose metadata parses, with
    ``configs`` whose data files exist, and no loading script (datasets 5 refuses them)."""
    folder = Path(folder)
    if not (folder / "README.md").is_file():
        return ["missing README.md"]
    try:
        configs = _dataset_configs(folder)
    except Exception as err:  # a broken YAML header
        return [f"README.md: metadata does not load ({err})"]
    problems = [] if configs else ["README.md: no configs in the metadata"]
    for config in configs:
        for entry in config.get("data_files") or []:
            paths = entry["path"] if isinstance(entry["path"], list) else [entry["path"]]
            problems += [
                f"missing {p} (config {config.get('config_name')})"
                for p in paths
                if not (folder / p).is_file()
            ]
    problems += [f"loading script {p.name}: datasets 5 does not run it" for p in folder.glob("*.py")]
    return problems


def check_push(repo_id: Any, token: str | None = None) -> str:
    """Everything a push needs, checked before anything is written: a valid repository id, the Hub not
    switched off (``HF_HUB_OFFLINE``), a token, and the Hub reachable and accepting that token (one
    ``whoami`` call). Returns the account name; raises :class:`InvalidInputError` for a bad id and
    :class:`HubPushError` for the rest, each one line naming the fix."""
    import os

    from huggingface_hub import get_token
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not isinstance(repo_id, str) or not repo_id:
        raise InvalidInputError(f"--push: a Hub repository id such as 'user/name' is needed, got {repo_id!r}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        reason = " ".join(str(err).split())
        raise InvalidInputError(f"--push: {repo_id!r} is not a valid Hub repository id ({reason})") from None
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
        raise HubPushError(
            f"--push {repo_id}: the Hub is switched off here (HF_HUB_OFFLINE is set); unset it to push, or "
            "export without --push and upload the folder later"
        )
    token = token or get_token()
    if not token:
        raise HubPushError(f"--push {repo_id}: no Hub token; log in with `hf auth login` or pass --token")
    try:
        account = HfApi(library_name="hf-querygen", token=token).whoami()
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            raise HubPushError(f"--push {repo_id}: the Hub rejected the token (HTTP {status})") from None
        raise HubPushError(f"--push {repo_id}: the Hub answered HTTP {status}: {_first_line(err)}") from None
    except Exception as err:  # connection refused, DNS, timeouts, proxies: all mean "cannot reach it"
        raise HubPushError(
            f"--push {repo_id}: cannot reach the Hub ({type(err).__name__}: {_first_line(err)}); check the "
            "network, or export without --push and upload the folder later"
        ) from None
    return str(account.get("name", "")) if isinstance(account, dict) else ""


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "model",
    private: bool | None = None,
    token: str | None = None,
    commit_message: str | None = None,
) -> str:
    """Create ``repo_id`` if needed and upload ``folder`` as one commit; returns the commit URL. A failure
    of the Hub is a :class:`HubPushError` naming the repository (the folder stays as written)."""
    api = HfApi(library_name="hf-querygen", token=token)
    try:
        repo_id = api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True).repo_id
        info = api.upload_folder(
            repo_id=repo_id,
            repo_type=repo_type,
            folder_path=str(folder),
            ignore_patterns=[MARKER_FILE],  # the library's own bookkeeping, not part of the repository
            commit_message=commit_message or f"Upload hf-querygen {repo_type} export",
        )
    except (OSError, ValueError, RuntimeError) as err:  # HfHubHTTPError is an OSError (requests')
        raise HubPushError(
            f"push of {folder} to {repo_id} failed ({type(err).__name__}: {_first_line(err)}); the folder is "
            "complete: push it again later"
        ) from None
    return str(info.commit_url)
