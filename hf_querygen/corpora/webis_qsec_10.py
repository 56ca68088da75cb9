"""Webis-QSeC-10 (Webis Query Segmentation Corpus 2010), training set: 4,848 AOL queries, each
segmented by at least 10 crowd workers (Hagen et al., WWW 2011), used by Lin et al. 2017.

Configs
-------
``segmentations`` (default)
    one row per query: every crowd segmentation with its votes, the break-fusion reference
    (majority per break position, break on a tie; Lin'17 Sec. 2), its break vector, vote shares,
    BIO tags, and a deterministic 5-fold assignment (the official test set is not available).
``algorithms``
    the segmentation of each query by the seven published algorithms shipped with the corpus.

The corpus's feature files (Google n-gram counts, Wikipedia-title n-grams, MSN log
probabilities, PMI, POS tags) are parsed by :func:`load_segmentation_resources`; the WT / WT+SNP
baselines and the feature-rich CRF use them.
"""

from __future__ import annotations

import ast
import statistics
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..text import (
    BIO_LABELS,
    SegmentationError,
    break_fusion,
    break_vote_shares,
    breaks_to_bio,
    breaks_to_string,
    parse_segmentation,
)
from ._base import (
    ParseLog,
    dataset_from_columns,
    iter_lines,
    kfold_assignment,
    load_corpus,
    register_corpus,
    resolve_data_dir,
)

if TYPE_CHECKING:
    import datasets

CORPUS_NAME = "webis_qsec_10"
CORPUS_FOLDER = "webis-qsec-10"
PREFIX = "webis-qsec-10-training-set-"
QUERIES_FILE = f"{PREFIX}queries.txt"
CROWD_FILE = f"{PREFIX}segmentations-crowdsourced.txt"
NUM_FOLDS = 5
FOLD_SALT = "webis-qsec-10"

#: column name in the ``algorithms`` config -> (file-name part, publication)
PUBLISHED_ALGORITHMS: dict[str, tuple[str, str]] = {
    "wt": ("wt-baseline", "WT baseline, Hagen et al. CIKM 2012"),
    "wt_snp": ("wt-snp-baseline", "WT+SNP baseline, Hagen et al. CIKM 2012"),
    "pmi": ("pmi-baseline", "PMI baseline, Hagen et al. WWW 2011 / CIKM 2012"),
    "naive": ("stein2010j", "naive query segmentation, Hagen et al. SIGIR 2010"),
    "wikipedia_normalized": ("stein2011e", "Wikipedia-based normalization, Hagen et al. WWW 2011"),
    "hybrid_acc": ("hybrid-acc", "HYB-A, Hagen et al. CIKM 2012"),
    "hybrid_ir": ("hybrid-ir-none-stein2011e", "HYB-I, Hagen et al. CIKM 2012"),
}

PAPER_STATISTICS = {
    "training_queries": 4850,
    "test_queries": 48587,
    "total_queries": 53437,
    "min_votes_per_query": 10,
    "source": "Lin et al. 2017, Sec. 4 (the test set is not available here)",
}


