"""Deterministic splits by stable hashes (grouped train/validation/test, k folds, held-out masks)
and quiet dataset progress bars."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # datasets costs ~0.7 s at import; only the builders need it
    pass


def stable_unit_hash(key: str, salt: str = "hf-querygen") -> float:
    """A platform-independent hash of ``key`` in [0, 1) (Python's hash() is salted per process)."""
    digest = hashlib.sha1(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def validation_mask(keys: Sequence[str], fraction: float, salt: str = "crf-validation") -> list[bool]:
    """Deterministic held-out part of the TRAIN folds (never the test fold) for model selection."""
    return [stable_unit_hash(key, salt) < fraction for key in keys]


def grouped_split(
    group_keys: Sequence[str],
    test_fraction: float = 0.2,
    validation_fraction: float = 0.1,
    salt: str = "hf-querygen",
) -> list[str]:
    """Assign each example a split so that all examples of one group share it.

    Groups are ordered by a stable hash; the first ``round(test_fraction * n_groups)`` go to
    test, then ``round(validation_fraction * rest)`` to validation, the rest to train (Liu'18:
    test 20%, validation 10% of the remainder). Returns one split name per example.
    """
    groups = sorted(set(group_keys), key=lambda g: (stable_unit_hash(g, salt), g))
    n_test = round(test_fraction * len(groups))
    n_val = round(validation_fraction * (len(groups) - n_test))
    split_of = {}
    for i, group in enumerate(groups):
        split_of[group] = "test" if i < n_test else "validation" if i < n_test + n_val else "train"
    return [split_of[g] for g in group_keys]


def kfold_assignment(keys: Sequence[str], n_folds: int = 5, salt: str = "hf-querygen") -> list[int]:
    """Deterministic fold index per key: keys ordered by stable hash, dealt round-robin."""
    order = sorted(range(len(keys)), key=lambda i: (stable_unit_hash(keys[i], salt), keys[i]))
    folds = [0] * len(keys)
    for rank, i in enumerate(order):
        folds[i] = rank % n_folds
    return folds


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """Silence the progress bars of ``datasets`` (map/filter over a few thousand rows) for a block."""
    from datasets import utils as datasets_tqdm

    was_disabled = datasets_tqdm.are_progress_bars_disabled()
    datasets_tqdm.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets_tqdm.enable_progress_bars()
