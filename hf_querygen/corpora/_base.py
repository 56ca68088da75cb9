"""Shared machinery for the corpus builders, gathered from its rooms of one concern so that a builder
has one import:

* :mod:`._data_dir`: where the raw files live (``data_dir``, ``$HF_QUERYGEN_DATA_DIR``, ``../shared/data``);
* :mod:`._parse_log`: strict / lenient error reporting with file and line (:class:`ParseLog`);
* :mod:`._catalog`: the corpus registry, lookups by name, :func:`load_corpus`, row-count checks;
* :mod:`._readers`: the byte / UTF-8 / line / XML / JSON readers and line-aligned file pairs;
* :mod:`._splits`: deterministic grouped splits, folds and held-out masks;
* :mod:`._cards`: Hub-ready dataset folders (parquet + a dataset card derived from the data).

Every builder module registers itself with :func:`register_corpus`; users call
:func:`hf_querygen.load_corpus`.
"""

from ..errors import CorpusCountWarning, CorpusFileMissingError, CorpusFormatError, InvalidInputError
from ..text import collapse_whitespace, normalize_for_matching
from ._cards import _features_yaml, build_dataset_folder, render_card_header
from ._catalog import (
    CORPORA,
    BuildFn,
    CorpusSpec,
    _did_you_mean,
    _ensure_builders_imported,
    build_summary,
    corpus_names,
    corpus_stats,
    count_warnings,
    dataset_from_columns,
    expected_split_sizes,
    get_corpus_spec,
    load_corpus,
    register_corpus,
)
from ._data_dir import (
    _PACKAGE_ROOT,
    DATA_DIR_ENV,
    DATASET_SCRIPTS_DIR,
    check_data_dir,
    dataset_folder,
    resolve_data_dir,
)
from ._parse_log import _REST_OF_FILE, _WHOLE_FILE, ParseLog, _reason_kind
from ._readers import (
    _LONE_CR,
    UTF8_BOM,
    Line,
    XmlElement,
    _display,
    _ends_with_newline,
    _word_overlap,
    _xml_bytes,
    check_unique,
    decode_error_message,
    find_misalignment,
    iter_lines,
    iter_xml_records,
    line_numbers,
    read_aligned_lines,
    read_json,
    read_raw,
    read_text,
    read_xml,
)
from ._splits import grouped_split, kfold_assignment, quiet_progress, stable_unit_hash, validation_mask

__all__ = [
    "BuildFn",
    "CORPORA",
    "CorpusCountWarning",
    "CorpusFileMissingError",
    "CorpusFormatError",
    "CorpusSpec",
    "DATASET_SCRIPTS_DIR",
    "DATA_DIR_ENV",
    "InvalidInputError",
    "Line",
    "ParseLog",
    "UTF8_BOM",
    "XmlElement",
    "_LONE_CR",
    "_PACKAGE_ROOT",
    "_REST_OF_FILE",
    "_WHOLE_FILE",
    "_did_you_mean",
    "_display",
    "_ends_with_newline",
    "_ensure_builders_imported",
    "_features_yaml",
    "_reason_kind",
    "_word_overlap",
    "_xml_bytes",
    "build_dataset_folder",
    "build_summary",
    "check_data_dir",
    "check_unique",
    "collapse_whitespace",
    "corpus_names",
    "corpus_stats",
    "count_warnings",
    "dataset_folder",
    "dataset_from_columns",
    "decode_error_message",
    "expected_split_sizes",
    "find_misalignment",
    "get_corpus_spec",
    "grouped_split",
    "iter_lines",
    "iter_xml_records",
    "kfold_assignment",
    "line_numbers",
    "load_corpus",
    "normalize_for_matching",
    "quiet_progress",
    "read_aligned_lines",
    "read_json",
    "read_raw",
    "read_text",
    "read_xml",
    "register_corpus",
    "render_card_header",
    "resolve_data_dir",
    "stable_unit_hash",
    "validation_mask",
]