# ---------------------------------------------------------------- raw file readers
def _tab_records(path: Path, num_fields: int, log: ParseLog) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a TAB-separated file read by the shared reader layer (editor line
    numbers, UTF-8 errors with byte offsets, empty files); malformed lines go to ``log``."""
    for line in iter_lines(path, log, blank_is_error=True):
        fields = line.text.split("\t")
        if len(fields) != num_fields:
            log.error(path, line.number, f"expected {num_fields} TAB-separated fields, found {len(fields)}")
            continue
        yield line.number, fields


def _query_id(path: Path, line_no: int, value: str, log: ParseLog) -> str | None:
    if not value.isdigit():
        log.error(path, line_no, f"query id {value!r} is not a decimal integer")
        return None
    return value


def read_queries(data_dir: Path, log: ParseLog) -> dict[str, str]:
    """query id -> query, in file order."""
    path = data_dir / CORPUS_FOLDER / QUERIES_FILE
    queries: dict[str, str] = {}
    for line_no, (raw_id, query) in _tab_records(path, 2, log):
        query_id = _query_id(path, line_no, raw_id, log)
        if query_id is None:
            continue
        if query_id in queries:
            log.error(path, line_no, f"duplicate query id {query_id}")
            continue
        if not query.strip() or query != " ".join(query.split()):
            log.error(path, line_no, f"query {query!r} is empty or not single-space separated")
            continue
        queries[query_id] = query
    return queries


def _records_of_known_queries(
    path: Path, queries: dict[str, str], log: ParseLog
) -> Iterator[tuple[int, str, str]]:
    """(line number, query id, value) of a ``<query-id>\t<value>`` file whose ids must be known
    queries, each at most once; anything else goes to ``log``."""
    seen: set[str] = set()
    for line_no, (raw_id, value) in _tab_records(path, 2, log):
        query_id = _query_id(path, line_no, raw_id, log)
        if query_id is None:
            continue
        if query_id not in queries:
            log.error(path, line_no, f"query id {query_id} is not in {QUERIES_FILE}")
            continue
        if query_id in seen:
            log.error(path, line_no, f"duplicate query id {query_id}")
            continue
        seen.add(query_id)
        yield line_no, query_id, value


def read_crowd_votes(
    data_dir: Path, queries: dict[str, str], log: ParseLog
) -> dict[str, list[tuple[int, str]]]:
    """query id -> [(votes, segmentation), ...] from the crowdsourcing file (a Python list literal
    per line: single-quoted strings, double-quoted when they hold an apostrophe)."""
    path = data_dir / CORPUS_FOLDER / CROWD_FILE
    votes_of: dict[str, list[tuple[int, str]]] = {}
    for line_no, query_id, literal in _records_of_known_queries(path, queries, log):
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError) as err:
            log.error(path, line_no, f"not a Python list literal ({err.__class__.__name__}: {err})")
            continue
        pairs = _check_vote_list(value, queries[query_id])
        if isinstance(pairs, str):
            log.error(path, line_no, pairs)
            continue
        votes_of[query_id] = pairs
    return votes_of


def _check_vote_list(value: object, query: str) -> list[tuple[int, str]] | str:
    """The vote list, or a message saying what is wrong with it."""
    if not isinstance(value, list) or not value:
        return "expected a non-empty list of (votes, segmentation) tuples"
    pairs = []
    for item in value:
        if not (
            isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], int)
            and isinstance(item[1], str)
        ):
            return f"entry {item!r} is not a (int votes, str segmentation) tuple"
        if item[0] <= 0:
            return f"entry {item!r} has a non-positive vote count"
        try:
            parse_segmentation(item[1], query)
        except SegmentationError as err:
            return str(err)
        pairs.append((item[0], item[1]))
    return pairs


def _algorithm_path(data_dir: Path, column: str) -> Path:
    file_part = PUBLISHED_ALGORITHMS[column][0]
    return data_dir / CORPUS_FOLDER / "segmentations-of-algorithms" / f"{PREFIX}segmentations-{file_part}.txt"


def read_algorithm_outputs(
    data_dir: Path, queries: dict[str, str], log: ParseLog
) -> dict[str, dict[str, str]]:
    """algorithm column -> {query id -> segmentation} for the seven published algorithms."""
    outputs: dict[str, dict[str, str]] = {}
    for column in PUBLISHED_ALGORITHMS:
        path = _algorithm_path(data_dir, column)
        by_id: dict[str, str] = {}
        for line_no, query_id, segmentation in _records_of_known_queries(path, queries, log):
            try:
                parse_segmentation(segmentation, queries[query_id])
            except SegmentationError as err:
                log.error(path, line_no, str(err))
                continue
            by_id[query_id] = segmentation
        outputs[column] = by_id
    return outputs


# ---------------------------------------------------------------- feature resources
@dataclass
class SegmentationResources:
    """The corpus's feature files (``data/``), keyed by lower-case n-gram strings."""

    google_counts: dict[str, int] = field(default_factory=dict)  # 2-5-grams -> Google n-gram count
    normalized_weights: dict[str, int] = field(default_factory=dict)  # WWW'11 weights (2-5-grams)
    wikipedia_titles: set[str] = field(default_factory=set)  # 2-7-grams that are Wikipedia titles
    msn_unigram_logprob: dict[str, float] = field(default_factory=dict)
    msn_bigram_logprob: dict[str, float] = field(default_factory=dict)
    pmi: dict[str, float] = field(default_factory=dict)  # 2-grams
    ngram_pos: dict[str, tuple[str, ...]] = field(default_factory=dict)  # n-gram tagged alone
    query_pos: dict[str, tuple[str, ...]] = field(default_factory=dict)  # query id -> tags per word
    #: where the values come from; the corpus files know only the corpus's own queries' n-grams
    source: str = "webis-qsec-10 feature files (n-grams of the corpus's own queries only)"
    #: an object with ``tag(word_lists) -> tag lists`` that gives POS for any query (None: only
    #: ``query_pos``, i.e. the corpus's own queries); see hf_querygen.baselines.segmentation_features
    pos_tagger: Any = None


