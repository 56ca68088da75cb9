"""The question corpus Q, its paraphrase clusters C_q and the seed pairs T_0 (Ding & Balog, Sec. 4).

Our stand-ins for the WikiAnswers dump (see ``dataset_scripts/wikianswers/README.md``):

* Q: every distinct question (by :func:`normalize_for_matching`) of the ``comqa``, ``paralex`` and
  ``quora`` configs (all splits) and of ``wellformedness_filtered`` (the ``wellformedness`` queries
  that pass the paper's filter: WH-word or auxiliary verb first, 5-12 terms);
* C_q: the connected components of "same upstream cluster" (ComQA clusters, Paralex / Quora pairs,
  already clustered per config) and "same normalised text" (a question that occurs in two configs
  joins their clusters): union-find done by ``scipy.sparse.csgraph.connected_components``, so
  there is no Python loop over the rows;
* T_0: ``seed_pairs`` (QALD questions with hand-written keywords); every question of T_0 is
  removed from Q (the paper's Q holds no hand-labelled question).

C_q here *includes* q itself (the paper's "paraphrase cluster of q", Sec. 5.1); the ``paraphrases``
column holds the other members that are in Q.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..corpora import load_corpus
from ..corpora._base import normalize_for_matching, quiet_progress
from .kqgm import LengthPrior

__all__ = [
    "QUESTION_CONFIGS",
    "QuestionCorpus",
    "build_question_corpus",
    "connected_clusters",
    "load_seed_pairs",
    "seed_length_prior",
]

QUESTION_CONFIGS: tuple[str, ...] = ("comqa", "paralex", "quora", "wellformedness_filtered")


@dataclass
class QuestionCorpus:
    """Q with its clusters.

    ``questions`` columns: ``id`` (the first upstream id of the text), ``question`` (upstream text),
    ``text`` (normalised, space-separated terms), ``cluster_id`` (``"c<component>"``),
    ``paraphrases`` (normalised texts of the other members of C_q that are in Q).
    ``stats`` counts what each step kept and removed.
    """

    questions: datasets.Dataset
    stats: dict = field(default_factory=dict)


def _normalise_batch(batch: dict) -> dict:
    return {"text": [normalize_for_matching(q) for q in batch["question"]]}


def _rows(config: str, data_dir: str | os.PathLike | None) -> datasets.Dataset:
    """All splits of one wikianswers config as (id, question, text, group) rows."""
    parts = []
    for ds in load_corpus("wikianswers", config, data_dir=data_dir).values():
        # wellformedness rows have no cluster: each question is its own upstream group.
        group = ds["cluster_id"] if "cluster_id" in ds.column_names else [f"{config}:{i}" for i in ds["id"]]
        ds = ds.select_columns(["id", "question"]).add_column("group", group)
        parts.append(ds)
    ds = datasets.concatenate_datasets(parts)
    with quiet_progress():
        return ds.map(_normalise_batch, batched=True, batch_size=10_000)


def load_seed_pairs(data_dir: str | os.PathLike | None = None, splits=None) -> datasets.Dataset:
    """T_0 (``seed_pairs``), the given splits concatenated (default: all), with a ``text`` column."""
    dd = load_corpus("wikianswers", "seed_pairs", data_dir=data_dir)
    splits = list(splits or dd.keys())
    ds = datasets.concatenate_datasets([dd[s] for s in splits])
    with quiet_progress():
        return ds.map(_normalise_batch, batched=True, batch_size=10_000)


def seed_length_prior(data_dir: str | os.PathLike | None = None):
    """P(s) of the KQGM (Sec. 5) from the keyword-query lengths of T_0 train (never the test split)."""
    seeds = load_seed_pairs(data_dir, splits=["train"])
    return LengthPrior.from_lengths(len(normalize_for_matching(k).split()) for k in seeds["keyword_query"])


def connected_clusters(texts: np.ndarray, groups: np.ndarray, num_texts: int, num_groups: int) -> np.ndarray:
    """Union-find without a Python loop: the connected components of the bipartite graph that links
    each row's text code (``texts``, shape (rows,)) to its upstream group code (``groups``). Two texts
    end in one cluster when a chain of shared groups / shared texts joins them (transitive merge).
    Returns one cluster label per text code, shape (num_texts,)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    size = num_texts + num_groups
    graph = coo_matrix((np.ones(len(texts), dtype=np.int8), (texts, groups + num_texts)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    return labels[:num_texts]


def build_question_corpus(
    data_dir: str | os.PathLike | None = None,
    configs: tuple[str, ...] = QUESTION_CONFIGS,
    seed_pairs: datasets.Dataset | None = None,
) -> QuestionCorpus:
    """Build Q and C_q (see the module docstring); T_0 questions are removed from Q."""
    stats: dict = {"rows_per_config": {}}
    parts = []
    for config in configs:
        ds = _rows(config, data_dir)
        stats["rows_per_config"][config] = len(ds)
        parts.append(ds)
    table = datasets.concatenate_datasets(parts).data.table
    table = table.filter(pc.not_equal(table["text"], ""))
    stats["rows"] = table.num_rows

    text_codes = pc.dictionary_encode(table["text"]).combine_chunks()
    group_codes = pc.dictionary_encode(table["group"]).combine_chunks()
    n_text = len(text_codes.dictionary)
    rows = text_codes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    groups = group_codes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    labels = connected_clusters(rows, groups, n_text, len(group_codes.dictionary))

    # One row per distinct text: its first occurrence.
    first = np.full(n_text, -1, dtype=np.int64)
    order = np.arange(len(rows))[::-1]  # reversed so that the first occurrence is written last
    first[rows[order]] = order
    distinct = table.take(pa.array(first)).select(["id", "question", "text"])
    cluster = labels
    distinct = distinct.append_column("cluster", pa.array(cluster))
    stats["distinct_questions"] = distinct.num_rows

    seeds = seed_pairs if seed_pairs is not None else load_seed_pairs(data_dir)
    seed_texts = pa.array(sorted(set(seeds["text"])))
    in_seed = pc.is_in(distinct["text"], value_set=seed_texts)
    stats["removed_seed_questions"] = int(pc.sum(in_seed).as_py() or 0)
    distinct = distinct.filter(pc.invert(in_seed))

    # The other members of each cluster (normalised texts), by a grouped aggregation and a join.
    members = distinct.group_by("cluster").aggregate([("text", "list")])
    position = np.zeros(int(labels.max()) + 1, dtype=np.int64)
    position[members["cluster"].to_numpy()] = np.arange(members.num_rows)
    joined = distinct.sort_by("id")
    member_lists = members["text_list"].take(pa.array(position[joined["cluster"].to_numpy()]))
    joined = joined.append_column("text_list", member_lists)
    texts = joined["text"].to_pylist()
    lists = joined["text_list"].to_pylist()
    paraphrases = [[m for m in ms if m != t] for t, ms in zip(texts, lists, strict=True)]
    sizes = np.array([len(p) + 1 for p in paraphrases])
    stats["questions"] = len(texts)
    stats["clusters"] = int(len(np.unique(joined["cluster"].to_numpy())))
    stats["questions_per_cluster"] = float(len(texts) / max(stats["clusters"], 1))
    stats["questions_with_paraphrases"] = int((sizes > 1).sum())
    questions = datasets.Dataset.from_dict(
        {
            "id": joined["id"].to_pylist(),
            "question": joined["question"].to_pylist(),
            "text": texts,
            "cluster_id": [f"c{c}" for c in joined["cluster"].to_pylist()],
            "paraphrases": paraphrases,
        },
        features=datasets.Features(
            {
                "id": datasets.Value("string"),
                "question": datasets.Value("string"),
                "text": datasets.Value("string"),
                "cluster_id": datasets.Value("string"),
                "paraphrases": datasets.List(datasets.Value("string")),
            }
        ),
    )
    return QuestionCorpus(questions=questions, stats=stats)
