"""Table 2's networks under a named budget on a CUDA device, each run stopped after ``--minutes`` of
training: the rows ``update_results.py`` adds as ``<row> (<budget> budget, <device>)``.
:mod:`hf_querygen.experiments.device_rows` for ding2018, with the runs of the paper budget as defaults.

    python -m hf_querygen.experiments.ding2018.studies.gpu_rows --out-dir OUT [--budget paper] \\
        [--minutes 4.5] [--runs copynet:0,1,2 ednet:0 attnet:0]
"""

from __future__ import annotations

import sys

from hf_querygen.experiments.device_rows import main as device_rows_main

REPRODUCTION = "ding2018"
DEFAULT_RUNS = ["copynet:0,1,2", "ednet:0", "attnet:0"]


def main(argv: list[str] | None = None) -> int:
    return device_rows_main(argv, paper=REPRODUCTION, runs=DEFAULT_RUNS)


if __name__ == "__main__":
    sys.exit(main())
