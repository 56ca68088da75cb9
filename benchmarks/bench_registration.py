"""The cost of hf-querygen's Auto-class registration on the first use of transformers.

Each case runs in fresh processes, plain transformers and ``import hf_querygen`` first, alternating, and
reports medians and the ratio (goal: <= 1.2x). Cases: loading a standard model folder with
``AutoModelForSeq2SeqLM`` (a tiny BERT2BERT saved here), ``AutoConfig`` of a BERT folder, and
``pipeline`` import. Prints JSON; the machine's load shows in the numbers (say so).

Run: ``python benchmarks/bench_registration.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "AutoModelForSeq2SeqLM.from_pretrained (tiny BERT2BERT)": (
        "from transformers import AutoModelForSeq2SeqLM; AutoModelForSeq2SeqLM.from_pretrained({b2b!r})"
    ),
    "AutoConfig.from_pretrained (BERT folder)": (
        "from transformers import AutoConfig; AutoConfig.from_pretrained({bert!r})"
    ),
    "from transformers import pipeline": "from transformers import pipeline",
}


def _folders(root: Path) -> dict[str, str]:
    from transformers import BertConfig, BertModel, EncoderDecoderModel

    bert = root / "bert"
    BertModel(
        BertConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
        )
    ).save_pretrained(bert)
    model = EncoderDecoderModel.from_encoder_decoder_pretrained(str(bert), str(bert))
    model.config.decoder_start_token_id, model.config.pad_token_id = 1, 0
    model.save_pretrained(root / "b2b")
    return {"bert": str(bert), "b2b": str(root / "b2b")}


def _seconds(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main(repeats: int) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result: dict = {"repeats": repeats, "load_average_before": os.getloadavg(), "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folders = _folders(Path(tmp))
        for name, template in CASES.items():
            code = template.format(**folders)
            plain, ours = [], []
            for _ in range(repeats):  # alternating: drift in the machine's load hits both sides alike
                plain.append(_seconds(code, env))
                ours.append(_seconds("import hf_querygen; " + code, env))
            result["cases"][name] = {
                "plain_median_s": round(statistics.median(plain), 3),
                "hf_querygen_median_s": round(statistics.median(ours), 3),
                "ratio": round(statistics.median(ours) / statistics.median(plain), 3),
                "plain_s": [round(x, 3) for x in plain],
                "hf_querygen_s": [round(x, 3) for x in ours],
            }
    result["load_average_after"] = os.getloadavg()
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    print(json.dumps(main(parser.parse_args().repeats), indent=2))
