"""A tiny random BERT sentence embedder for the dense retrieval tests (fast; its vectors mean nothing)."""

from __future__ import annotations

WORDS = (
    "apple banana cherry date fig grape lemon mango olive peach pear plum berry melon kiwi lime "
    "red green blue yellow sweet sour fresh dried juice pie tree garden market price"
).split()
TEXTS = [
    "apple pie with fresh apple",
    "banana bread and banana juice",
    "cherry tree in the garden",
    "dried fig and date market",
    "green grape juice sweet",
    "lemon and lime sour juice",
    "mango peach and plum",
    "olive tree garden",
    "sweet pear pie",
    "melon kiwi berry market price",
    "red apple green apple",
    "yellow banana sweet",
]


def tiny_bert(folder, seed=0, hidden=16):
    """A random 1-layer BERT (hidden size `hidden`) with a word vocabulary over WORDS, saved in `folder`."""
    from _tiny_bert import save_tiny_bert

    folder.mkdir(parents=True)  # a fresh folder: an existing one is an error
    pieces = [*WORDS, "the", "in", "and", "with", "of", "fruit"]
    return save_tiny_bert(folder, pieces, hidden_size=hidden, intermediate_size=32, seed=seed)
