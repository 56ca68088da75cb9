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
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "the", "in", "and", "with", "of", "fruit"]
    BertTokenizerFast(vocab={word: i for i, word in enumerate(vocab)}).save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    return folder
