"""Paper reproductions: one module per paper, each exposing ``run(out_dir, quick, seeds, data_dir)``."""

import importlib

#: reproduction name -> module implementing ``run``
REPRODUCTIONS = {
    "liu2018": "hf_querygen.experiments.liu2018",
    "lin2017": "hf_querygen.experiments.lin2017",
    "retrieval": "hf_querygen.experiments.retrieval",
}


def get_reproduction(name: str):
    if name not in REPRODUCTIONS:
        raise ValueError(f"Unknown reproduction {name!r}; available: {sorted(REPRODUCTIONS)}")
    return importlib.import_module(REPRODUCTIONS[name])