def _read_values(path: Path, log: ParseLog, cast) -> dict:
    values = {}
    for line_no, (key, raw) in _tab_records(path, 2, log):
        if key in values:
            log.error(path, line_no, f"duplicate n-gram {key!r}")
            continue
        try:
            values[key] = cast(raw)
        except ValueError:
            log.error(path, line_no, f"value {raw!r} of {key!r} is not a {cast.__name__}")
    return values


def _pos_literal(raw: str) -> tuple[str, ...]:
    try:
        tags = ast.literal_eval(raw)
    except (ValueError, SyntaxError) as err:
        raise ValueError(f"not a Python list literal: {err}") from None
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValueError("not a list of tag strings")
    return tuple(tags)


def _read_pos(path: Path, log: ParseLog) -> dict[str, tuple[str, ...]]:
    """key -> POS tags. The tagger's own tokenisation is kept: ``1/2`` may carry three tags, so
    the tag count is not checked against the words."""
    tags_of = {}
    for line_no, (key, raw) in _tab_records(path, 2, log):
        if key in tags_of:
            log.error(path, line_no, f"duplicate key {key!r}")
            continue
        try:
            tags = _pos_literal(raw)
        except ValueError as err:
            log.error(path, line_no, f"POS tags of {key!r}: {err}")
            continue
        tags_of[key] = tags
    return tags_of


def read_wikipedia_titles(path: Path, log: ParseLog) -> set[str]:
    """The n-grams of the Wikipedia-titles file (one per line; a repeat or a TAB is an error)."""
    titles: set[str] = set()
    for line in iter_lines(path, log, blank_is_error=True):
        if "\t" in line.text:
            log.error(path, line.number, "expected one n-gram per line")
            continue
        if line.text in titles:
            log.error(path, line.number, f"duplicate n-gram {line.text!r}")
            continue
        titles.add(line.text)
    return titles


def load_segmentation_resources(data_dir=None, strict: bool = True) -> SegmentationResources:
    """Parse the corpus's feature files (same strict/lenient errors as the corpus builder)."""
    folder = resolve_data_dir(data_dir) / CORPUS_FOLDER / "data"
    log = ParseLog(strict=strict)

    def path(name: str) -> Path:
        return folder / f"{PREFIX}{name}.txt"

    titles = read_wikipedia_titles(path("n-gram-wikipedia-titles"), log)
    return SegmentationResources(
        google_counts=_read_values(path("n-gram-web-frequencies-google"), log, int),
        normalized_weights=_read_values(path("n-gram-web-frequencies-normalized"), log, int),
        wikipedia_titles=titles,
        msn_unigram_logprob=_read_values(path("1-gram-web-frequencies-msn"), log, float),
        msn_bigram_logprob=_read_values(path("2-gram-web-frequencies-msn"), log, float),
        pmi=_read_values(path("n-gram-pmi-values"), log, float),
        ngram_pos=_read_pos(path("n-gram-pos-tagged"), log),
        query_pos=_read_pos(path("queries-pos-tagged"), log),
    )


# ---------------------------------------------------------------- dataset builders
def _segmentation_features() -> datasets.Features:
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "query": datasets.Value("string"),
            "words": datasets.List(datasets.Value("string")),
            "crowd_segmentations": datasets.List(
                {"segmentation": datasets.Value("string"), "votes": datasets.Value("int32")}
            ),
            "total_votes": datasets.Value("int32"),
            "reference": datasets.Value("string"),
            "segments": datasets.List(datasets.Value("string")),
            "breaks": datasets.List(datasets.Value("int8")),
            "break_vote_share": datasets.List(datasets.Value("float32")),
            "bio_tags": datasets.List(datasets.ClassLabel(names=list(BIO_LABELS))),
            "fold": datasets.Value("int8"),
        }
    )


def _algorithm_features() -> datasets.Features:
    import datasets

    columns = {"id": datasets.Value("string"), "query": datasets.Value("string")}
    columns.update({name: datasets.Value("string") for name in PUBLISHED_ALGORITHMS})
    columns["fold"] = datasets.Value("int8")
    return datasets.Features(columns)


