"""The optional C extension of hf-querygen; everything else about the package is in pyproject.toml.

``hf_querygen.retrieval._native`` does the index build's per-token work in C. It is optional: where it does
not compile, the build uses the Arrow path of ``hf_querygen/retrieval/analysis.py`` (same index, slower).
Declared here because setuptools' ``[tool.setuptools.ext-modules]`` table is experimental and warns at
every install.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hf_querygen.retrieval._native",
            sources=["hf_querygen/retrieval/_native.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
