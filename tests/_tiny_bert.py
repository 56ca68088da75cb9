"""One builder of the tiny random BERT backbones the tests save as local folders (what ``resolve_backbone``
and ``SentenceEmbedder`` read): a WordPiece tokenizer over a given vocabulary and a random ``BertModel``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def save_tiny_bert(
    folder: Path,
    pieces: Sequence[str],
    hidden_size: int = 16,
    num_hidden_layers: int = 1,
    intermediate_size: int | None = None,
    seed: int = 0,
) -> Path:
    """Save in ``folder`` a random BERT (2 heads, 64 positions, ``intermediate_size`` default twice the
    hidden size; weights drawn after ``torch.manual_seed(seed)``) and its lower-casing WordPiece tokenizer
    over the BERT specials then ``pieces`` (whole words, or ``##`` continuations), in that order."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    vocab = [*SPECIALS, *pieces]
    folder.mkdir(parents=True, exist_ok=True)
    BertTokenizerFast(vocab={piece: i for i, piece in enumerate(vocab)}).save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=2,
        intermediate_size=intermediate_size or 2 * hidden_size,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    return folder
