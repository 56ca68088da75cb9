"""Ray plumbing shared by the jobs that run on a cluster (synthesis shards, index shards, batch
reformulation): connecting to (or starting) Ray, and running independent tasks with retries, naming the
item whose task failed for good.

Ray is an optional extra (``pip install hf-querygen[ray]``): it is imported when a job asks for it, and its
absence is an :class:`~hf_querygen.errors.InvalidInputError` saying how to install it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from .errors import InvalidInputError

#: a failed task is run again this many times before the job names it and stops
TASK_RETRIES = 1
#: ``--ray`` without an address: a Ray already started on this machine (``ray start --head``) if there is
#: one, else a local one started for the job
LOCAL = "auto-or-local"


def import_ray():
    """The ``ray`` module, or an :class:`InvalidInputError` naming the extra to install."""
    try:
        import ray
    except ImportError as err:
        raise InvalidInputError(
            "this job runs on Ray, which is not installed: pip install 'hf-querygen[ray]'"
        ) from err
    return ray


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Connect to the Ray cluster at ``address`` (``ray://host:10001``, ``host:6379`` or ``auto``), or,
    with ``None`` / :data:`LOCAL`, to a Ray started on this machine if there is one, else start a local
    Ray with ``num_cpus`` CPUs. A Ray this process already initialised is used as it is. Returns ``ray``."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address in (None, LOCAL):
        if os.environ.get("RAY_ADDRESS"):
            ray.init(**options)
            return ray
        try:
            ray.init(address="auto", **options)
            return ray
        except ConnectionError:
            pass  # no Ray running on this machine: start one for this job
        # a Ray for this job alone listens on the loopback interface only
        ray.init(num_cpus=num_cpus, _node_ip_address="127.0.0.1", **options)
        return ray
    try:
        ray.init(address=address, **options)
    except ConnectionError as err:
        raise InvalidInputError(f"cannot connect to the Ray cluster at {address!r}: {err}") from err
    return ray


def run_tasks(
    function: Callable[..., Any],
    arguments: Sequence[tuple],
    names: Sequence[str],
    what: str,
    num_cpus: float = 1,
    retries: int = TASK_RETRIES,
    on_done: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """Run ``function(*arguments[i])`` as one Ray task per item (Ray must be initialised) and return the
    results in item order.

    Each task is retried ``retries`` times by Ray (``max_retries`` for a lost worker,
    ``retry_exceptions`` for an exception it raised); an item that still fails stops the job with an
    :class:`InvalidInputError` naming ``names[i]`` and the error, after the other tasks have finished (so
    their results, written by the tasks themselves, are kept for a rerun). ``on_done(i, result)`` is
    called as each task finishes (progress)."""
    ray = import_ray()
    remote = ray.remote(num_cpus=num_cpus, max_retries=retries, retry_exceptions=True)(function)
    refs = [remote.remote(*args) for args in arguments]
    position = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    failures: list[str] = []
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i = position[done[0]]
        try:
            results[i] = ray.get(done[0])
        except ray.exceptions.RayError as err:
            cause = getattr(err, "cause", None) or err
            failures.append(f"{names[i]}: {type(cause).__name__}: {_first_line(cause)}")
            continue
        if on_done is not None:
            on_done(i, results[i])
    if failures:
        raise InvalidInputError(
            f"{what}: {len(failures)} task(s) failed after {retries} retr{'y' if retries == 1 else 'ies'}: "
            + "; ".join(failures)
        )
    return results


def _first_line(error: BaseException) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"
