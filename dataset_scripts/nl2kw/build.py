"""Rebuild this folder from the raw files: ``python build.py [--data-dir DIR] [--lenient]``.

Writes ``data/<config>/<split>.parquet`` beside this script and regenerates the YAML header of
``README.md`` from the built data: ``hf-querygen corpus build nl2kw`` with this folder as output.
"""

import sys
from pathlib import Path

from hf_querygen.cli import main

CORPUS, FOLDER = "nl2kw", Path(__file__).resolve().parent

if __name__ == "__main__":
    sys.exit(main(["corpus", "build", CORPUS, "--out-dir", str(FOLDER), *sys.argv[1:]]))
