"""Self-contained model code beside the weights, so that plain ``transformers`` loads a saved folder.

A folder written by ``save_pretrained`` (so by ``hf-querygen train``, ``reproduce --save-models`` and
``export``) carries, as a custom model on the Hub does:

* ``configuration_<type>.py``, ``modeling_<type>.py`` and one ``pipeline_<task>.py`` per pipeline task the
  model serves: flat modules generated at save time from the library's current source;
* ``auto_map`` (AutoConfig + the model's Auto class) and ``custom_pipelines`` in ``config.json``.

Then ``AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)`` and
``pipeline("keyword-query-generation", model=folder, trust_remote_code=True)`` work where ``hf_querygen``
is not installed.

Why generated: transformers copies a remote-code module and its same-folder relative imports only, and
our model modules import ``...nn``, ``...validation`` and the task code. :func:`bundle` inlines what a
set of root objects needs, name by name (a tree shaker, not a copy of whole modules), into one module;
code that only training, corpora or evaluation reach (:data:`TRAINING_ONLY`) is cut.

The package's rooms: :mod:`.source` (the library's modules parsed: statements, bindings, names used),
:mod:`.bundler` (:func:`bundle`), :mod:`.remote_code` (a model folder's files and ``config.json``
entries, the ``save_pretrained`` hooks :func:`install_class` sets, which the registration runs for
every class of ours once imported).
"""

from .bundler import TRAINING_ONLY, BundleFile, bundle
from .remote_code import (
    CONFIG_FILE,
    MODELING_FILE,
    PIPELINE_FILE,
    TOKENIZER_FILE,
    install,
    install_class,
    install_spec,
    remote_code_files,
    served_pipelines,
    write_remote_code,
    write_tokenizer_code,
)
from .source import ALLOWED_EXTERNAL, PACKAGE, BundleError

__all__ = [
    "ALLOWED_EXTERNAL",
    "CONFIG_FILE",
    "MODELING_FILE",
    "PACKAGE",
    "PIPELINE_FILE",
    "TOKENIZER_FILE",
    "TRAINING_ONLY",
    "BundleError",
    "BundleFile",
    "bundle",
    "install",
    "install_class",
    "install_spec",
    "remote_code_files",
    "served_pipelines",
    "write_remote_code",
    "write_tokenizer_code",
]
