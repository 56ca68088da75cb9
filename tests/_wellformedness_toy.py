"""A toy query-wellformedness corpus and a tiny random BERT checkpoint for the well-formedness
classifier's tests (the mechanics: training, selection, caching, scoring)."""

import random

from hf_querygen.metrics.wellformedness_classifier import ClassifierSettings

TINY_SETTINGS = ClassifierSettings(epochs=12, learning_rate=3e-3, batch_size=16, evaluations_per_epoch=1)
WELL = ["what is the capital of {}", "who was the first president of {}", "when did {} join the union"]
BAD = ["{} capital", "population {} owls", "{} the first how many"]
PLACES = ["france", "spain", "peru", "chile", "kenya", "nepal", "japan", "egypt", "ghana", "italy"]


def write_corpus(root, sizes=(80, 24, 24), seed=0):
    """A query-wellformedness folder whose well-formed queries (rating 1.0) come from WELL's frames and
    the others (rating 0.2) from BAD's: a classifier can learn it from the frame words."""
    rng = random.Random(seed)
    folder = root / "wikianswers" / "query-wellformedness"
    folder.mkdir(parents=True)
    used = set()
    for name, size in zip(("train.tsv", "dev.tsv", "test.tsv"), sizes, strict=True):
        lines = []
        while len(lines) < size:
            good = rng.random() < 0.4
            frame = rng.choice(WELL if good else BAD)
            query = frame.format(" ".join(rng.sample(PLACES, 2))).capitalize() + " ?"
            if query.lower() in used:
                continue
            used.add(query.lower())
            lines.append(f"{query}\t{'1.0' if good else '0.2'}")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def tiny_bert(folder):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = sorted({w for f in WELL + BAD for w in f.replace("{}", "").split()} | set(PLACES) | {"?"})
    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8"
    )
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(1)  # the backbone's random weights: the same whatever ran before in the process
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_classifier(root):
    """A classifier folder trained on the toy corpus from the tiny BERT (seconds)."""
    import warnings

    from hf_querygen.errors import CorpusCountWarning
    from hf_querygen.metrics import wellformedness_classifier as wfc

    data = write_corpus(root / "data")
    backbone = tiny_bert(root / "bert")
    with warnings.catch_warnings():  # the toy corpus is not the dataset card's size
        warnings.simplefilter("ignore", CorpusCountWarning)
        folder = wfc.build_classifier(
            backbone, data_dir=data, settings=TINY_SETTINGS, output_dir=root / "clf"
        )
    return folder, data, backbone
