"""Stable weight names across refactors: the files keep the names they were first saved under.

When a model's module tree changes (e.g. every model now shares ``nn.encoder.RecurrentSourceEncoder``),
parameter names change while the weights do not. transformers 5 maps checkpoint keys through a per-class
list of ``WeightRenaming`` rules when loading, and applies them in reverse when saving, so registering
the old -> new names keeps old folders loadable AND makes new saves readable by older code.
"""

from __future__ import annotations


def register_checkpoint_renames(class_name: str, renames: dict[str, str]) -> None:
    """Register ``{old key regex: new key}`` for the model class ``class_name`` (idempotent)."""
    from transformers.conversion_mapping import register_checkpoint_conversion_mapping
    from transformers.core_model_loading import WeightRenaming

    register_checkpoint_conversion_mapping(
        class_name,
        [WeightRenaming(source, target) for source, target in renames.items()],
        overwrite=True,
    )
