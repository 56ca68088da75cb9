"""hf-querygen: query understanding and reformulation models for the Hugging Face stack.

Importing the package registers every config, model and pipeline with the transformers Auto
classes, so ``AutoConfig``/``AutoModel*.from_pretrained`` and ``pipeline(task)`` work.
"""

from ._registration import register_all
from .corpora import build_dataset_folder, load_corpus

__version__ = "0.1.0"

register_all()

__all__ = ["__version__", "build_dataset_folder", "load_corpus", "register_all"]
