"""Corpus builders: raw upstream files -> typed ``datasets.DatasetDict``.

One module per corpus registers itself with :func:`register_corpus`; :func:`load_corpus` builds a
config, :func:`build_dataset_folder` writes the Hub-ready folder under ``dataset_scripts/``.
"""

from ._base import (
    DATA_DIR_ENV,
    CorpusFormatError,
    Line,
    ParseLog,
    build_dataset_folder,
    build_summary,
    corpus_names,
    corpus_stats,
    count_warnings,
    dataset_from_columns,
    expected_split_sizes,
    find_misalignment,
    get_corpus_spec,
    grouped_split,
    iter_lines,
    kfold_assignment,
    load_corpus,
    normalize_for_matching,
    read_aligned_lines,
    register_corpus,
    resolve_data_dir,
)

__all__ = [
    "CorpusFormatError",
    "DATA_DIR_ENV",
    "Line",
    "ParseLog",
    "build_dataset_folder",
    "build_summary",
    "corpus_names",
    "corpus_stats",
    "count_warnings",
    "dataset_from_columns",
    "expected_split_sizes",
    "find_misalignment",
    "get_corpus_spec",
    "grouped_split",
    "iter_lines",
    "kfold_assignment",
    "load_corpus",
    "normalize_for_matching",
    "read_aligned_lines",
    "register_corpus",
    "resolve_data_dir",
]
