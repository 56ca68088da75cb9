"""Rebuild this folder from the raw files: ``python dataset_scripts/webis_qsec_10/build.py [--data-dir DIR]``.

Writes ``data/<config>/<split>.parquet`` beside this script and regenerates the YAML header of
``README.md`` from the built data (same as ``hf-querygen corpus build webis_qsec_10``).
"""

import argparse
from pathlib import Path

from hf_querygen.corpora import build_dataset_folder

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    parser.add_argument("--lenient", action="store_true", help="skip malformed records instead of failing")
    args = parser.parse_args()
    print(
        build_dataset_folder(
            "webis_qsec_10", out_dir=Path(__file__).parent, data_dir=args.data_dir, strict=not args.lenient
        )
    )
