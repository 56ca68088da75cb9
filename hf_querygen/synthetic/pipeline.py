"""The synthetic keyword-question generator as a resumable ``datasets`` pipeline (Ding & Balog Sec. 3).

``synthesize(questions, out_dir, config, length_prior, index)``:

1. phrase detection (Sec. 3.1.4) trained on Q when the KQGM configuration uses phrases, and the
   collection statistics n(t), df(t), N of Q's units (Eq. 2, 5);
2. Q is cut into contiguous shards of ``shard_size`` rows; for each shard that is not yet on disk:
   m candidate keyword queries per question by KQGM (``Dataset.map(batched=True, num_proc=...)``;
   each question's generator is seeded from the run seed and the question id, so the output does
   not depend on shard size, ``num_proc`` or on where a run was interrupted), then KQF (Eq. 7, batched
   SDM retrieval with early exit, ``threads``) and the TDF score (Eq. 8) of the kept candidate;
   the shard is written to ``data/all/train-XXXXX-of-YYYYY.parquet`` atomically (temporary file +
   rename), so a killed run continues with the first missing shard;
3. a dataset card (``README.md`` with YAML ``configs``) and ``synthesis.json`` (the configuration and
   counts); with ``top_l`` a second config ``top_l`` holds T_L, the L pairs with the highest TDF score.

``load_dataset(out_dir)`` / ``load_dataset(out_dir, "top_l")`` read the result; the folder can be pushed
to the Hub as it is. Without an index, KQF and TDF are skipped (``kqf_rank`` = -1, ``tdf_score`` NaN)
and the first candidate is kept: the KQGM-only data (the paper's "Baseline/Par/Par+Ph" sets).

Scale: shards are independent given Q, its statistics and the index. ``ray_address=`` (CLI
``--ray [ADDRESS]``) runs each missing shard as a Ray task, the same shard function as the one-process
run, so the output is byte-identical; without Ray, several machines can each run a disjoint range of
shards (``shards=range(a, b)``) into a shared folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import datasets
import numpy as np

from .._fs import claim_in_place_dir
from .._ray import ensure_ray, run_tasks
from ..errors import InvalidInputError
from ..retrieval.sharded import open_any_index
from .filters import SearchIndex, keyword_query_filter
from .filters import top_l as select_top_l
from .kqgm import (
    CollectionStatistics,
    KeywordQueryGenerator,
    KQGMConfig,
    LengthPrior,
    keyword_string,
    stable_seed,
)
from .phrases import PhraseDetector

__all__ = ["FEATURES", "SynthesisConfig", "TokenStream", "build_generator", "synthesize"]

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "question": datasets.Value("string"),
        "cluster_id": datasets.Value("string"),
        "keyword_query": datasets.Value("string"),
        "keyword_units": datasets.List(datasets.Value("string")),
        "kqgm_config": datasets.Value("string"),
        "strategy": datasets.Value("string"),
        "paraphrase": datasets.Value("bool"),
        "phrases": datasets.Value("bool"),
        "lam": datasets.Value("float32"),
        "alpha": datasets.Value("float32"),
        "beta": datasets.Value("float32"),
        "seed": datasets.Value("int64"),
        "kqf_candidate": datasets.Value("int32"),
        "kqf_candidates_tried": datasets.Value("int32"),
        "kqf_rank": datasets.Value("int32"),
        "tdf_score": datasets.Value("float32"),
    }
)
#: a set with several keyword queries per question (``SynthesisConfig.keyword_queries_per_question``):
#: ``query_number`` 1 is the kept one (as in a one-per-question set), 2.. the further candidates that
#: rank the question first, in candidate order
MULTI_FEATURES = datasets.Features({**FEATURES, "query_number": datasets.Value("int32")})


def _features(per_question: int) -> datasets.Features:
    return MULTI_FEATURES if per_question > 1 else FEATURES


@dataclass
class SynthesisConfig:
    """Run settings. ``num_candidates`` = m (Sec. 5: 20), ``top_n`` = N (Sec. 5: 100)."""

    kqgm: KQGMConfig = field(default_factory=KQGMConfig)
    seed: int = 0
    num_candidates: int = 20
    top_n: int = 100
    ranker: str = "sdm"
    shard_size: int = 10_000
    num_proc: int | None = None
    threads: int | None = None
    batch_size: int = 1000
    phrase_min_count: int = 5
    phrase_threshold: float = 10.0
    #: k: the kept keyword query and up to k - 1 further distinct candidates that rank the question
    #: first by the keyword query filter (needs the index); 1 = the paper's one pair per question
    keyword_queries_per_question: int = 1

    def to_dict(self) -> dict:
        out = asdict(self)
        out["kqgm"] = self.kqgm.to_dict()
        if self.keyword_queries_per_question == 1:  # the manifests written before it existed stay valid
            del out["keyword_queries_per_question"]
        return out


class TokenStream:
    """Re-iterable token lists of a dataset column, read in batches (no list of the whole corpus)."""

    def __init__(
        self, dataset: datasets.Dataset, column: str = "text", transform=None, batch_size: int = 10_000
    ):
        self.dataset, self.column, self.transform, self.batch_size = dataset, column, transform, batch_size

    def __iter__(self):
        for batch in self.dataset.select_columns([self.column]).iter(batch_size=self.batch_size):
            for text in batch[self.column]:
                terms = text.split()
                yield self.transform(terms) if self.transform is not None else terms


def build_generator(
    questions: datasets.Dataset,
    kqgm: KQGMConfig,
    length_prior: LengthPrior,
    min_count: int = 5,
    threshold: float = 10.0,
) -> KeywordQueryGenerator:
    """Phrase detector (when ``kqgm.phrases``) and collection statistics from Q's ``text`` column."""
    detector = None
    if kqgm.phrases:
        detector = PhraseDetector.train(TokenStream(questions), min_count=min_count, threshold=threshold)
    stats = CollectionStatistics.from_documents(
        TokenStream(questions, transform=detector.transform if detector is not None else None)
    )
    return KeywordQueryGenerator(stats, kqgm, length_prior, detector)


