"""Startup cost: cold ``import hf_querygen`` and ``hf-querygen --help`` (median of 5 fresh processes).

Prints JSON: seconds per command (median, all runs) and whether torch / transformers got imported.
Run: ``python benchmarks/bench_startup.py`` (the machine's load shows in the numbers: say so).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass (interpreter baseline)": [sys.executable, "-c", "pass"],
    "import hf_querygen": [sys.executable, "-c", "import hf_querygen"],
    "hf-querygen --help": [sys.executable, "-m", "hf_querygen.cli", "--help"],
    "import hf_querygen + AutoConfig (registration)": [
        sys.executable,
        "-c",
        "import hf_querygen; from transformers import AutoConfig; AutoConfig.for_model('dual_decoder')",
    ],
}
PROBE = (
    "import sys, hf_querygen; from hf_querygen.cli import build_parser; build_parser(); "
    "print(' '.join(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
)


def main(repeats: int = 5) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result: dict = {"repeats": repeats, "python": sys.version.split()[0], "load_average": os.getloadavg()}
    for name, command in COMMANDS.items():
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=env)
            runs.append(time.perf_counter() - started)
        result[name] = {"median_s": round(statistics.median(runs), 3), "runs_s": [round(r, 3) for r in runs]}
    probe = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True, env=env)
    result["heavy_modules_after_import_and_parser"] = probe.stdout.split()
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
