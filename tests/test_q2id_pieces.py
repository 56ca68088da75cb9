"""Q2ID for a warm-started encoder-decoder: the word-piece source within its budget, the contrastive collator
and loss (without contrast it is the model's own likelihood; the hinge acts only below the margin), on a tiny
random BERT2BERT built here."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from hf_querygen.errors import InvalidInputError
from hf_querygen.tasks.q2id.pieces import (
    ContrastiveCollator,
    ContrastiveLoss,
    contrastive_loss,
    encode_q2id_pieces,
    share_budget,
    source_pieces,
)

WORDS = "how can a teacher find job in doha visa language school moving hello everybody problem".split()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import BertTokenizer

    folder = tmp_path_factory.mktemp("vocab")
    (folder / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n"
    )
    return BertTokenizer(vocab=str(folder / "vocab.txt"))


def example(relevant: int = 2, irrelevant: int = 1) -> dict:
    return {
        "query": "teacher job doha",
        "description": "how can a language teacher find a job in doha",
        "relevant_documents": [{"sentences": ["hello everybody", "moving to doha"]}] * relevant,
        "irrelevant_documents": ["visa problem " * 30] * irrelevant,
    }


def test_share_budget_is_water_filling():
    assert share_budget([3, 50, 50], 40) == [3, 19, 18]
    assert share_budget([3, 5], 40) == [3, 5]
    assert sum(share_budget([100] * 7, 60)) == 60


def test_source_pieces_keep_the_query_and_fit_the_budget(tokenizer):
    item = example(relevant=3)
    ids = source_pieces(item["query"], item["irrelevant_documents"] * 4, tokenizer, max_length=40)
    assert len(ids) == 40 and ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert tokenizer.decode(ids[1:4]) == "teacher job doha"
    assert ids.count(tokenizer.sep_token_id) == 1 + 2  # query + the documents that fit 16 pieces each
    short = source_pieces(item["query"], item["relevant_documents"], tokenizer, max_length=512)
    assert tokenizer.decode(short, skip_special_tokens=True).split().count("doha") == 4
    teacher = tokenizer.convert_tokens_to_ids("teacher")
    assert source_pieces("teacher", [], tokenizer) == [
        tokenizer.cls_token_id,
        teacher,
        tokenizer.sep_token_id,
    ]
    with pytest.raises(InvalidInputError, match="room"):
        source_pieces("teacher", [], tokenizer, max_length=2)


@pytest.fixture(scope="module")
def bert2bert(tokenizer):
    from transformers import BertConfig, EncoderDecoderConfig, EncoderDecoderModel

    torch.manual_seed(0)
    sizes = {
        "vocab_size": len(tokenizer),
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
    }
    config = EncoderDecoderConfig.from_encoder_decoder_configs(
        BertConfig(**sizes), BertConfig(**sizes, is_decoder=True, add_cross_attention=True)
    )
    config.decoder_start_token_id, config.pad_token_id = tokenizer.cls_token_id, tokenizer.pad_token_id
    return EncoderDecoderModel(config=config).eval()


def batch_of(tokenizer, contrast: bool, n: int = 3):
    rows = encode_q2id_pieces([example(irrelevant=i % 2) for i in range(n)], tokenizer, 64, 16, contrast)
    features = [{key: values[i] for key, values in rows.items()} for i in range(n)]
    return ContrastiveCollator(tokenizer.pad_token_id, tokenizer.cls_token_id)(features)


def test_without_contrast_the_loss_is_the_models_own_likelihood(tokenizer, bert2bert):
    batch = batch_of(tokenizer, contrast=False)
    with torch.no_grad():
        own = bert2bert(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]
        )
        ours = bert2bert(**{k: v for k, v in batch.items() if k != "labels"})
    assert batch["input_ids"].shape[0] == 3
    torch.testing.assert_close(ContrastiveLoss(weight=0.0)(ours, batch["labels"]), own.loss)
    # a batch without its irrelevant half cannot be contrasted: an error, not the likelihood alone
    with pytest.raises(InvalidInputError, match="irrelevant half"):
        ContrastiveLoss(weight=0.5)(ours, batch["labels"])


def test_the_contrast_half_and_its_hinge(tokenizer, bert2bert):
    batch = batch_of(tokenizer, contrast=True)
    assert batch["input_ids"].shape[0] == 6 and batch["labels"].shape[0] == 3
    # a query without irrelevant documents is contrasted with the query alone
    assert (batch["input_ids"][3] != tokenizer.pad_token_id).sum() == len(
        tokenizer("teacher job doha")["input_ids"]
    )
    with torch.no_grad():
        logits = bert2bert(**{k: v for k, v in batch.items() if k != "labels"}).logits
    plain = contrastive_loss(logits, batch["labels"], weight=0.0, margin=1.0)
    contrasted = contrastive_loss(logits, batch["labels"], weight=1.0, margin=1.0)
    assert contrasted > plain  # untrained: no gap yet, the hinge adds about the margin
    # the relevant half far more likely than the irrelevant one: the hinge is 0
    sharp = logits.clone()
    gold = batch["labels"].clamp(min=0)
    sharp[:3].scatter_(-1, gold.unsqueeze(-1), 50.0)
    torch.testing.assert_close(
        contrastive_loss(sharp, batch["labels"], 1.0, 1.0), contrastive_loss(sharp, batch["labels"], 0.0, 1.0)
    )
    # normalised by the accumulated batch's target pieces: two halves of a batch sum to the whole
    count = (batch["labels"] != -100).sum()
    halves = [slice(0, 1), slice(1, 3)]
    parts = [
        contrastive_loss(
            torch.cat([logits[h], logits[3:][h]]), batch["labels"][h], 1.0, 1.0, num_items_in_batch=count
        )
        for h in halves
    ]
    torch.testing.assert_close(sum(parts), contrasted)
    with pytest.raises(InvalidInputError, match="rows"):
        contrastive_loss(logits[:5], batch["labels"], 1.0, 1.0)


def test_the_contrast_reads_a_pointers_log_probabilities_as_they_are(tokenizer, bert2bert):
    """A model whose logits are log P (the pointer's mixture) gives them with ``log_probs``: no log-softmax
    again, the same loss and gradient as the raw scores they normalise."""
    batch = batch_of(tokenizer, contrast=True)
    with torch.no_grad():
        logits = bert2bert(**{k: v for k, v in batch.items() if k != "labels"}).logits
    raw = logits.clone().requires_grad_()
    normalised = logits.log_softmax(-1).requires_grad_()
    for weight in (0.0, 1.0):
        from_raw = contrastive_loss(raw, batch["labels"], weight, 1.0)
        from_log_probs = contrastive_loss(normalised, batch["labels"], weight, 1.0, log_probs=True)
        torch.testing.assert_close(from_log_probs, from_raw)
    (gradient_raw,) = torch.autograd.grad(from_raw, raw)
    (gradient_log_probs,) = torch.autograd.grad(from_log_probs, normalised)
    # d/dx of -log softmax(x)_y is softmax(x) - onehot; from log P only the -onehot part: the difference is
    # the softmax mass each row's weight puts on it
    rows = gradient_log_probs.sum(-1, keepdim=True)
    torch.testing.assert_close(gradient_raw, gradient_log_probs - logits.softmax(-1) * rows)
    assert ContrastiveLoss(0.5, 1.0, log_probs=True).log_probs


# ---------------------------------------------------------------- the zhang2020/warm_start path, tiny
def q2id_rows(n: int) -> list[dict]:
    """Toy q2id records in the tiny backbone's words: the description names the relevant documents' topic."""
    topics = ["capital france", "pizza york", "flights london", "cheap effects"]
    rows = []
    for i in range(n):
        topic, other = topics[i % 4], topics[(i + 1) % 4]
        rows.append(
            {
                "query": topic.split()[0],
                "description": f"what is the {topic} ?",
                "relevant_documents": [{"doc_id": "r", "label": 1, "sentences": [f"the {topic}", topic]}],
                "irrelevant_documents": [{"doc_id": "i", "label": 0, "sentences": [f"the {other}"]}],
            }
        )
    return rows


def tiny_q2id_backbone(folder):
    """The tiny BERT of test_warm_start with its tokenizer cut at the model's 64 positions."""
    from test_warm_start import tiny_backbone
    from transformers import AutoTokenizer

    folder = tiny_backbone(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.model_max_length = 64  # the tiny BERT's positions
    tokenizer.save_pretrained(folder)
    return folder


def train_q2id_briefly(data, preset: str, backbone, output_dir, **options):
    """4 logged steps of ``preset`` warm-started from ``backbone`` on q2id ``data``, evaluated and saved once;
    ``options`` go to train_preset. Returns the trainer."""
    from hf_querygen.training import train_preset

    return train_preset(
        data,
        preset,
        output_dir,
        preset_overrides={"backbone": str(backbone)},
        training_overrides={
            "max_steps": 4,
            "eval_strategy": "steps",
            "eval_steps": 4,
            "save_strategy": "steps",
            "save_steps": 4,
            "per_device_train_batch_size": 4,
            "prediction_loss_only": True,
            "logging_steps": 1,
        },
        early_stopping_patience=None,
        **options,
    )


def logged_losses(trainer) -> list[float]:
    return [log["loss"] for log in trainer.state.log_history if "loss" in log]


@pytest.fixture(scope="module")
def q2id_backbone(tmp_path_factory):
    return tiny_q2id_backbone(tmp_path_factory.mktemp("q2id_backbone"))


@pytest.mark.parametrize("weight", [0.5, 0.0])
def test_warm_start_q2id_trains_with_and_without_contrast_and_reloads(q2id_backbone, weight, tmp_path):
    import datasets
    from transformers import AutoModelForSeq2SeqLM

    from hf_querygen.tasks.base import get_task
    from hf_querygen.training import save_model_folder

    task = get_task("q2id")
    splits = datasets.DatasetDict(
        train=datasets.Dataset.from_list(q2id_rows(16)), validation=datasets.Dataset.from_list(q2id_rows(4))
    )
    data = task.prepare(splits, backbone=str(q2id_backbone), contrast_weight=weight)
    encoded = data.encoded("bert2bert")["train"]
    assert ("irrelevant_input_ids" in encoded.column_names) == (weight > 0)
    assert max(len(ids) for ids in encoded["input_ids"]) <= 64
    # with the contrast, training fails unless the irrelevant half reaches the collator (the loss checks
    # its rows; the Trainer drops the dataset columns its model's forward lacks unless told not to)
    assert (task.loss_function(data, "bert2bert") is None) == (weight == 0)
    trainer = train_q2id_briefly(data, "bert2bert", q2id_backbone, tmp_path / "checkpoints")
    model = trainer.model
    losses = logged_losses(trainer)
    assert len(losses) == 4 and all(loss == loss and loss > 0 for loss in losses)
    sources = data.sources("validation")
    outputs = task.predict(model, data.tokenizer, sources, no_repeat_ngram_size=2)
    assert len(outputs) == 4 and all(isinstance(text, str) for text in outputs)
    folder = save_model_folder(model, data.tokenizer, tmp_path / "q2id", {"task": "q2id"})
    loaded = AutoModelForSeq2SeqLM.from_pretrained(folder)
    assert type(loaded).__name__ == "EncoderDecoderModel"  # transformers' own class, no remote code
    assert task.predict(loaded, data.tokenizer, sources, no_repeat_ngram_size=2) == outputs
    restated = task.predict(loaded, data.tokenizer, sources[:1], restate_query=True, no_repeat_ngram_size=2)
    assert restated[0].startswith(sources[0]["query"])


def test_the_capped_warm_start_decoding_caps_the_generated_pieces_after_the_restated_query(
    q2id_backbone, tmp_path
):
    """``zhang2020/warm_start_capped``'s grid on a warm-started model: each entry's description is the query
    and at most ``max_new_tokens`` generated pieces, and the choice keeps the entry with the best ROUGE-L F1
    (each row's criterion is its validation ROUGE-L F1)."""
    import datasets

    from hf_querygen.experiments.jobs import Job, _decode_variant
    from hf_querygen.systems import get_system
    from hf_querygen.tasks.base import get_task
    from hf_querygen.training import choose_decoding

    task = get_task("q2id")
    splits = datasets.DatasetDict(
        train=datasets.Dataset.from_list(q2id_rows(8)), validation=datasets.Dataset.from_list(q2id_rows(4))
    )
    data = task.prepare(splits, backbone=str(q2id_backbone))
    model = train_q2id_briefly(data, "bert2bert", q2id_backbone, tmp_path / "checkpoints").model
    capped = get_system("zhang2020/warm_start_capped")
    sources = data.sources("validation")

    def generated_words(texts: list[str]) -> list[int]:
        assert all(text.startswith(source["query"]) for source, text in zip(sources, texts, strict=True))
        return [
            len(text[len(source["query"]) :].split()) for source, text in zip(sources, texts, strict=True)
        ]

    # the 4-step model writes more than 3 words when it may: the cap below is what stops it
    longer = task.predict(model, data.tokenizer, sources, restate_query=True, max_new_tokens=12)
    assert max(generated_words(longer)) > 3
    for entry in capped.decoding_choice.grid[:2]:  # the longest cap, without and with the source reward
        small = {**capped.decoding, **entry, "max_new_tokens": 3}
        # a word is one piece or more
        assert max(generated_words(task.predict(model, data.tokenizer, sources, **small))) <= 3
    tiny_caps = (4, 4, 2, 2, 1, 1)  # the grid's caps (32 / 24 / 16, each without and with the reward), cut
    pairs = zip(capped.decoding_choice.grid, tiny_caps, strict=True)
    grid = [{**entry, "max_new_tokens": cap} for entry, cap in pairs]
    choice = dataclasses.replace(capped.decoding_choice, grid=tuple(grid))
    chosen, rows = choose_decoding(model, data, capped.decoding, choice)
    assert len(rows) == len(grid)
    assert all(row["criterion"] == row["scores"]["validation"]["rougeL_f"] for row in rows)
    assert chosen == max(rows, key=lambda row: row["criterion"])["decoding"]
    # the runner decodes the row as a variant of the model's job: a budget's row_decoding (a smoke run's
    # short outputs) lies on every entry of its grid, so the quick budget decodes it once
    job = Job(get_system("zhang2020/warm_start"), 0, None, ())
    capped_validation_only = dataclasses.replace(capped, evaluate_on=("validation",))
    record, rows = _decode_variant(capped_validation_only, job, model, data, {"max_new_tokens": 2})
    assert {row["decoding"]["max_new_tokens"] for row in rows} == {2}
    assert record["decoding"]["max_new_tokens"] == 2 and record["system"] == "warm_start_capped"
    assert max(generated_words(record["outputs"]["validation"])) <= 2
