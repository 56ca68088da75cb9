"""A tiny copy task shared by the training and pipeline tests.

Source "please find <w1> <name> <w2>" -> target "<name> <w1>", where names are random strings that
are NOT in the tokenizer's vocabulary (every name is [UNK] in input_ids): the only way to produce
them is copying a source position, and decoding must turn the copy id back into the name.
"""

from __future__ import annotations

import random

COMMON_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon")


def random_name(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(6))


def copy_task_rows(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        first, second = rng.sample(COMMON_WORDS, 2)
        name = random_name(rng)
        rows.append({"source": f"please find {first} {name} {second}", "target": f"{name} {first}"})
    return rows


def copy_task_tokenizer():
    """Vocabulary = the fixed words only; output vocabulary = specials + the five common words."""
    from hf_querygen.tokenization import train_word_tokenizer

    return train_word_tokenizer(["please find"], target_texts=[" ".join(COMMON_WORDS)])


def tiny_copy_model(tokenizer, copy: str = "copynet", seed: int = 0):
    import torch

    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
    from hf_querygen.tokenization import output_vocab_size_of

    torch.manual_seed(seed)
    config = RNNSeq2SeqConfig(
        vocab_size=len(tokenizer),
        output_vocab_size=output_vocab_size_of(tokenizer),
        embedding_size=16,
        hidden_size=16,
        cell="gru",
        attention="bahdanau",
        copy=copy,
    )
    return RNNSeq2SeqForConditionalGeneration(config)
