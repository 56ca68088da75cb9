"""One folder per model: ``configuration_x.py`` + ``modeling_x.py`` (transformers layout).

A model package declares everything about itself once, in its ``__init__.py``: one
``MODELS.register(name, ModelSpec(...))`` (:mod:`hf_querygen.specs`) with its config and model classes
(the model class as ``"module:Class"``, its modeling names exported lazily: registering the config with
``AutoConfig`` must not import transformers' modeling stack), the Auto class that loads it, its family,
a tiny configuration and input factory and its card's paper.
The Auto registration, ``hf_querygen``'s public names, the shared model test contract
(``tests/model_contract.py``), the tasks' family lookup and the model card all read that registration;
the package itself is found on disk (every sub-package here), so nothing else lists it.
"""

from __future__ import annotations

from ..specs import MODELS, CardPaper, ModelSpec

__all__ = ["MODELS", "CardPaper", "ModelSpec"]
