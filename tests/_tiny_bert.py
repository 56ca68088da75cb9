"""One builder of the tiny random BERT backbones the tests save as local folders (what ``resolve_backbone``
and ``SentenceEmbedder`` read): a random ``BertModel`` with a WordPiece tokenizer over a given vocabulary, or
with a real backbone's tokenizer (a cheap stand-in for that backbone)."""

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
    from transformers import BertTokenizerFast

    vocab = [*SPECIALS, *pieces]
    folder.mkdir(parents=True, exist_ok=True)
    BertTokenizerFast(vocab={piece: i for i, piece in enumerate(vocab)}).save_pretrained(folder)
    return _save_random_bert(folder, len(vocab), hidden_size, num_hidden_layers, intermediate_size, 64, seed)


def _save_random_bert(
    folder: Path,
    vocab_size: int,
    hidden_size: int,
    num_hidden_layers: int,
    intermediate_size: int | None,
    max_position_embeddings: int,
    seed: int,
) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=2,
        intermediate_size=intermediate_size or 2 * hidden_size,
        max_position_embeddings=max_position_embeddings,
    )
    BertModel(config).save_pretrained(folder)
    return folder


def save_tiny_bert_with_tokenizer_of(
    folder: Path, backbone: str = "sentence-transformers/all-MiniLM-L6-v2", hidden_size: int = 32
) -> Path:
    """Save in ``folder`` a random 2-layer BERT (``hidden_size`` wide, 512 positions) that reads the word
    pieces of ``backbone``'s own tokenizer, saved beside it: a stand-in for the backbone in an end-to-end
    run, whose data (prepared with the backbone's tokenizer) it reads as it is, at a fraction of the cost."""
    from transformers import AutoTokenizer

    from hf_querygen.pretrained import resolve_backbone

    tokenizer = AutoTokenizer.from_pretrained(str(resolve_backbone(backbone).path))
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    return _save_random_bert(folder, len(tokenizer), hidden_size, 2, None, 512, seed=0)
