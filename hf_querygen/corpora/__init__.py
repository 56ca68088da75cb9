"""Corpus builders: raw upstream files -> typed ``datasets.DatasetDict``.

One module per corpus registers itself with :func:`register_corpus`; :func:`load_corpus` builds a
config, :func:`build_dataset_folder` writes the Hub-ready folder under ``dataset_scripts/``.
"""

from ._base import (
    DATA_DIR_ENV,
    CorpusFormatError,
    ParseLog,
    build_dataset_folder,
    corpus_names,
    corpus_stats,
    dataset_from_columns,
    get_corpus_spec,
    grouped_split,
    kfold_assignment,
    load_corpus,
    normalize_for_matching,
    register_corpus,
    resolve_data_dir,
)

__all__ = [
    "DATA_DIR_ENV",
    "CorpusFormatError",
    "ParseLog",
    "build_dataset_folder",
    "corpus_names",
    "corpus_stats",
    "dataset_from_columns",
    "get_corpus_spec",
    "grouped_split",
    "kfold_assignment",
    "load_corpus",
    "normalize_for_matching",
    "register_corpus",
    "resolve_data_dir",
]
