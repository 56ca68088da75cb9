"""The zhang2020 studies behind ``results/zhang2020/NOTES.md``: one-off runs and updates of the committed
results, each ``python -m hf_querygen.experiments.zhang2020.studies.<name> --help``. They read and write the
source checkout's ``results/zhang2020/`` (:data:`RESULTS_DIR`), so they run from a checkout, not a wheel."""

from pathlib import Path

#: the committed results of zhang2020 in the source checkout (this file is
#: ``hf_querygen/experiments/zhang2020/studies/__init__.py``)
RESULTS_DIR = Path(__file__).resolve().parents[4] / "results" / "zhang2020"
