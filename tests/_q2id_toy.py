"""Toy encoded q2id examples shared by the CtrsGen and pointer-generator tests."""

import torch

VOCAB, OUTPUT_VOCAB = 50, 30


def toy_features(seed: int = 0, with_irrelevant: bool = True) -> list[dict]:
    """Three encoded examples of different shapes (one without irrelevant documents)."""
    g = torch.Generator().manual_seed(seed)

    def words(n):
        return torch.randint(4, VOCAB, (n,), generator=g).tolist()

    examples = [
        dict(
            input_ids=words(3) + [3],
            relevant_input_ids=[[words(5), words(2)], [words(4)]],
            irrelevant_input_ids=[[words(3), words(6)], [words(2), words(2), words(3)]],
            labels=words(4) + [3],
        ),
        dict(
            input_ids=words(1) + [3],
            relevant_input_ids=[[words(3)]],
            irrelevant_input_ids=[],
            labels=words(2) + [3],
        ),
        dict(
            input_ids=words(5) + [3],
            relevant_input_ids=[[words(2), words(7), words(1)], [words(3)], [words(2), words(2)]],
            irrelevant_input_ids=[[words(4)]],
            labels=words(6) + [3],
        ),
    ]
    for example in examples:
        example["attention_mask"] = [1] * len(example["input_ids"])
        example["labels"] = [i % OUTPUT_VOCAB if i >= OUTPUT_VOCAB else i for i in example["labels"]]
        if not with_irrelevant:
            example["irrelevant_input_ids"] = []
    return examples


def model_inputs(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if k != "labels"}
