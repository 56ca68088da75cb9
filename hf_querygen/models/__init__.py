"""One folder per model: ``configuration_x.py`` + ``modeling_x.py`` (transformers layout)."""