def _candidates_batch(batch: dict, generator: KeywordQueryGenerator, seed: int, m: int) -> dict:
    """m KQGM candidates per question (Algorithm 1 run m times), as unit lists and strings."""
    units, strings = [], []
    for qid, text, paraphrases in zip(batch["id"], batch["text"], batch["paraphrases"], strict=True):
        rng = np.random.default_rng(stable_seed(seed, qid))
        prepared = generator.prepare(text, paraphrases)
        cands = [generator.generate(text, rng, prepared=prepared) for _ in range(m)]
        units.append([" ".join(c) for c in cands])
        strings.append([keyword_string(c) for c in cands])
    return {"candidate_units": units, "candidates": strings}


def _questions_fingerprint(questions: datasets.Dataset) -> str:
    h = hashlib.blake2b(digest_size=16)
    for batch in questions.select_columns(["id", "text"]).iter(batch_size=100_000):
        h.update("\x1f".join(batch["id"]).encode())
        h.update("\x1e".join(batch["text"]).encode())
    return h.hexdigest()


def _shard_path(out_dir: Path, index: int, num_shards: int) -> Path:
    return out_dir / "data" / "all" / f"train-{index:05d}-of-{num_shards:05d}.parquet"


#: the .hf_querygen marker kind of a synthetic dataset folder, and the names a run writes there
SYNTHETIC_KIND = "synthetic"
SYNTHETIC_OUTPUTS = ("data", "README.md", "synthesis.json")


