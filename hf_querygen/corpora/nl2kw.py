"""``nl2kw``: natural-language query -> keyword query pairs (stand-in for Liu et al. CIKM'18's
unreleased Baidu Knows corpus; also the task of Song et al. SIGIR'17).

Config ``en`` pools every English source in ``shared/data``:

* TREC topic files (``trec-topics/``): description -> title. Ad hoc 51-200, WT10g 451-550,
  Robust04, Terabyte 2004-06, Core17/18 (SGML) and Web 2009-2014 (XML). Core17/18 re-use Robust04
  topics: exact repeats of (title, description) are removed, reworded ones kept under the same
  topic id (so they land in the same split).
* TREC-COVID round 5 (question -> query) and EPIC-QA (TAC 2020; question -> query). EPIC-QA
  questions were written for TREC-COVID topics and share their keyword queries: they get the
  COVID topic as ``topic_id`` so that a topic's questions never straddle splits.
* UQV100: every distinct crowd query variation, paired with the description of the Web-track topic
  (or sub-topic) its backstory was written for; ``query_count`` = how many workers typed it.
* QALD-2 ... 9 English questions -> their hand-written keywords (deduplicated across editions).

Every other language with QALD keyword annotations is a config of its own (QALD only).

Each example carries the keywords as words normalised by :func:`normalize_for_matching`, split into
``extractive_keywords`` (occurring in the normalised ``nl_query``) and ``generative_keywords``
(Liu'18 Sec. 3 and Table 3). Splits follow Liu'18 Sec. 5.1 (test 20%, validation 10% of the rest),
grouped by ``topic_id`` and deterministic (:func:`grouped_split`).

The source readers are :mod:`._nl2kw_trec` (TREC, TREC-COVID, EPIC-QA), :mod:`._nl2kw_uqv100` and
:mod:`._qald`; the pairs and their keyword fields are in :mod:`._nl2kw_records`. This module assembles
them (source priority, de-duplication, splits) and reports the corpus statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ._base import (
    ParseLog,
    dataset_from_columns,
    grouped_split,
    load_corpus,
    normalize_for_matching,
    quiet_progress,
    register_corpus,
)
from ._nl2kw_records import _add_keyword_fields, _features, _Pair, split_keywords
from ._nl2kw_trec import (
    _TREC_SGML_FILES,
    TREC_DIR,
    WebTopic,
    _iter_covid,
    _iter_epicqa,
    _iter_trec_sgml,
    read_web_topics,
)
from ._nl2kw_uqv100 import UQV100_FILE, _iter_uqv100
from ._qald import deduplicated_qald_pairs

__all__ = [
    "CONFIGS",
    "PAPER_STATISTICS",
    "QALD_LANGUAGES",
    "TREC_DIR",
    "UQV100_FILE",
    "WebTopic",
    "build_nl2kw",
    "corpus_stats",
    "normalize_for_matching",
    "read_web_topics",
    "split_keywords",
]


QALD_LANGUAGES = ("de", "es", "fa", "fr", "hi_IN", "it", "nl", "pt", "pt_BR", "ro", "ru")
CONFIGS = {
    "en": "English: TREC topics (description -> title), TREC-COVID and EPIC-QA (question -> query), "
    "UQV100 variations (topic description -> user query), QALD-2..9 (question -> keywords)",
    **{lang: f"QALD-2..9 questions -> keyword annotations in language {lang!r}" for lang in QALD_LANGUAGES},
}

# Liu'18 Table 1 and Sec. 3/5.1 (Baidu Knows, Chinese).
PAPER_STATISTICS = {
    "question_keyword_query_pairs": 11296,
    "avg_keywords_per_keyword_query": 3.05,
    "extractive_keyword_share": 0.55,
    "split": "train/test 8:2, 10% of train as validation",
}


# ---------------------------------------------------------------- QALD
def _iter_qald(data_dir: Path, language: str, log: ParseLog) -> Iterator[_Pair]:
    for entry in deduplicated_qald_pairs(data_dir, language, log):
        key = normalize_for_matching(entry.question)
        yield _Pair(
            id=f"qald-{entry.edition}:{Path(entry.file).stem}:{entry.question_id}:{language}",
            source=f"qald-{entry.edition}",
            topic_id=f"qald:{key}",  # one topic per distinct question
            nl_query=entry.question,
            keyword_query=", ".join(entry.keyword_phrases),
            language=language,
            source_file=entry.file,
        )


# ---------------------------------------------------------------- assembly
def _english_pairs(data_dir: Path, log: ParseLog) -> Iterator[_Pair]:
    for file_name, source in _TREC_SGML_FILES:
        yield from _iter_trec_sgml(data_dir, file_name, source, log)
    web_topics = read_web_topics(data_dir, log)
    for topic in web_topics.values():
        yield _Pair(
            f"trec-web:{topic.number}",
            "trec-web",
            f"trec-web:{topic.number}",
            topic.description,
            topic.query,
            "en",
            topic.file,
        )
    covid = list(_iter_covid(data_dir, log))
    yield from covid
    yield from _iter_epicqa(
        data_dir, {normalize_for_matching(p.keyword_query): p.topic_id for p in covid}, log
    )
    yield from _iter_uqv100(data_dir, web_topics, log)
    yield from _iter_qald(data_dir, "en", log)


def _deduplicate(pairs: Iterator[_Pair], log: ParseLog) -> list[_Pair]:
    """Drop repeats of a normalised (nl_query, keyword_query) pair; the first source wins."""
    kept: dict[tuple[str, str], _Pair] = {}
    removed: Counter = Counter()
    for pair in pairs:
        key = (normalize_for_matching(pair.nl_query), normalize_for_matching(pair.keyword_query))
        if key in kept:
            first = kept[key]
            removed[f"duplicate (nl_query, keyword_query) pair: {pair.source} repeats {first.source}"] += 1
            if first.source == pair.source:  # UQV100 spellings that normalise alike: pool their workers
                first.query_count += pair.query_count
            continue
        kept[key] = pair
    for reason, count in sorted(removed.items()):
        log.removed(reason, count)
    return list(kept.values())


@register_corpus(
    "nl2kw",
    configs=CONFIGS,
    default_config="en",
    description="Natural-language query -> keyword query pairs (Liu et al. CIKM'18; Song et al. SIGIR'17)",
    license="other",
    license_details=(
        "Mixed: TREC / TREC-COVID / EPIC-QA topics are distributed publicly by NIST (no license file); "
        "UQV100: 'freely available' (no license stated); QALD: MIT."
    ),
)
def build_nl2kw(config: str, data_dir: Path, log: ParseLog):
    """Build one ``nl2kw`` config as a ``DatasetDict`` with train / validation / test splits."""
    import datasets

    raw = _english_pairs(data_dir, log) if config == "en" else _iter_qald(data_dir, config, log)
    pairs = sorted(_deduplicate(raw, log), key=lambda p: p.id)
    split_of = grouped_split(
        [p.topic_id for p in pairs], test_fraction=0.2, validation_fraction=0.1, salt="nl2kw"
    )
    features = _features()
    base_features = datasets.Features({name: features[name] for name in _Pair.__dataclass_fields__})
    splits = {}
    for split in ("train", "validation", "test"):
        # One table per split (not select() over one table): no index mapping to drag along.
        members = [p for p, s in zip(pairs, split_of, strict=True) if s == split]
        columns = {name: [getattr(p, name) for p in members] for name in base_features}
        dataset = dataset_from_columns(columns, base_features)
        with quiet_progress():
            dataset = dataset.map(_add_keyword_fields, batched=True, features=features)
        splits[split] = dataset.select_columns(list(features))
    return datasets.DatasetDict(splits)


# ---------------------------------------------------------------- statistics
def corpus_stats(config: str, data_dir: str | Path | None = None) -> dict:
    """Paper-style statistics of one config (Liu'18 Table 1 / Sec. 3), with the paper's numbers."""
    dataset_dict, log = load_corpus("nl2kw", config, data_dir=data_dir, return_log=True)
    stats: dict = {"config": config, "splits": {}}
    totals = Counter()
    sources: Counter = Counter()
    for split, ds in dataset_dict.items():
        columns = ds.to_dict()  # whole columns at once: iterating a datasets Column decodes row by row
        n_keywords = sum(len(k) for k in columns["keywords"])
        n_extractive = sum(len(k) for k in columns["extractive_keywords"])
        n_words = sum(len(normalize_for_matching(q).split()) for q in columns["nl_query"])
        sources.update(columns["source"])
        stats["splits"][split] = {
            "examples": ds.num_rows,
            "topics": len(set(columns["topic_id"])),
            "avg_nl_query_words": round(n_words / max(ds.num_rows, 1), 2),
            "avg_keywords": round(n_keywords / max(ds.num_rows, 1), 2),
            "extractive_keyword_share": round(n_extractive / max(n_keywords, 1), 4),
        }
        totals.update(examples=ds.num_rows, keywords=n_keywords, extractive=n_extractive, words=n_words)
    stats["total"] = {
        "examples": totals["examples"],
        "avg_nl_query_words": round(totals["words"] / max(totals["examples"], 1), 2),
        "avg_keywords": round(totals["keywords"] / max(totals["examples"], 1), 2),
        "extractive_keyword_share": round(totals["extractive"] / max(totals["keywords"], 1), 4),
    }
    stats["beside_paper"] = {
        "question_keyword_query_pairs": {
            "ours": totals["examples"],
            "paper": PAPER_STATISTICS["question_keyword_query_pairs"],
        },
        "avg_keywords_per_keyword_query": {
            "ours": stats["total"]["avg_keywords"],
            "paper": PAPER_STATISTICS["avg_keywords_per_keyword_query"],
        },
        "extractive_keyword_share": {
            "ours": stats["total"]["extractive_keyword_share"],
            "paper": PAPER_STATISTICS["extractive_keyword_share"],
        },
    }
    stats["examples_per_source"] = dict(sorted(sources.items()))
    stats["build_log"] = log.summary()
    stats["paper"] = PAPER_STATISTICS
    return stats
