"""Q2ID (query -> intent description; Zhang et al., CIKM 2020): quadruples <query, relevant
documents, irrelevant documents, intent description>.

Zhang'20 (Sec. 3.2) builds its benchmark from TREC Dynamic Domain, TREC Robust04 and SemEval
2015/2016 Task 3; the TREC judgments are not available here, so NFCorpus (video titles with
their descriptions and graded links to PubMed abstracts) stands in for the keyword-style TREC
queries.

Configs
-------
``all`` (default)
    SemEval and NFCorpus together.
``semeval``
    SemEval-2015/2016 Task 3 English (Qatar Living): query = question subject, intent
    description = question body, relevant documents = ``Good`` comments, irrelevant documents =
    every other comment (``Bad``, ``Potential(lyUseful)``, ``Dialogue``, ``Not English``), as the
    paper does. Original questions of 2016 (100 comments judged against them, subtask C),
    related questions of 2016 (their 10 comments, subtask A) and the 2015 questions (their own
    thread) all become queries; a question that recurs (2015 dev = 2016 original, related
    threads repeated under several original questions, test CSV repeats) is kept once.
``nfcorpus``
    NFCorpus dev + test video pages: query = video title, intent description = video
    description, relevant documents = abstracts linked directly or indirectly (levels 2/1 of the
    official ``2-1-0`` qrels), irrelevant documents = abstracts judged only *marginally* relevant
    (level 1 of the ``3-2-1`` qrels; level 0 of the official ``2-1-0`` scheme): judged,
    topically close, and not relevant by the corpus's own binary reading, like the judged
    non-relevant TREC documents the paper uses.

Every config has the same train/validation/test assignment (a query is in the same split in
``all`` and in its source's config): the paper divides its queries at random into
5,000/100/258 (Sec. 5.1); we draw the same 258 test and 100 validation queries at random
(:func:`grouped_split` over the pooled queries, one group per query; see :func:`split_fractions`).

This module is the corpus (configs, pooling, splits, statistics); the records and the text rules are in
:mod:`._q2id_records`, the source readers in :mod:`._q2id_semeval` and :mod:`._q2id_nfcorpus`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ._base import ParseLog, grouped_split, load_corpus, register_corpus
from ._q2id_nfcorpus import SOURCE_NFCORPUS, nfcorpus_files, read_nfcorpus
from ._q2id_records import Q2IDRecord, paper_words, q2id_features
from ._q2id_semeval import (
    SOURCE_SEMEVAL2015,
    SOURCE_SEMEVAL2016_ORIGINAL,
    SOURCE_SEMEVAL2016_RELATED,
    read_semeval,
    semeval_files,
)

if TYPE_CHECKING:
    import datasets

CORPUS_NAME = "q2id"
CONFIGS = {
    "all": "SemEval-2015/2016 Task 3 English questions and NFCorpus video pages together",
    "semeval": "SemEval-2015/2016 Task 3 English: subject -> body, Good comments vs the rest",
    "nfcorpus": "NFCorpus dev/test video pages: title -> description, linked vs marginal abstracts",
}
SPLITS = ("train", "validation", "test")
# Zhang'20 Sec. 5.1: the 5,358 queries are randomly divided into 5,000 / 100 / 258.
PAPER_QUERIES, PAPER_VALIDATION_QUERIES, PAPER_TEST_QUERIES = 5358, 100, 258
SPLIT_SALT = "q2id"

#: Zhang'20 Table 2 (and Sec. 3.2, 5.1): the statistics our ``stats`` reports beside ours.
PAPER_TABLE2: dict[str, float] = {
    "queries": 5358,
    "avg_query_words": 4.7,
    "avg_relevant_documents": 10.8,
    "avg_irrelevant_documents": 65.5,
    "relevant_documents": 62916,
    "irrelevant_documents": 196787,
    "avg_relevant_document_sentences": 20.7,
    "avg_irrelevant_document_sentences": 23.2,
    "avg_description_words": 31.0,
    "queries_without_irrelevant_documents": 743,
    "train": 5000,
    "validation": 100,
    "test": 258,
}


# ---------------------------------------------------------------- the corpus
def config_sources(config: str) -> frozenset[str]:
    """The record sources a config keeps."""
    semeval = {SOURCE_SEMEVAL2015, SOURCE_SEMEVAL2016_ORIGINAL, SOURCE_SEMEVAL2016_RELATED}
    return frozenset(
        {"semeval": semeval, "nfcorpus": {SOURCE_NFCORPUS}, "all": semeval | {SOURCE_NFCORPUS}}[config]
    )


def source_files(data_dir: Path) -> list[Path]:
    """Every raw file the corpus reads."""
    return semeval_files(data_dir) + nfcorpus_files(data_dir)


def split_fractions(n_queries: int) -> tuple[float, float]:
    """``(test_fraction, validation_fraction)`` for :func:`grouped_split` over ``n_queries``.

    Zhang'20 tests on 258 and validates on 100 randomly drawn queries (Sec. 5.1); we draw the same
    numbers, so that test scores rest on as many queries as the paper's. A pool too small to keep
    most queries for training (under 2 x 358, e.g. a lenient build of damaged files) is divided
    in the paper's proportions instead.
    """
    held_out = PAPER_TEST_QUERIES + PAPER_VALIDATION_QUERIES
    if n_queries >= 2 * held_out:
        return PAPER_TEST_QUERIES / n_queries, PAPER_VALIDATION_QUERIES / (n_queries - PAPER_TEST_QUERIES)
    return PAPER_TEST_QUERIES / PAPER_QUERIES, PAPER_VALIDATION_QUERIES / (PAPER_QUERIES - PAPER_TEST_QUERIES)


# The three configs share one parse (their splits are drawn over the pooled queries); it is reused
# while the raw files are unchanged (same path, size and modification time) and replayed into the log.
_POOL_CACHE: dict[tuple, tuple[list[Q2IDRecord], ParseLog]] = {}


def _pooled_records(data_dir: Path, log: ParseLog) -> list[Q2IDRecord]:
    signature = tuple(
        (str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in source_files(data_dir) if p.exists()
    )
    key = (signature, log.strict)
    if key not in _POOL_CACHE:
        pool_log = ParseLog(strict=log.strict)
        pool = read_semeval(data_dir, pool_log) + read_nfcorpus(data_dir, pool_log)
        _POOL_CACHE.clear()  # one data dir at a time is enough; keeps memory bounded
        _POOL_CACHE[key] = (pool, pool_log)
    pool, pool_log = _POOL_CACHE[key]
    log.errors.extend(pool_log.errors)
    log.removed_counts.update(pool_log.removed_counts)
    log.duplicates_kept.update(pool_log.duplicates_kept)
    return pool


@register_corpus(
    CORPUS_NAME,
    CONFIGS,
    default_config="all",
    description="Query -> intent description quadruples (Zhang et al., CIKM 2020)",
    license="other",
    license_details=(
        "SemEval-2015/2016 Task 3 (Qatar Living): free for general research use; NFCorpus: free for "
        "academic use (other uses: NutritionFacts.org terms)."
    ),
)
def build_q2id(config: str, data_dir: Path, log: ParseLog) -> datasets.DatasetDict:
    """Build one config. Both sources are always parsed, because the split of a query is drawn
    over the pooled queries and must not depend on the config."""
    import datasets

    pool = _pooled_records(data_dir, log)
    test_fraction, validation_fraction = split_fractions(len(pool))
    assignment = grouped_split([r.id for r in pool], test_fraction, validation_fraction, salt=SPLIT_SALT)
    wanted = config_sources(config)
    features = q2id_features()
    return datasets.DatasetDict(
        {
            split: datasets.Dataset.from_list(
                [
                    r.to_example()
                    for r, s in zip(pool, assignment, strict=True)
                    if s == split and r.source in wanted
                ],
                features=features,
            )
            for split in SPLITS
        }
    )


# ---------------------------------------------------------------- statistics
def _example_counts(batch: dict[str, list]) -> dict[str, list]:
    def sentence_counts(documents_per_example: list[list[dict]]) -> list[int]:
        return [sum(len(d["sentences"]) for d in documents) for documents in documents_per_example]

    return {
        "query_words": [len(paper_words(q)) for q in batch["query"]],
        "description_words": [len(paper_words(d)) for d in batch["description"]],
        "relevant": [len(docs) for docs in batch["relevant_documents"]],
        "irrelevant": [len(docs) for docs in batch["irrelevant_documents"]],
        "relevant_sentences": sentence_counts(batch["relevant_documents"]),
        "irrelevant_sentences": sentence_counts(batch["irrelevant_documents"]),
    }


def stats(dataset_dict: datasets.DatasetDict) -> dict:
    """Zhang'20 Table 2 statistics over all splits together (words counted by
    :func:`paper_words`; document totals are query-document pairs), plus split sizes and the
    number of queries per source."""
    import datasets

    splits = {name: ds.num_rows for name, ds in dataset_dict.items()}
    combined = datasets.concatenate_datasets(list(dataset_dict.values()))
    totals: Counter = Counter()
    sources: Counter = Counter()
    without_irrelevant = 0
    for batch in combined.iter(batch_size=256):
        counts = _example_counts(batch)
        totals.update({column: sum(values) for column, values in counts.items()})
        sources.update(batch["source"])
        without_irrelevant += sum(1 for n in counts["irrelevant"] if n == 0)
    queries = combined.num_rows

    def ratio(numerator: float, denominator: float) -> float:
        return round(numerator / denominator, 2) if denominator else 0.0

    return {
        "queries": queries,
        "avg_query_words": ratio(totals["query_words"], queries),
        "avg_relevant_documents": ratio(totals["relevant"], queries),
        "avg_irrelevant_documents": ratio(totals["irrelevant"], queries),
        "relevant_documents": totals["relevant"],
        "irrelevant_documents": totals["irrelevant"],
        "avg_relevant_document_sentences": ratio(totals["relevant_sentences"], totals["relevant"]),
        "avg_irrelevant_document_sentences": ratio(totals["irrelevant_sentences"], totals["irrelevant"]),
        "avg_description_words": ratio(totals["description_words"], queries),
        "queries_without_irrelevant_documents": without_irrelevant,
        **splits,
        "queries_per_source": dict(sorted(sources.items())),
    }


def corpus_stats(config: str | None = None, data_dir: str | Path | None = None) -> dict:
    """Statistics of a config for ``hf-querygen corpus stats``: split sizes and Zhang'20 Table 2,
    each beside the paper's number, plus queries per source and what the build removed."""
    config = config or "all"
    dataset_dict, log = load_corpus(CORPUS_NAME, config, data_dir=data_dir, return_log=True)
    ours = stats(dataset_dict)
    summary = log.summary()
    return {
        "config": config,
        "splits": {split: {"queries": ours[split], "paper": PAPER_TABLE2[split]} for split in SPLITS},
        "beside_paper": {
            key: {"ours": ours[key], "paper": PAPER_TABLE2[key]} for key in PAPER_TABLE2 if key not in SPLITS
        },
        "queries_per_source": ours["queries_per_source"],
        "removed": summary["removed"],
        "skipped_malformed": summary["skipped_malformed"],
    }
