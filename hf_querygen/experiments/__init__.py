"""Paper reproductions: one module per paper, each defining ``REPRODUCTION`` (a
:class:`~hf_querygen.experiments.runner.Reproduction`) run by the one runner; registered by name in
:data:`~hf_querygen.experiments.papers.REPRODUCTIONS`."""

from .papers import REPRODUCTIONS, get_reproduction

__all__ = ["REPRODUCTIONS", "get_reproduction"]