def _legacy_manifest(out: Path) -> dict | None:
    """The manifest of a run written before its folder was marked: its synthesis.json (None: unreadable)."""
    try:
        manifest = json.loads((out / "synthesis.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest else None


def synthesize(
    questions: datasets.Dataset,
    out_dir: str | os.PathLike,
    config: SynthesisConfig,
    length_prior: LengthPrior,
    index: SearchIndex | None = None,
    top_l: int | None = None,
    shards: Iterable[int] | None = None,
    generator: KeywordQueryGenerator | None = None,
    progress: bool = True,
    ray_address: str | None = None,
) -> datasets.Dataset:
    """Run (or resume) the pipeline of the module docstring; returns the full synthetic dataset.

    ``questions`` needs ``id``, ``question``, ``text`` (normalised), ``cluster_id``, ``paraphrases``
    (see :func:`hf_querygen.synthetic.corpus.build_question_corpus`); the index, when given, must hold
    Q under the same ids. ``shards`` restricts this call to some shards (distributed runs); the card
    is written once every shard exists.

    ``ray_address``: run the missing shards as Ray tasks, one per shard, each the same shard function as
    the one-process run (so the same bytes): on the cluster at that address, or with
    :data:`hf_querygen._ray.LOCAL` on a Ray started on this machine, else a local one. Q, the generator
    and the cluster map go to the object store once; each task reopens the index from its folder (which,
    like ``out_dir``, every worker must see). A failed task is retried once; a shard that fails again is
    named with its error after the others have finished (rerun to continue).
    """
    _check_inputs(questions, config, index)
    features = _features(config.keyword_queries_per_question)
    out = Path(out_dir)
    num_shards = math.ceil(len(questions) / config.shard_size)
    manifest = _manifest(questions, config, length_prior, index, num_shards)
    _claim_out_dir(out, manifest)
    todo = [
        i
        for i in (shards if shards is not None else range(num_shards))
        if not _shard_path(out, i, num_shards).exists()
    ]
    if todo:
        _run_shards(
            questions,
            todo,
            num_shards,
            out,
            config,
            length_prior,
            index,
            generator,
            manifest,
            progress,
            ray_address,
        )
    return _collect(out, manifest, num_shards, features, top_l)


def _check_inputs(questions: datasets.Dataset, config: SynthesisConfig, index: SearchIndex | None) -> None:
    """Refuse what no run could use: Q without the needed columns or empty, or a bad
    ``keyword_queries_per_question`` (more than one needs the index)."""
    missing = {"id", "question", "text", "cluster_id", "paraphrases"} - set(questions.column_names)
    if missing:
        raise InvalidInputError(f"synthesize: questions lack columns {sorted(missing)}")
    if len(questions) == 0:
        raise InvalidInputError("synthesize: no questions")
    per_question = config.keyword_queries_per_question
    if not isinstance(per_question, int) or isinstance(per_question, bool) or per_question < 1:
        raise InvalidInputError(
            f"synthesize: keyword_queries_per_question must be an integer >= 1, got {per_question!r}"
        )
    if per_question > 1 and index is None:
        raise InvalidInputError(
            "synthesize: keyword_queries_per_question > 1 keeps the candidates that pass the keyword query "
            "filter, which needs the index of Q"
        )


def _manifest(
    questions: datasets.Dataset,
    config: SynthesisConfig,
    length_prior: LengthPrior,
    index: SearchIndex | None,
    num_shards: int,
) -> dict:
    """The run's identity (``synthesis.json`` and the folder marker): everything that determines the
    output; ``num_proc`` / ``threads`` / ``batch_size`` do not, so a resumed run may change them."""
    determining = {
        k: v for k, v in config.to_dict().items() if k not in ("num_proc", "threads", "batch_size")
    }
    return {
        "config": determining,
        "length_prior": length_prior.as_dict(),
        "questions": len(questions),
        "questions_fingerprint": _questions_fingerprint(questions),
        "num_shards": num_shards,
        "kqf_tdf": index is not None,
    }


def _claim_out_dir(out: Path, manifest: dict) -> None:
    """Take ``out`` for this run and write its ``synthesis.json`` once."""
    # resumed only when the folder holds this very run (its marker's identity is the manifest); a folder
    # with a data/ or README.md hf-querygen did not write, or another run's, is refused untouched
    claim_in_place_dir(
        out,
        SYNTHETIC_KIND,
        SYNTHETIC_OUTPUTS,
        identity=manifest,
        resume=True,
        what="synthesize: out_dir",
        legacy_identity=_legacy_manifest,
    )
    manifest_path = out / "synthesis.json"
    if not manifest_path.exists():
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


def _run_shards(
    questions: datasets.Dataset,
    todo: list[int],
    num_shards: int,
    out: Path,
    config: SynthesisConfig,
    length_prior: LengthPrior,
    index: SearchIndex | None,
    generator: KeywordQueryGenerator | None,
    manifest: dict,
    progress: bool,
    ray_address: str | None,
) -> None:
    """Write the shards of ``todo``: in this process one after the other, or as Ray tasks."""
    from tqdm.auto import tqdm

    generator = generator or build_generator(
        questions, config.kqgm, length_prior, config.phrase_min_count, config.phrase_threshold
    )
    cluster_of = dict(zip(questions["id"], questions["cluster_id"], strict=True)) if index is not None else {}
    shard_fingerprint = [manifest["questions_fingerprint"], manifest["config"]]
    if ray_address is not None:
        _synthesize_on_ray(
            (questions, generator, cluster_of),
            todo,
            num_shards,
            out,
            config,
            index,
            shard_fingerprint,
            ray_address,
            progress,
        )
        return
    for shard_index in tqdm(todo, desc="synthesize shards", disable=not progress):
        _synthesize_shard(
            questions.shard(num_shards, shard_index, contiguous=True),
            shard_index,
            num_shards,
            out,
            config,
            generator,
            index,
            cluster_of,
            shard_fingerprint,
            progress,
        )


def _collect(
    out: Path, manifest: dict, num_shards: int, features: datasets.Features, top_l: int | None
) -> datasets.Dataset:
    """The shards on disk as one dataset; once every shard exists, also T_L and the dataset card."""
    paths = [_shard_path(out, i, num_shards) for i in range(num_shards)]
    if not all(p.exists() for p in paths):
        return datasets.Dataset.from_parquet([str(p) for p in paths if p.exists()], features=features)
    full = datasets.Dataset.from_parquet([str(p) for p in paths], features=features)
    if top_l is not None:
        top_dir = out / "data" / "top_l"
        top_dir.mkdir(parents=True, exist_ok=True)
        select_top_l(full, top_l).to_parquet(str(top_dir / "train.parquet"))
    _write_card(out, manifest, full, top_l)
    return full


def _synthesize_on_ray(
    shared: tuple,
    todo: list[int],
    num_shards: int,
    out: Path,
    config: SynthesisConfig,
    index: SearchIndex | None,
    shard_fingerprint: list,
    ray_address: str,
    progress: bool,
) -> None:
    """The shards of ``todo`` as Ray tasks (:func:`_shard_task`), one CPU each."""
    from tqdm.auto import tqdm

    index_path = None
    if index is not None:
        index_path = getattr(index, "path", None)
        if index_path is None:
            raise InvalidInputError(
                "synthesize on Ray: the workers open the index from its folder; build it with a path "
                "(Index.from_texts(..., path=...)) on a file system every worker sees"
            )
    ray = ensure_ray(ray_address)
    shared_ref = ray.put(shared)  # once in the object store, not once per task
    # one CPU per task: one process for KQGM, one retrieval thread (threads do not change the output)
    task_config = dataclasses.replace(config, num_proc=None, threads=config.threads or 1)
    bar = tqdm(total=len(todo), desc="synthesize shards (Ray)", disable=not progress)
    try:
        run_tasks(
            _shard_task,
            [
                (
                    shared_ref,
                    i,
                    num_shards,
                    str(out),
                    task_config,
                    index_path and str(index_path),
                    shard_fingerprint,
                )
                for i in todo
            ],
            [f"shard {i} ({_shard_path(out, i, num_shards).name})" for i in todo],
            "synthesize",
            on_done=lambda *_: bar.update(1),
        )
    finally:
        bar.close()


#: indexes a Ray worker has opened (path -> index): opened once per worker, not once per shard
_WORKER_INDEXES: dict[str, SearchIndex] = {}


def _shard_task(
    shared: tuple,
    shard_index: int,
    num_shards: int,
    out: str,
    config: SynthesisConfig,
    index_path: str | None,
    shard_fingerprint: list,
) -> int:
    """One shard in a Ray task: :func:`_synthesize_shard` on the shared Q, generator and cluster map."""
    questions, generator, cluster_of = shared
    index = None
    if index_path is not None:
        if index_path not in _WORKER_INDEXES:
            _WORKER_INDEXES[index_path] = open_any_index(index_path)
        index = _WORKER_INDEXES[index_path]
    return _synthesize_shard(
        questions.shard(num_shards, shard_index, contiguous=True),
        shard_index,
        num_shards,
        Path(out),
        config,
        generator,
        index,
        cluster_of,
        shard_fingerprint,
        progress=False,
    )


def _synthesize_shard(
    shard: datasets.Dataset,
    shard_index: int,
    num_shards: int,
    out: Path,
    config: SynthesisConfig,
    generator: KeywordQueryGenerator,
    index: SearchIndex | None,
    cluster_of: dict,
    shard_fingerprint: list,
    progress: bool,
) -> int:
    """Steps 2-3 of the module docstring for one shard: its rows written to its parquet file atomically;
    returns the number of rows. The one shard function of the one-process run and of the Ray tasks."""
    with_candidates = _kqgm_candidates(shard, shard_index, config, generator, index, shard_fingerprint)
    ids = with_candidates["id"]
    candidates = with_candidates["candidates"]
    # each column read once (a Dataset column is materialised on every access)
    clusters_column = with_candidates["cluster_id"]
    if index is not None:
        picks, tried, scores = _kqf_tdf(ids, candidates, clusters_column, config, index, cluster_of, progress)
    else:
        picks = [(i, 0, -1, None, 1) for i in range(len(ids))]
        tried, scores = [0] * len(ids), [float("nan")] * len(ids)
    columns = _shard_columns(with_candidates, ids, candidates, clusters_column, picks, tried, scores, config)
    path = _shard_path(out, shard_index, num_shards)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    datasets.Dataset.from_dict(columns, features=_features(config.keyword_queries_per_question)).to_parquet(
        str(tmp)
    )
    os.replace(tmp, path)  # atomic: a killed run never leaves a half-written shard behind
    return len(picks)


def _kqgm_candidates(
    shard: datasets.Dataset,
    shard_index: int,
    config: SynthesisConfig,
    generator: KeywordQueryGenerator,
    index: SearchIndex | None,
    shard_fingerprint: list,
) -> datasets.Dataset:
    """The shard with its KQGM candidates (columns ``candidates`` and ``candidate_units``)."""
    return shard.map(
        _candidates_batch,
        batched=True,
        batch_size=config.batch_size,
        num_proc=config.num_proc,
        # without KQF only the first candidate is kept: draw just that one (the per-question
        # generator is sequential, so candidate 0 is the same whatever m is)
        fn_kwargs={
            "generator": generator,
            "seed": config.seed,
            "m": config.num_candidates if index is not None else 1,
        },
        # fingerprint from what determines the output; hashing the generator would be slow
        new_fingerprint=hashlib.sha1(
            json.dumps([*shard_fingerprint, index is not None, shard_index]).encode()
        ).hexdigest(),
        desc=f"KQGM shard {shard_index}",
    )


def _kqf_tdf(
    ids: list[str],
    candidates: list[list[str]],
    clusters_column: list[str],
    config: SynthesisConfig,
    index: SearchIndex,
    cluster_of: dict,
    progress: bool,
) -> tuple[list[tuple], list[int], list[float]]:
    """KQF (Eq. 7) over the candidates and the TDF score (Eq. 8) of each kept one: the picks
    ``(question, candidate, rank of q, retrieved ids, query number)``, candidates tried, scores."""
    from tqdm.auto import tqdm

    bar = tqdm(
        total=len(ids) * config.num_candidates,
        desc="KQF queries",
        disable=not progress,
        leave=False,
    )
    kqf = keyword_query_filter(
        ids,
        candidates,
        index,
        top_n=config.top_n,
        ranker=config.ranker,
        threads=config.threads,
        progress=bar.update,
        keep=config.keyword_queries_per_question,
    )
    bar.close()
    # the kept candidate, then the further ones that rank q first (keyword_queries_per_question > 1)
    picks = [
        (i, j, rank, retrieved, number)
        for i, r in enumerate(kqf)
        for number, (j, rank, retrieved) in enumerate(
            [(r.chosen, r.rank, r.retrieved), *((a, 1, hits) for a, hits in r.also)], start=1
        )
    ]
    tried = [kqf[i].candidates_tried for i, *_ in picks]
    scores = [
        (sum(cluster_of.get(h) == clusters_column[i] for h in retrieved) / len(retrieved))
        if retrieved
        else 0.0
        for i, _, _, retrieved, _ in picks
    ]  # Eq. (8), C_q = the members of q's cluster
    return picks, tried, scores


def _shard_columns(
    with_candidates: datasets.Dataset,
    ids: list[str],
    candidates: list[list[str]],
    clusters_column: list[str],
    picks: list[tuple],
    tried: list[int],
    scores: list[float],
    config: SynthesisConfig,
) -> dict[str, list]:
    """The shard's rows as the columns of :data:`FEATURES` (and ``query_number`` when several per
    question), one row per pick."""
    kq = config.kqgm
    questions_column = with_candidates["question"]
    cand_units = with_candidates["candidate_units"]
    rows = [pick[0] for pick in picks]
    chosen = [pick[1] for pick in picks]
    n = len(picks)
    columns = {
        "id": [ids[i] for i in rows],
        "question": [questions_column[i] for i in rows],
        "cluster_id": [clusters_column[i] for i in rows],
        "keyword_query": [candidates[i][j] for i, j in zip(rows, chosen, strict=True)],
        "keyword_units": [cand_units[i][j].split(" ") for i, j in zip(rows, chosen, strict=True)],
        "kqgm_config": [kq.name] * n,
        "strategy": [kq.strategy] * n,
        "paraphrase": [kq.paraphrase] * n,
        "phrases": [kq.phrases] * n,
        "lam": [kq.lam] * n,
        "alpha": [kq.alpha] * n,
        "beta": [kq.beta] * n,
        "seed": [config.seed] * n,
        "kqf_candidate": chosen,
        "kqf_candidates_tried": tried,
        "kqf_rank": [pick[2] for pick in picks],
        "tdf_score": scores,
    }
    if config.keyword_queries_per_question > 1:
        columns["query_number"] = [pick[4] for pick in picks]
    return columns


def _write_card(out: Path, manifest: dict, full: datasets.Dataset, top_l: int | None) -> None:
    import yaml

    per_question = manifest["config"].get("keyword_queries_per_question", 1)
    configs = [
        {
            "config_name": "all",
            "data_files": [{"split": "train", "path": "data/all/*.parquet"}],
            "default": True,
        }
    ]
    if top_l is not None:
        configs.append(
            {"config_name": "top_l", "data_files": [{"split": "train", "path": "data/top_l/train.parquet"}]}
        )
    header = {
        "pretty_name": "Synthetic keyword-question pairs (Ding & Balog ICTIR'18 generator)",
        "language": ["en"],
        "task_categories": ["text2text-generation"],
        "tags": ["keyword-to-question", "synthetic", "question-generation"],
        "configs": configs,
    }
    kq = manifest["config"]["kqgm"]
    ranks = np.array(full["kqf_rank"])
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False).strip(),
        "---",
        "# Synthetic keyword-question pairs",
        "",
        "Generated by `hf-querygen synthesize` (`hf_querygen.synthetic`): Ding & Balog, *Generating",
        "Synthetic Data for Neural Keyword-to-Question Models*, ICTIR 2018, Sec. 3. "
        + (
            "One keyword query"
            if per_question == 1
            else f"Up to {per_question} keyword queries (distinct candidates that rank the question first; "
            "`query_number` 1 is the one a one-per-question set keeps)"
        ),
        "per question of the question corpus Q (KQGM, Algorithm 1): "
        + (
            "the best of m candidates by the keyword query filter (Eq. 7), with the training-data "
            "filter score (Eq. 8)."
            if manifest["kqf_tdf"]
            else "KQGM only (no keyword query filter, no training-data filter score)."
        ),
        "",
        f"- rows: {len(full):,}; KQGM `{KQGMConfig(**kq).name}` (lambda={kq['lam']}, alpha={kq['alpha']}, "
        f"beta={kq['beta']}); seed {manifest['config']['seed']}",
        f"- m = {manifest['config']['num_candidates']} candidates, N = {manifest['config']['top_n']}, "
        f"ranker `{manifest['config']['ranker']}`; KQF/TDF applied: {manifest['kqf_tdf']}",
        f"- P(s): {json.dumps(manifest['length_prior'])}",
    ]
    if manifest["kqf_tdf"]:
        lines.append(
            f"- q ranked first by its kept keyword query: {float((ranks == 1).mean()):.3f}; "
            f"not in the top N: {float((ranks == 0).mean()):.3f}"
        )
    if top_l is not None:
        lines.append(f"- config `top_l`: T_L, the {min(top_l, len(full)):,} pairs with the highest TDF score")
    lines += [
        "",
        "## Columns",
        "",
        "`id`, `question`, `cluster_id` (paraphrase cluster C_q) of the question; `keyword_query` (text) and",
        "`keyword_units` (sampled terms; a detected phrase is one unit, `_`-joined); the KQGM configuration",
        "(`kqgm_config`, `strategy`, `paraphrase`, `phrases`, `lam`, `alpha`, `beta`, `seed`);",
        "`kqf_candidate` (which of the m candidates was kept), `kqf_candidates_tried` (early exit),",
        "`kqf_rank` (rank of the question for the kept query; 0 = not in the top N, -1 = no KQF);",
        "`tdf_score` (Eq. 8; NaN without an index)"
        + ("; `query_number` (1 = the kept one, 2.. = further ones)." if per_question > 1 else "."),
        "",
        "`synthesis.json` records the full run configuration.",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines))