def fold_of_ids(query_ids: list[str]) -> dict[str, int]:
    """The deterministic 5-fold assignment (stable hash of the query id, dealt round-robin)."""
    return dict(zip(query_ids, kfold_assignment(query_ids, NUM_FOLDS, salt=FOLD_SALT), strict=True))


@register_corpus(
    CORPUS_NAME,
    configs={
        "segmentations": "queries with all crowd segmentations, break-fusion reference, BIO tags, 5 folds",
        "algorithms": "segmentations by the seven published algorithms shipped with the corpus",
    },
    default_config="segmentations",
    description="Webis Query Segmentation Corpus 2010, training set (Hagen et al. WWW 2011)",
    license="other",
    license_details=(
        "Not stated in the source repository; see the official corpus page, webis.de/data/webis-qsec-10.html."
    ),
)
def build(config: str, data_dir: Path, log: ParseLog) -> datasets.DatasetDict:
    import datasets

    queries = read_queries(data_dir, log)
    if config == "segmentations":
        votes_of = read_crowd_votes(data_dir, queries, log)
        missing = [query_id for query_id in queries if query_id not in votes_of]
        for query_id in missing:
            log.error(
                data_dir / CORPUS_FOLDER / CROWD_FILE, None, f"no crowd segmentations for query id {query_id}"
            )
        kept = [query_id for query_id in queries if query_id in votes_of]
        folds = fold_of_ids(kept)
        columns: dict[str, list] = {name: [] for name in _segmentation_features()}
        for query_id in kept:
            query, votes = queries[query_id], votes_of[query_id]
            words = query.split()
            breaks = break_fusion(votes, query)
            reference = breaks_to_string(words, breaks)
            columns["id"].append(query_id)
            columns["query"].append(query)
            columns["words"].append(words)
            columns["crowd_segmentations"].append([{"segmentation": s, "votes": v} for v, s in votes])
            columns["total_votes"].append(sum(v for v, _ in votes))
            columns["reference"].append(reference)
            columns["segments"].append(reference.split("|"))
            columns["breaks"].append(breaks)
            columns["break_vote_share"].append(break_vote_shares(votes, query))
            columns["bio_tags"].append([BIO_LABELS.index(tag) for tag in breaks_to_bio(breaks)])
            columns["fold"].append(folds[query_id])
        features = _segmentation_features()
    else:
        outputs = read_algorithm_outputs(data_dir, queries, log)
        kept = [query_id for query_id in queries if all(query_id in by_id for by_id in outputs.values())]
        for query_id in queries:
            for column, by_id in outputs.items():
                if query_id not in by_id:
                    log.error(
                        _algorithm_path(data_dir, column), None, f"no segmentation for query id {query_id}"
                    )
        folds = fold_of_ids(kept)
        columns = {
            "id": kept,
            "query": [queries[q] for q in kept],
            **{column: [by_id[q] for q in kept] for column, by_id in outputs.items()},
            "fold": [folds[q] for q in kept],
        }
        features = _algorithm_features()
    return datasets.DatasetDict({"train": dataset_from_columns(columns, features)})


# ---------------------------------------------------------------- statistics
def corpus_stats(config: str | None = None, data_dir=None) -> dict:
    """Paper-style statistics of a config (the paper's numbers under ``"paper"``)."""
    config = config or "segmentations"
    train = load_corpus(CORPUS_NAME, config, data_dir=data_dir)["train"]
    stats: dict = {
        "config": config,
        "queries": train.num_rows,
        "queries_per_fold": dict(sorted(Counter(train["fold"]).items())),
    }
    lengths = [len(query.split()) for query in train["query"]]
    stats["words_per_query"] = {
        "mean": statistics.fmean(lengths),
        "min": min(lengths),
        "max": max(lengths),
        "histogram": dict(sorted(Counter(lengths).items())),
    }
    if config == "segmentations":
        totals = train["total_votes"]
        breaks = [b for row in train["breaks"] for b in row]
        stats["votes_per_query"] = {
            "mean": statistics.fmean(totals),
            "min": min(totals),
            "max": max(totals),
            "queries_over_10_votes": sum(t > 10 for t in totals),
        }
        stats["distinct_segmentations_per_query"] = statistics.fmean(
            len(c) for c in train["crowd_segmentations"]
        )
        stats["reference_segments_per_query"] = statistics.fmean(len(s) for s in train["segments"])
        stats["reference_break_rate"] = sum(breaks) / len(breaks)
        stats["unsegmented_references"] = sum(len(s) == 1 for s in train["segments"])
    stats["paper"] = PAPER_STATISTICS
    return stats
