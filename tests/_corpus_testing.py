"""Helpers for the corpus tests: a copy of the data dir with one file replaced, card headers."""

from __future__ import annotations

from pathlib import Path

import yaml


def data_dir_with(data_dir: Path, root: Path, replacements: dict[str, bytes]) -> Path:
    """A stand-in for ``data_dir`` under ``root``: every file and folder is a symlink to the real
    one, except the files in ``replacements`` (path relative to the data dir -> new content),
    whose parent folders are real folders. Cheap even for the 60 MB of ``shared/data``."""
    targets = {Path(rel) for rel in replacements}
    on_path = {parent for target in targets for parent in target.parents if parent != Path(".")}

    def mirror(source: Path, destination: Path, relative: Path) -> None:
        destination.mkdir(parents=True, exist_ok=True)
        for child in sorted(source.iterdir()):
            child_rel = relative / child.name
            if child_rel in targets:
                (destination / child.name).write_bytes(replacements[child_rel.as_posix()])
            elif child_rel in on_path:
                mirror(child, destination / child.name, child_rel)
            else:
                (destination / child.name).symlink_to(child)

    mirror(data_dir, root, Path("."))
    missing = [rel for rel in replacements if not (root / rel).is_file()]
    if missing:
        raise FileNotFoundError(f"not in the data dir, nothing to replace: {missing}")
    return root


def card_header(card: Path) -> dict:
    """The YAML header of a dataset card (README.md)."""
    text = card.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{card} has no YAML header"
    return yaml.safe_load(text.split("---\n", 2)[1])


def card_split_sizes(card: Path) -> dict[str, dict[str, int]]:
    """config -> split -> num_examples, as the card's ``dataset_info`` states them."""
    return {
        info["config_name"]: {split["name"]: split["num_examples"] for split in info["splits"]}
        for info in card_header(card)["dataset_info"]
    }


def assert_card_header_is_rendered(corpus: str, built: dict) -> None:
    """The committed card's YAML header equals what the build renders for ``built`` (config ->
    (DatasetDict, build log)), keeping the card's hand-written keys (all but configs / dataset_info)."""
    from hf_querygen.corpora._base import dataset_folder, render_card_header

    card = dataset_folder(corpus) / "README.md"
    committed_header = card.read_text(encoding="utf-8").split("---\n", 2)[1]
    extra = {
        k: v for k, v in yaml.safe_load(committed_header).items() if k not in ("configs", "dataset_info")
    }
    rendered = render_card_header(corpus, {config: dd for config, (dd, _) in built.items()}, extra)
    assert rendered == "---\n" + committed_header + "---\n"
