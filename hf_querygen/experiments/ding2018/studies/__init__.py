"""The ding2018 studies behind ``results/ding2018/NOTES.md``: one-off runs and updates of the committed
results, each ``python -m hf_querygen.experiments.ding2018.studies.<name> --help``. They read and write the
source checkout's ``results/ding2018/`` (:data:`RESULTS_DIR`), so they run from a checkout, not a wheel."""

from pathlib import Path

#: the committed results of ding2018 in the source checkout (this file is
#: ``hf_querygen/experiments/ding2018/studies/__init__.py``)
RESULTS_DIR = Path(__file__).resolve().parents[4] / "results" / "ding2018"
