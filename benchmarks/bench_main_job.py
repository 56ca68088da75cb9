"""Wall-clock time of the README's main job, ``hf-querygen reproduce all --quick`` (goal: <= 10 min on 2 idle
cores), setup excluded.

Runs the command once per repeat into a temporary ``--out-dir`` (the committed quick tables are left
alone), reports the seconds of each run, each paper's share (the lines the command prints when a paper's
table is done) and its phases (``timings_s`` of its ``results.json``), the CPU seconds the command used
(children included) and their share of the cores' time, the load average before and after, and the core
count. Prints JSON; a loaded machine shows in ``load_average_before`` (say so beside the number).

Run: ``python benchmarks/bench_main_job.py [--repeats 1] [--data-dir ../shared/data]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(data_dir: str | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="main_job_") as tmp:
        command = [sys.executable, "-m", "hf_querygen.cli", "reproduce", "all", "--quick", "--out-dir", tmp]
        if data_dir:
            command += ["--data-dir", data_dir]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        load_before = os.getloadavg()
        usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        finished: dict[str, float] = {}
        with subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as process:
            assert process.stdout is not None
            for _line in process.stdout:  # each printed line: look for finished tables
                for paper in Path(tmp).iterdir() if Path(tmp).is_dir() else []:
                    if paper.name not in finished and (paper / "results.json").is_file():
                        finished[paper.name] = round(time.perf_counter() - started, 1)
            code = process.wait()
        seconds = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if code != 0:
            raise SystemExit(f"`{' '.join(command)}` exited with {code}")
        cpu_seconds = (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime)
        phases = {
            paper.name: json.loads((paper / "results.json").read_text()).get("config", {}).get("timings_s")
            for paper in sorted(Path(tmp).iterdir())
            if (paper / "results.json").is_file()
        }
        return {
            "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu_seconds, 1),
            "cpu_share_of_cores": round(cpu_seconds / (seconds * (os.cpu_count() or 1)), 3),
            "papers_done_at_s": finished,
            "paper_phases_s": phases,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", default=None, help="raw corpora (default: the CLI's)")
    args = parser.parse_args(argv)
    runs = [run_once(args.data_dir) for _ in range(args.repeats)]
    print(
        json.dumps(
            {
                "command": "hf-querygen reproduce all --quick",
                "cores": os.cpu_count(),
                "goal_s": 600,
                "median_s": statistics.median(r["seconds"] for r in runs),
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
