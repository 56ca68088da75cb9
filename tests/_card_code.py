"""Run the code blocks of an exported model card against the exported folder, offline, each in a fresh
process: the "with hf-querygen" block as written, the "plain transformers" block with the library made
unimportable (what a Hub user without it runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BLOCK_LIBRARY = """import sys


class _BlockLibrary:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "hf_querygen":
            raise ModuleNotFoundError(f"{name} (blocked: a Hub user without hf-querygen)")


sys.meta_path.insert(0, _BlockLibrary())
"""


def card_python_blocks(folder: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", (folder / "README.md").read_text(), flags=re.M | re.S)


def run_card_code(folder: Path, repo_id: str, work: Path) -> list[str]:
    """The standard output of each usage block, ``repo_id`` standing for ``folder``; a block that fails
    raises AssertionError with its stderr."""
    blocks = card_python_blocks(folder)
    assert len(blocks) == 2, f"{folder}/README.md: expected the two usage blocks, found {len(blocks)}"
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_MODULES_CACHE=str(work / "modules"))
    outputs = []
    for with_library, code in zip((True, False), blocks, strict=True):
        assert f'"{repo_id}"' in code, code
        code = code.replace(f'"{repo_id}"', repr(str(folder)))
        if not with_library:
            code = BLOCK_LIBRARY + code
        run = subprocess.run(
            [sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, (
            f"card block {'with' if with_library else 'without'} hf-querygen:\n{code}\n{run.stderr[-3000:]}"
        )
        outputs.append(run.stdout.strip())
    return outputs
