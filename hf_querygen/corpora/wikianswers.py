"""``wikianswers``: question corpora for keyword -> question generation (Ding & Balog, ICTIR'18).

Ding & Balog need (i) a large corpus of natural-language questions grouped into paraphrase
clusters (the cluster C_q of a question feeds the paraphrase-based query model, Sec. 3.1.3, and the
training-data filter, Eq. 8) and (ii) a small seed set of hand-labelled keyword-question pairs
(Sec. 4, T_0). The WikiAnswers dump they used is not in ``shared/data``; these configs are the real
stand-ins:

* ``comqa``: ComQA's WikiAnswers questions in crowd-made paraphrase clusters (+ answers);
* ``paralex``: WikiAnswers paraphrase pairs (Paralex, lemmatised), clustered by connected pairs;
* ``quora``: Quora duplicate-question pairs, clustered the same way;
* ``wellformedness``: Paralex queries rated for well-formedness (Faruqui & Das, EMNLP'18);
* ``wellformedness_filtered``: the same, after Ding'18's question filter (see below);
* ``seed_pairs``: QALD English questions with their hand-written keywords (stand-in for T_0),
  with every distinct keyword annotation of the question as additional references.

Every question row carries ``num_terms`` and ``passes_question_filter``: Ding'18 Sec. 4 keeps
"only questions that start with WH words or auxiliary verbs" (the heuristic of Dror et al.) and
"consisting of 5-12 terms" (:func:`passes_question_filter`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ._base import (
    ParseLog,
    check_unique,
    collapse_whitespace,
    dataset_from_columns,
    grouped_split,
    iter_lines,
    load_corpus,
    normalize_for_matching,
    quiet_progress,
    read_aligned_lines,
    read_json,
    register_corpus,
)
from ._qald import deduplicated_qald_pairs, iter_qald_entries

__all__ = [
    "AUXILIARY_VERBS",
    "CONFIGS",
    "MAX_QUESTION_TERMS",
    "MIN_QUESTION_TERMS",
    "WH_WORDS",
    "build_wikianswers",
    "corpus_stats",
    "passes_question_filter",
    "question_terms",
]

CONFIGS = {
    "comqa": "ComQA WikiAnswers questions in paraphrase clusters, with answers (official train/test)",
    "paralex": "WikiAnswers paraphrase pairs (Paralex, lemmatised; ParaGEN validation split), clustered",
    "quora": "Quora Question Pairs duplicates (ParaGEN validation split), clustered",
    "wellformedness": "Query-wellformedness: 25,100 Paralex queries with their well-formedness rating",
    "wellformedness_filtered": "Query-wellformedness after Ding'18's filter (WH/auxiliary first, 5-12 terms)",
    "seed_pairs": "QALD English questions with hand-written keyword queries (stand-in for Ding'18 T_0)",
}

# Ding & Balog Sec. 4 (dataset) and Sec. 5.1.
PAPER_STATISTICS = {
    "paraphrase_clusters_after_filter": 3168878,
    "avg_questions_per_cluster": 26.05,
    "hand_labelled_pairs": 1000,
    "hand_labelled_clusters": 200,
    "question_terms": "5-12",
    "keyword_query_terms": "3-7",
}

WH_WORDS = frozenset("what which who whom whose when where why how".split())
AUXILIARY_VERBS = frozenset(
    "am is are was were be been being do does did have has had".split()
    + "can could will would shall should may might must".split()
)
MIN_QUESTION_TERMS, MAX_QUESTION_TERMS = 5, 12

COMQA_DIR = "wikianswers/comqa"
PARALEX_DIR = "wikianswers/paralex"
QUORA_DIR = "wikianswers/quora"
WELLFORMEDNESS_DIR = "wikianswers/query-wellformedness"
WELL_FORMED_RATING = 0.8  # Faruqui & Das: a query is well-formed when at least 4 of 5 raters say so


def question_terms(question: str) -> list[str]:
    """The terms Ding'18's length filter counts: words of :func:`normalize_for_matching`."""
    return normalize_for_matching(question).split()


def passes_question_filter(question: str) -> bool:
    """Ding & Balog Sec. 4 preprocessing: the question starts with a WH-word or an auxiliary verb
    (Dror et al.'s heuristic for natural-language questions) and has 5-12 terms."""
    terms = question_terms(question)
    return MIN_QUESTION_TERMS <= len(terms) <= MAX_QUESTION_TERMS and (
        terms[0] in WH_WORDS or terms[0] in AUXILIARY_VERBS
    )


def _with_filter_fields(batch: dict, keep_only_passing: bool = False) -> dict:
    """Add ``num_terms`` and ``passes_question_filter``; drop the failing rows when asked (a batched
    map that returns fewer rows filters without leaving an index mapping behind)."""
    passing = [passes_question_filter(q) for q in batch["question"]]
    batch = {
        **batch,
        "num_terms": [len(question_terms(q)) for q in batch["question"]],
        "passes_question_filter": passing,
    }
    if keep_only_passing:
        batch = {
            name: [v for v, keep in zip(values, passing, strict=True) if keep]
            for name, values in batch.items()
        }
    return batch


def _features(config: str):
    import datasets

    text, words = datasets.Value("string"), datasets.List(datasets.Value("string"))
    filter_fields = {"num_terms": datasets.Value("int32"), "passes_question_filter": datasets.Value("bool")}
    if config in ("comqa", "paralex", "quora"):
        # ComQA is JSON: its rows point at the 0-based record of the array, not at a line.
        origin = (
            {"answers": words, "source_record": datasets.Value("int32")}
            if config == "comqa"
            else {"source_line": datasets.Value("int32")}
        )
        return datasets.Features(
            {
                "id": text,
                "cluster_id": text,
                "question": text,
                "paraphrases": words,
                **origin,
                **filter_fields,
            }
        )
    if config.startswith("wellformedness"):
        return datasets.Features(
            {
                "id": text,
                "query": text,
                "question": text,
                "rating": datasets.Value("float32"),
                "is_well_formed": datasets.Value("bool"),
                "source_line": datasets.Value("int32"),
                **filter_fields,
            }
        )
    return datasets.Features(  # seed_pairs
        {
            "id": text,
            "question": text,
            "keyword_query": text,
            "keyword_phrases": words,
            "keywords": words,
            "keyword_query_variants": words,
            "source": text,
            "source_file": text,
            **filter_fields,
        }
    )


# ---------------------------------------------------------------- ComQA
def _comqa_answers(record: dict) -> list[str]:
    # An unanswered question is stored as [""]; keep only real answers.
    return [collapse_whitespace(a) for a in record.get("answers") or [] if isinstance(a, str) and a.strip()]


def _comqa_rows(data_dir: Path, log: ParseLog) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {"train": [], "test": []}
    rel = f"{COMQA_DIR}/comqa_train.json"
    repeats = 0
    seen: dict[str, int | str | None] = {}
    for index, cluster in enumerate(read_json(data_dir / rel, rel, log, list) or []):
        questions = cluster.get("questions") if isinstance(cluster, dict) else None
        cluster_id = cluster.get("cluster_id") if isinstance(cluster, dict) else None
        if (
            not isinstance(cluster_id, str)
            or not isinstance(questions, list)
            or not questions
            or not all(isinstance(q, str) and q.strip() for q in questions)
        ):
            log.error(rel, f"record {index}", 'cluster needs a "cluster_id" and a non-empty "questions" list')
            continue
        if not check_unique(cluster_id, f"record {index}", seen, rel, "cluster_id", log):
            continue
        distinct = list(dict.fromkeys(collapse_whitespace(q) for q in questions))
        repeats += len(questions) - len(distinct)
        for position, question in enumerate(distinct):
            rows["train"].append(
                {
                    "id": f"comqa:{cluster_id}:{position}",
                    "cluster_id": f"comqa:{cluster_id}",
                    "question": question,
                    "paraphrases": [q for q in distinct if q != question],
                    "answers": _comqa_answers(cluster),
                    "source_record": index,
                }
            )
    log.removed("comqa: question repeated inside its train cluster", repeats)
    rel = f"{COMQA_DIR}/comqa_test.json"
    seen = {}
    for index, record in enumerate(read_json(data_dir / rel, rel, log, list) or []):
        question = record.get("question") if isinstance(record, dict) else None
        question_id = record.get("id") if isinstance(record, dict) else None
        if not isinstance(question, str) or not question.strip() or not isinstance(question_id, int):
            log.error(rel, f"record {index}", 'test record needs an integer "id" and a non-empty "question"')
            continue
        if not check_unique(str(question_id), f"record {index}", seen, rel, "id", log):
            continue
        # The test release has no cluster ids: every test question is its own cluster.
        rows["test"].append(
            {
                "id": f"comqa:test-{question_id}",
                "cluster_id": f"comqa:test-{question_id}",
                "question": collapse_whitespace(question),
                "paraphrases": [],
                "answers": _comqa_answers(record),
                "source_record": index,
            }
        )
    return rows


# ---------------------------------------------------------------- aligned pair files
def _paired_rows(data_dir: Path, folder: str, source: str, log: ParseLog) -> list[dict]:
    """Questions of the aligned ``val.q1``/``val.q2`` files, clustered by connected pairs.

    Line i of both files is a paraphrase pair, checked pair by pair by
    :func:`~hf_querygen.corpora._base.read_aligned_lines` (files that fall out of step are an error
    naming the line). Pairs sharing a question (normalised by :func:`normalize_for_matching`) join
    one cluster (union-find), the paraphrase clusters that Ding'18 reads from WikiAnswers. One row
    per distinct question, at its first occurrence.
    """
    rels = (f"{folder}/val.q1", f"{folder}/val.q2")
    pairs = read_aligned_lines((data_dir / rels[0], data_dir / rels[1]), rels, log)
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    # normalised question -> (line, file 1 or 2, first spelling); a pair with a malformed side is skipped
    first_seen: dict[str, tuple[int, int, str]] = {}
    identical = occurrences = 0
    for line, first_text, second_text in pairs:
        first_text, second_text = collapse_whitespace(first_text), collapse_whitespace(second_text)
        keys = [normalize_for_matching(first_text), normalize_for_matching(second_text)]
        for which, (key, text) in enumerate(zip(keys, (first_text, second_text), strict=True), start=1):
            first_seen.setdefault(key, (line, which, text))
        occurrences += 2
        identical += keys[0] == keys[1]
        root_a, root_b = find(keys[0]), find(keys[1])
        if root_a != root_b:
            parent[max(root_a, root_b)] = min(root_a, root_b)
    log.removed(f"{source}: pair of two identical questions (kept once, no paraphrase)", identical)
    log.removed(
        f"{source}: repeated occurrence of a question in other pairs (one row per distinct question)",
        occurrences - identical - len(first_seen),
    )
    clusters: dict[str, list[str]] = {}
    for key in sorted(first_seen, key=first_seen.__getitem__):
        clusters.setdefault(find(key), []).append(key)
    rows = []
    for members in clusters.values():
        cluster_line = first_seen[members[0]][0]
        texts = [first_seen[key][2] for key in members]
        for key in members:
            line, which, text = first_seen[key]
            rows.append(
                {
                    "id": f"{source}:q{which}:{line}",
                    "cluster_id": f"{source}:{cluster_line}",
                    "question": text,
                    "paraphrases": [t for t in texts if t != text],
                    "source_line": line,
                }
            )
    return rows


# ---------------------------------------------------------------- query wellformedness
def _wellformedness_rows(data_dir: Path, log: ParseLog) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    first_seen: dict[str, str] = {}  # normalised query -> "file:line" of its first row
    repeats: dict[str, int] = {}
    for split, file_name in (("train", "train.tsv"), ("validation", "dev.tsv"), ("test", "test.tsv")):
        rel = f"{WELLFORMEDNESS_DIR}/{file_name}"
        rows[split] = []
        for line in iter_lines(data_dir / rel, log, rel):
            number = line.number
            columns = line.text.split("\t")
            if len(columns) != 2 or not columns[0].strip():
                log.error(rel, number, f"expected '<query>\\t<rating>', got {len(columns)} column(s)")
                continue
            try:
                rating = float(columns[1])
            except ValueError:
                rating = -1.0
            if not 0.0 <= rating <= 1.0:
                log.error(rel, number, f"rating {columns[1]!r} is not a number in [0, 1]")
                continue
            query = collapse_whitespace(columns[0])
            # A repeated query (inside a file or across the splits) is dropped: the first row in
            # train -> dev -> test order is kept, so no query is in two splits (dataset card).
            key = normalize_for_matching(query)
            if key in first_seen:
                where = f"{rel} repeats {first_seen[key].rsplit(':', 1)[0]}"
                repeats[where] = repeats.get(where, 0) + 1
                continue
            first_seen[key] = f"{rel}:{number}"
            rows[split].append(
                {
                    "id": f"wellformedness:{split}:{number}",
                    "query": query,
                    # the upstream tokenisation puts a space before the final '?'
                    "question": query[:-2] + "?" if query.endswith(" ?") else query,
                    "rating": rating,
                    "is_well_formed": rating >= WELL_FORMED_RATING,
                    "source_line": number,
                }
            )
    for where, count in sorted(repeats.items()):
        log.removed(f"wellformedness: repeated query ({where}; first row kept)", count)
    return rows


# ---------------------------------------------------------------- QALD seed pairs
def _seed_pair_rows(data_dir: Path, log: ParseLog) -> list[dict]:
    variants: dict[str, list[str]] = {}
    for entry in iter_qald_entries(data_dir, ParseLog(strict=log.strict)):
        if entry.language == "en" and entry.keyword_phrases:
            keyword_query = ", ".join(entry.keyword_phrases)
            options = variants.setdefault(normalize_for_matching(entry.question), [])
            if normalize_for_matching(keyword_query) not in map(normalize_for_matching, options):
                options.append(keyword_query)
    rows = []
    for entry in deduplicated_qald_pairs(data_dir, "en", log):
        keyword_query = ", ".join(entry.keyword_phrases)
        others = [v for v in variants[normalize_for_matching(entry.question)] if v != keyword_query]
        rows.append(
            {
                "id": f"qald-{entry.edition}:{Path(entry.file).stem}:{entry.question_id}",
                "question": entry.question,
                "keyword_query": keyword_query,
                "keyword_phrases": entry.keyword_phrases,
                "keywords": list(dict.fromkeys(normalize_for_matching(keyword_query).split())),
                "keyword_query_variants": [keyword_query, *others],
                "source": f"qald-{entry.edition}",
                "source_file": entry.file,
            }
        )
    return rows


# ---------------------------------------------------------------- assembly
def _grouped(rows: list[dict], group_of: Callable[[dict], str], salt: str) -> dict[str, list[dict]]:
    """Liu'18-style 20% test / 10% validation split, grouped (clusters never straddle splits)."""
    split_of = grouped_split([group_of(row) for row in rows], 0.2, 0.1, salt=salt)
    return {
        split: [r for r, s in zip(rows, split_of, strict=True) if s == split]
        for split in ("train", "validation", "test")
    }


@register_corpus(
    "wikianswers",
    configs=CONFIGS,
    default_config="comqa",
    description="Question corpora and seed keyword-question pairs for keyword -> question (Ding & Balog '18)",
    license="other",
    license_details=(
        "Mixed: query-wellformedness CC BY-SA 4.0; QALD MIT; ComQA, Paralex (via ParaGEN) and Quora "
        "Question Pairs: terms of their distributors, no license stated in the source repositories."
    ),
)
def build_wikianswers(config: str, data_dir: Path, log: ParseLog):
    """Build one ``wikianswers`` config as a ``DatasetDict``."""
    import datasets

    if config == "comqa":
        splits = _comqa_rows(data_dir, log)
    elif config in ("paralex", "quora"):
        folder = PARALEX_DIR if config == "paralex" else QUORA_DIR
        splits = _grouped(
            _paired_rows(data_dir, folder, config, log), lambda row: row["cluster_id"], salt=config
        )
    elif config.startswith("wellformedness"):
        splits = _wellformedness_rows(data_dir, log)
    else:
        splits = _grouped(
            _seed_pair_rows(data_dir, log),
            lambda row: normalize_for_matching(row["question"]),
            salt="seed_pairs",
        )
    features = _features(config)
    result = {}
    with quiet_progress():
        for split, rows in splits.items():
            base = datasets.Features(
                {k: v for k, v in features.items() if k not in ("num_terms", "passes_question_filter")}
            )
            columns = {name: [row[name] for row in rows] for name in base}
            dataset = dataset_from_columns(columns, base)
            filtered = config == "wellformedness_filtered"
            result[split] = dataset.map(
                _with_filter_fields,
                batched=True,
                features=features,
                remove_columns=dataset.column_names,
                fn_kwargs={"keep_only_passing": filtered},
            )
            if filtered:
                log.removed(
                    f"wellformedness {split}: fails Ding'18 filter (WH/auxiliary first, 5-12 terms)",
                    dataset.num_rows - result[split].num_rows,
                )
    return datasets.DatasetDict(result)


def _statistics(columns: dict[str, list]) -> dict:
    n = max(len(columns["question"]), 1)
    entry = {
        "examples": len(columns["question"]),
        "avg_question_terms": round(sum(columns["num_terms"]) / n, 2),
        "passes_question_filter": round(sum(columns["passes_question_filter"]) / n, 4),
    }
    if "cluster_id" in columns:
        clusters = len(set(columns["cluster_id"]))
        entry.update(
            clusters=clusters, avg_questions_per_cluster=round(len(columns["question"]) / max(clusters, 1), 2)
        )
    if "is_well_formed" in columns:
        entry["well_formed_share"] = round(sum(columns["is_well_formed"]) / n, 4)
    if "keywords" in columns:
        entry["avg_keyword_terms"] = round(sum(len(k) for k in columns["keywords"]) / n, 2)
        entry["with_keyword_variants"] = sum(len(v) > 1 for v in columns["keyword_query_variants"])
    return entry


def corpus_stats(config: str, data_dir: str | Path | None = None) -> dict:
    """Statistics of one config beside Ding'18 Sec. 4: questions, clusters, question lengths,
    the share passing the question filter (and keyword lengths for ``seed_pairs``)."""
    dataset_dict, log = load_corpus("wikianswers", config, data_dir=data_dir, return_log=True)
    # whole columns at once: iterating a datasets Column decodes row by row
    per_split = {split: ds.to_dict() for split, ds in dataset_dict.items()}
    pooled = {
        name: [v for columns in per_split.values() for v in columns[name]]
        for name in next(iter(per_split.values()))
    }
    stats: dict = {"config": config, "splits": {split: _statistics(c) for split, c in per_split.items()}}
    stats["splits"]["all"] = total = _statistics(pooled)
    if config == "seed_pairs":
        stats["beside_paper"] = {
            "hand_labelled_pairs": {
                "ours": total["examples"],
                "paper": PAPER_STATISTICS["hand_labelled_pairs"],
            },
        }
    elif "clusters" in total:
        stats["beside_paper"] = {
            "paraphrase_clusters": {
                "ours": total["clusters"],
                "paper": PAPER_STATISTICS["paraphrase_clusters_after_filter"],
            },
            "avg_questions_per_cluster": {
                "ours": total["avg_questions_per_cluster"],
                "paper": PAPER_STATISTICS["avg_questions_per_cluster"],
            },
        }
    stats["build_log"] = log.summary()
    stats["paper"] = PAPER_STATISTICS
    return stats
