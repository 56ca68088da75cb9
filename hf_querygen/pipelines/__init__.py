"""transformers ``Pipeline`` subclasses, registered under task names at ``import hf_querygen``."""
