"""The ding2018 reproduction: the k2q task, the figure data, the orderings and a tiny end-to-end run."""

from __future__ import annotations

import dataclasses
import json
import math

import datasets
import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.experiments import ding2018
from hf_querygen.experiments.ding2018.studies.validation_rule import rule_measures
from hf_querygen.experiments.runner import run_reproduction, table_scores
from hf_querygen.experiments.tables import Budget
from hf_querygen.tasks.base import get_task
from hf_querygen.tasks.k2q import fill_frame, k2q_scores, keeps_keywords
from hf_querygen.tasks.k2q.data import as_training_split
from hf_querygen.tasks.k2q.task import K2QTask
from hf_querygen.text import normalize_for_matching


def _pairs(questions, scores):
    return datasets.Dataset.from_dict(
        {"question": questions, "keyword_query": [q.split()[-1] for q in questions], "tdf_score": scores}
    )


def test_k2q_scores_take_the_best_reference_and_match_rouge_by_hand():
    # ROUGE-1 F1 of "what is the capital" vs "what is the capital of france": P = 1, R = 4/6 -> F = 0.8
    one = k2q_scores(["what is the capital"], [["what is the capital of france"]])
    assert one["ROUGE-1"] == pytest.approx(0.8)
    assert one["ROUGE-1 recall"] == pytest.approx(4 / 6)
    two = k2q_scores(["what is the capital"], [["who wrote it", "what is the capital"]])
    assert two["ROUGE-L"] == pytest.approx(1.0)  # max over references (Eq. 10)
    assert two["ROUGE-L avg"] == pytest.approx((0.0 + 1.0) / 2)  # avg over references (Eq. 9)
    assert two["BLEU"] == pytest.approx(1.0)  # an exact match of one reference


def test_k2q_task_keeps_several_references_and_caps_the_output_vocabulary():
    task = get_task("k2q")
    assert isinstance(task, K2QTask)
    train = as_training_split(["a b", "c d", "e f"], [["a x b", "a y"], ["c z d"], ["e f g"]])
    assert train["question"] == ["a x b", "c z d", "e f g"]
    data = task.prepare(datasets.DatasetDict(train=train), max_output_vocab_size=6)
    assert data.references("train")[0] == ["a x b", "a y"]
    assert data.state["output_vocab_size"] == 6  # 4 specials + the 2 most frequent target words
    with pytest.raises(Exception, match="no reference"):
        as_training_split(["a"], [[]])


def test_question_frames_and_the_most_frequent_frame_row():
    from hf_querygen.baselines.k2q import FrameBaseline, echo_keyword_queries, question_frame
    from hf_querygen.errors import InvalidInputError

    assert question_frame("capital france", "What is the capital of France?") == "what is the X of X"
    assert question_frame("tokyo", "who wrote hamlet") is None
    frames = FrameBaseline.from_pairs(
        ["new york", "paris", "hamlet", "rome"],
        ["What is New York?", "what is paris ?", "who wrote hamlet", "rome: the capital of X?"],
    )
    assert frames.frame == "what is X" and frames.counts["what is X"] == 2  # punctuation is not a word
    assert frames.generate(["Side Effects", "b"]) == ["what is side effects", "what is b"]
    assert echo_keyword_queries(["Capital France"]) == ["Capital France"]
    with pytest.raises(InvalidInputError, match="one-slot"):
        FrameBaseline.from_pairs(["a"], ["who is b"])
    with pytest.raises(InvalidInputError, match="not one string"):
        frames.generate("paris")


def test_human_pairs_join_train_and_validation_only_when_asked():
    task = get_task("k2q")
    splits = datasets.DatasetDict(
        train=as_training_split(["a b"], [["what a b"]]),
        validation=as_training_split(["c"], [["what c"]]),
        nl2kw_train=as_training_split(["d", "d"], [["who d", "why d"], ["why d", "who d"]]),
        nl2kw_validation=as_training_split(["e"], [["what e", "who e"]]),
    )
    plain = task.prepare(splits)
    # nl2kw_train is never trained on; both validation sources stay apart for choosing the decoding
    assert set(plain.splits) == {"train", "validation", "t0_validation", "nl2kw_validation"}
    assert len(plain.splits["train"]) == 1 and plain.references("validation") == [["what c"]]
    assert task.selection_splits(plain) == ("t0_validation", "nl2kw_validation")
    human = task.prepare(splits, human_pairs=True)
    assert human.splits["train"]["question"] == ["what a b", "who d", "why d"]
    assert human.references("validation") == [["what c"], ["what e", "who e"]]
    assert human.references("t0_validation") == [["what c"]]
    assert human.references("nl2kw_validation") == [["what e", "who e"]]
    with pytest.raises(Exception, match="nl2kw_train"):
        task.prepare(
            datasets.DatasetDict(train=splits["train"], validation=splits["validation"]), human_pairs=True
        )
    # n copies of the human TRAIN pairs (upsampling), validation once
    tripled = task.prepare(splits, human_pairs=3)
    assert tripled.splits["train"]["question"] == ["what a b"] + ["who d", "why d"] * 3
    assert tripled.references("validation") == human.references("validation")
    for bad in (-1, 1.5, "2"):
        with pytest.raises(InvalidInputError, match="human_pairs"):
            task.prepare(splits, human_pairs=bad)
    # the further synthetic keyword queries per question: trained on only with synthetic_extra
    splits["synthetic_extra"] = as_training_split(["b a"], [["what a b"]])
    assert task.prepare(splits).splits["train"]["keyword_query"] == ["a b"]
    assert task.prepare(splits, synthetic_extra=True).splits["train"]["keyword_query"] == ["a b", "b a"]
    with pytest.raises(InvalidInputError, match="synthetic_extra"):
        task.prepare(datasets.DatasetDict(train=splits["train"]), synthetic_extra=True)
    with pytest.raises(InvalidInputError, match="synthetic_extra"):
        task.prepare(splits, synthetic_extra=1)


def test_synthetic_first_holds_the_synthetic_pairs_apart_for_pretraining():
    task = get_task("k2q")
    synthetic = [f"k{i}" for i in range(5)]
    splits = datasets.DatasetDict(
        train=as_training_split(synthetic, [[f"what {k}"] for k in synthetic]),
        validation=as_training_split(["c", "t"], [["what c"], ["which t"]]),
        seed_train=as_training_split(["s1", "s2"], [["which s1"], ["give me all s2"]]),
        seed_validation=as_training_split(["t"], [["which t"]]),
    )
    data = task.prepare(splits, seed_pairs=True, synthetic_first=True)
    # the second stage trains on T_0's pairs alone; the synthetic ones are the pretraining pairs
    assert data.splits["train"]["keyword_query"] == ["s1", "s2"]
    pairs, info = task.pretraining_data("synthetic", data)
    assert pairs["keyword_query"] == synthetic and info == {"pretraining_pairs": 5}
    assert data.references("validation") == [["which t"]]
    # replay: that many synthetic pairs per human pair beside them in the second stage (a seeded draw)
    replayed = task.prepare(splits, seed_pairs=True, synthetic_first=True, replay=2)
    drawn = replayed.splits["train"]["keyword_query"]
    assert drawn[:2] == ["s1", "s2"] and len(drawn) == 6 and set(drawn[2:]) <= set(synthetic)
    assert len(set(drawn[2:])) == 4
    again = task.prepare(splits, seed_pairs=True, synthetic_first=True, replay=2)
    assert again.splits["train"]["keyword_query"] == drawn
    capped = task.prepare(splits, seed_pairs=True, synthetic_first=True, replay=9)
    assert len(capped.splits["train"]) == 2 + 5  # no more than the synthetic set holds
    # what the options cannot mean is an error that names them
    with pytest.raises(InvalidInputError, match="synthetic_first"):
        task.prepare(splits, synthetic_first=True)  # no human pairs to train on second
    with pytest.raises(InvalidInputError, match="synthetic_first"):
        task.prepare(splits, seed_pairs=True, synthetic_pairs=False, synthetic_first=True)
    with pytest.raises(InvalidInputError, match="replay"):
        task.prepare(splits, seed_pairs=True, replay=1)
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidInputError, match="replay"):
            task.prepare(splits, seed_pairs=True, synthetic_first=True, replay=bad)
    with pytest.raises(InvalidInputError, match="synthetic_first=True"):
        task.pretraining_data("synthetic", task.prepare(splits, seed_pairs=True))
    with pytest.raises(InvalidInputError, match="no pretraining data"):
        task.pretraining_data("wikipedia", data)
    # a word vocabulary (no backbone) is built on both stages' pairs: the synthetic keywords are in it
    assert {"k0", "k4"} <= set(data.tokenizer.get_vocab())


def test_the_two_stage_row_pretrains_on_the_synthetic_pairs_as_warm_start_trains():
    from hf_querygen.experiments.recipes import row_settings
    from hf_querygen.systems import get_system

    reproduction = ding2018.REPRODUCTION
    system, full = get_system("ding2018/warm_start_then_t0"), reproduction.budgets["full"]
    settings = row_settings(reproduction, system, full)
    warm_start = row_settings(reproduction, get_system("ding2018/warm_start"), full)
    # its first stage is warm_start's schedule; a smoke run shortens it
    assert settings["train_options"] == {
        "pretrain_on": "synthetic",
        "pretrain_steps": warm_start["training_overrides"]["max_steps"],
    }
    assert settings["prepare_options"]["synthetic_first"] is True
    quick = row_settings(reproduction, system, reproduction.budgets["quick"])
    assert quick["train_options"]["pretrain_steps"] < 10


def test_human_questions_train_on_each_distinct_question_once():
    task = get_task("k2q")
    human = as_training_split(
        ["golf rules", "usga golf rules", "rules of golf", "pearl farming", "contra", "Iran Contra"],
        [
            ["What are the official rules for golf?"],
            ["what are the official rules for golf ?"],  # the same question, normalised
            ["What are the official rules for golf?"],
            ["Document will describe pearl farming operations."],  # a description that asks nothing
            ["What was the Iran-Contra scandal"],  # its words, first without the question mark
            ["What was the Iran-Contra scandal?"],
        ],
    )
    splits = datasets.DatasetDict(
        train=as_training_split(["k"], [["what k"]]),
        validation=as_training_split(["t"], [["which t"]]),
        seed_train=as_training_split(["s"], [["which s"]]),
        seed_validation=as_training_split(["t"], [["which t"]]),
        nl2kw_train=human,
        nl2kw_validation=as_training_split(["v"], [["what v?"]]),
    )
    data = task.prepare(splits, seed_pairs=True, human_questions=True)
    # each topic's question once, with its first keyword query; T_0's pairs beside them
    assert data.splits["train"]["keyword_query"] == ["k", "golf rules", "Iran Contra", "s"]
    assert data.references("validation") == [["which t"]]  # validation is T_0's own, unchanged
    two_stage = task.prepare(splits, seed_pairs=True, human_questions=True, synthetic_first=True, replay=1)
    assert two_stage.splits["train"]["keyword_query"][:3] == ["golf rules", "Iran Contra", "s"]
    # the human questions alone in the second stage (no T_0 pairs, no replay)
    assert task.prepare(splits, human_questions=True, synthetic_first=True).splits["train"].num_rows == 2
    with pytest.raises(InvalidInputError, match="choose one"):
        task.prepare(splits, human_pairs=True, human_questions=True)
    with pytest.raises(InvalidInputError, match="human_questions"):
        task.prepare(splits, human_questions="yes")
    with pytest.raises(InvalidInputError, match=r"human_questions=True\): the splits lack"):
        task.prepare(datasets.DatasetDict(train=splits["train"]), human_questions=True)


def test_human_pairs_lose_what_an_evaluation_split_holds():
    from hf_querygen.tasks.k2q.data import without_evaluation_overlap

    human = as_training_split(
        ["capital france", "obama wife", "tallest building"],
        [["What is the capital of France?"], ["who is obama's wife", "Who is Obama married to?"], ["x"]],
    )
    test = as_training_split(["Obama, wife"], [["Who is Obama married to ?"]])
    selection = as_training_split(["capital  FRANCE"], [["which city is the capital"]])
    kept, removed = without_evaluation_overlap(human, [test, selection])
    # a shared reference question (any of a pair's references, normalised) or keyword query removes it
    assert kept["keyword_query"] == ["tallest building"] and removed == 2
    kept, removed = without_evaluation_overlap(human, [selection], keyword_queries=False)
    assert removed == 0 and len(kept) == 3


def test_table_scores_prefix_each_test_split():
    record = {"scores": {"t0": {"BLEU": 0.1}, "nl2kw": {"BLEU": 0.2}, "validation": {"BLEU": 0.9}}}
    assert table_scores(record, ("t0", "nl2kw")) == {"t0/BLEU": 0.1, "nl2kw/BLEU": 0.2}


def test_top_l_selection_and_vocabulary_coverage():
    pairs = _pairs(["what is a", "what is b", "who is c", "what is a"], [0.9, 0.1, 0.5, 0.8])
    assert ding2018.data.select_top_l(pairs, 2, "tdf")["question"] == ["what is a", "what is a"]
    assert len(ding2018.data.select_top_l(pairs, 3, "random", seed=1)) == 3
    # vocabulary of T: what is a b who c = 6 words; the top-2 by TDF hold "what is a" = 3 of them
    assert ding2018.data.vocabulary_coverage(pairs, [2, 4], "tdf") == [pytest.approx(0.5), pytest.approx(1.0)]
    random_share = ding2018.data.vocabulary_coverage(pairs, [2], "random", seeds=(0, 1, 2))[0]
    assert 0.5 <= random_share <= 1.0
    with pytest.raises(Exception, match="selection"):
        ding2018.data.select_top_l(pairs, 2, "best")


def test_variants_follow_the_paper():
    assert not ding2018.data.kqgm_config("baseline").paraphrase
    assert ding2018.data.kqgm_config("par").paraphrase and not ding2018.data.kqgm_config("par").phrases
    assert ding2018.data.kqgm_config("par_ph_kqf_tdf").phrases
    assert [ding2018.data.uses_kqf(v) for v in ding2018.data.VARIANTS] == [False, False, False, True, True]


def test_ordering_check_reports_each_adjacent_pair():
    check = ding2018.analysis.ordering_check(
        {"copynet": 0.5, "attnet": 0.4, "ednet": 0.45, "tbm": 0.3, "sdm": 0.2}
    )
    assert check["ours"] == ["copynet", "ednet", "attnet", "tbm", "sdm"]
    assert check["pairs"] == {
        "copynet>attnet": True,
        "attnet>ednet": False,
        "ednet>tbm": True,
        "tbm>sdm": True,
    }
    assert not check["holds"]
    means = ding2018.report.fig5_means(
        {"runs": {"par": {"10": [{"ROUGE-L": 0.2, "BLEU": 0.1}, {"ROUGE-L": 0.4, "BLEU": 0.3}]}}}
    )
    assert means["par"]["ROUGE-L"]["10"] == pytest.approx(0.3)


def test_quick_reproduction_end_to_end(tmp_path, data_dir):
    """Tiny budget: 200 questions, 2 training steps, 12 test examples; every row, both figures. The
    warm-start rows start from a tiny random BERT that reads MiniLM's word pieces with MiniLM's tokenizer
    (their data, prepared with the chosen backbone's tokenizer, is the same): the plumbing is under test
    here, the backbone in test_warm_start."""
    pytest.importorskip("matplotlib")
    from _tiny_bert import save_tiny_bert_with_tokenizer_of

    stand_in = {"backbone": str(save_tiny_bert_with_tokenizer_of(tmp_path / "backbone"))}
    tiny = {
        "max_steps": 2,
        "learning_rate": 1e-2,
        "eval_strategy": "steps",
        "eval_steps": 1,
        "save_strategy": "steps",
        "save_steps": 1,
    }
    budget = Budget(
        "quick",
        seeds=1,
        max_validation=10,
        max_test=12,
        patience=None,
        max_train=20,  # human pairs of copynet_human
        training_overrides=tiny,
        row_train_options={key: {"pretrain_steps": 1} for key in ding2018.TWO_STAGE_ROWS},
        preset_overrides={
            **{
                k: ding2018.TINY_MODEL
                for k in ("ednet", "attnet", "copynet", "copynet_human", "fig5_copynet")
            },
            **dict.fromkeys(ding2018.WARM_START_ROWS, stand_in),
        },
        # greedy and short: a random network never ends its question, so each decoding runs to the limit
        row_decoding=dict.fromkeys(ding2018.WARM_START_ROWS, {"num_beams": 1, "max_new_tokens": 6}),
        settings={
            "questions": 200,
            "cache_dir": str(tmp_path / "cache"),
            "fig5": True,
            "fig5_sizes": (40,),
            "fig5_runs": 1,
            "fig5_training": {"max_steps": 1, "eval_steps": 1, "save_steps": 1},
            "fig6_fractions": (0.5, 1.0),
        },
    )
    reproduction = dataclasses.replace(ding2018.REPRODUCTION, budgets={"full": budget, "quick": budget})
    models = tmp_path / "models"
    document = run_reproduction(
        reproduction, tmp_path / "out", quick=True, data_dir=data_dir, progress=False, save_models=models
    )
    assert set(document["systems"]) == set(ding2018.systems.TABLE_ORDER)
    for system in document["systems"].values():
        assert {"t0/ROUGE-L", "nl2kw/ROUGE-L", "t0/BLEU", "nl2kw/ROUGE-L recall"} <= set(system)
    config = document["config"]
    assert config["split_sizes"]["t0"] == 12 and config["split_sizes"]["train"] == 200
    assert set(config["fig5"]["runs"]) == set(ding2018.data.VARIANTS)
    assert config["fig6"]["tdf"][-1] == pytest.approx(1.0)
    assert "t0/ROUGE-L" in config["orderings"] and config["bleu_signature"].startswith("nrefs:")
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["paper_numbers"]["copynet"]["t0/ROUGE-L"] == pytest.approx(0.5115)
    assert (tmp_path / "out" / "fig5.png").stat().st_size > 0 and (tmp_path / "out" / "fig6.png").exists()
    assert not math.isnan(saved["systems"]["copynet"]["t0/ROUGE-L"]["mean"])
    # the synthetic sets are cached: a second build reads them back
    synthetic = ding2018.data.load_synthetic_data(data_dir, budget.settings)
    assert len(synthetic.synthetic_set("par")) == 200

    # the saved CopyNet answers a keyword query with several distinct, scored questions
    from transformers import pipeline

    generate = pipeline("question-generation", model=str(models / "copynet-seed0"))
    # the search itself (the saved keyword fallback, if any, switched off): distinct questions, best first
    out = generate("capital france", num_return_sequences=3, strategy="distinct-beam", keyword_fallback=None)
    texts = [o["generated_text"] for o in out]
    assert 2 <= len(out) <= 3 and len(set(texts)) == len(texts)
    assert [o["score"] for o in out] == sorted((o["score"] for o in out), reverse=True)
    # with the saved decoding: every question keeps the keywords, or the one fallback stands in for them
    fallback = json.loads((models / "copynet-seed0" / "config.json").read_text())["task_decoding"].get(
        "keyword_fallback"
    )
    out = generate("capital france", num_return_sequences=3, strategy="distinct-beam")
    assert 1 <= len(out) <= 3
    if fallback is not None:
        framed = fill_frame(fallback, "capital france")
        assert all(keeps_keywords(o["generated_text"], "capital france") for o in out) or [
            o["generated_text"] for o in out
        ] == [framed]

    # the README rule's validation measures of a kept model: its saved decoding on the draw the decoding
    # choice scored, so its ROUGE-L and gain over the echo are the ones the choice recorded
    row = "warm_start_then_questions_pointer"
    folder = models / f"{row}-seed0"
    measured = rule_measures(row, [folder], data_dir, reproduction=reproduction, budget_name="quick")
    record = json.loads((tmp_path / "out" / "runs" / f"{row}-seed0.json").read_text())
    chosen = max(record["decoding_selection"], key=lambda selection: selection["criterion"])
    assert set(measured[str(folder)]) == {"decoding", *chosen["by_split"]}
    for split, score in chosen["by_split"].items():
        assert measured[str(folder)][split]["ROUGE-L"] == pytest.approx(score)
        assert measured[str(folder)][split]["gain over echo"] == pytest.approx(score - chosen["floor"][split])
        assert 0 <= measured[str(folder)][split]["keywords_kept"] <= 1
    # a probe of another decoding: its keys over the saved one
    probe = rule_measures(
        row,
        [folder],
        data_dir,
        reproduction=reproduction,
        budget_name="quick",
        decoding={"keyword_bonus": 0.0},
    )[str(folder)]
    assert probe["decoding"] == {**record["decoding"], "keyword_bonus": 0.0}

    # trivial rows are computed, not copied: echo scores the keyword query itself
    fold = ding2018.folds(get_task("k2q"), budget, data_dir)[0]
    t0 = fold.splits["t0"]
    # the human pairs share no question or keyword query with what the models are scored or selected on
    removed = fold.extras["training_metadata"]["human_pairs_removed_for_overlap"]
    assert set(removed) == {"nl2kw_train", "nl2kw_validation", "seed_train", "seed_validation"}
    evaluated = {
        normalize_for_matching(text)
        for name in ("validation", "t0", "nl2kw")
        for column in ("keyword_query", "question")
        for text in fold.splits[name][column]
    }
    human_texts = {
        normalize_for_matching(t)
        for c in ("keyword_query", "question")
        for t in fold.splits["nl2kw_train"][c]
    }
    assert not human_texts & evaluated
    # T_0's own train pairs (the question-frame row trains on them) share nothing with the tests and
    # the validation splits that select that row
    selecting = {
        normalize_for_matching(text)
        for name in ("t0", "nl2kw", "seed_validation", "nl2kw_validation")
        for column in ("keyword_query", "question")
        for text in fold.splits[name][column]
    }
    seed_texts = {
        normalize_for_matching(t) for c in ("keyword_query", "question") for t in fold.splits["seed_train"][c]
    }
    assert not seed_texts & selecting and len(fold.splits["seed_train"]) > 0
    # a paper's row is the network's own output; the keyword fallback is its own row, chosen on validation
    # among the full grid (the own decodings and the fallback frames) for the same trained model
    runs = tmp_path / "out" / "runs"
    for key in ding2018.systems.FALLBACK_ROWS:
        own = json.loads((runs / f"{key}-seed0.json").read_text())
        variant = json.loads((runs / f"{key}_echo_fallback-seed0.json").read_text())
        assert "keyword_fallback" not in own["decoding"], own["decoding"]
        assert [row["decoding"] for row in own["decoding_selection"]] == [
            {**ding2018.systems.GREEDY, **entry} for entry in get_task("k2q").decoding_grid
        ]
        assert [row["decoding"] for row in variant["decoding_selection"]] == [
            {**ding2018.systems.GREEDY, **entry} for entry in get_task("k2q").fallback_decoding_grid
        ]
        assert variant["decoding"] in [row["decoding"] for row in variant["decoding_selection"]]
        if "keyword_fallback" not in variant["decoding"]:  # the same decoding of the same model
            assert variant["outputs"] == own["outputs"]
        saved_decoding = json.loads((models / f"{key}-seed0" / "config.json").read_text())["task_decoding"]
        assert saved_decoding == own["decoding"]
    # the measures of what users need, from every run's outputs; the reference row is the questions
    reference = document["systems"]["reference"]
    assert reference["t0/ROUGE-L"]["mean"] == pytest.approx(1.0)
    for key, cells in document["systems"].items():
        for split in ("t0", "nl2kw"):
            assert 0.0 <= cells[f"{split}/keywords_kept"]["mean"] <= 1.0, key
    assert document["systems"]["echo"]["t0/keywords_kept"]["mean"] == pytest.approx(1.0)
    assert "keywords_kept" in config["user_measures"] and "wellformed" in config["user_measures"]
    echo = json.loads(next((tmp_path / "out" / "runs").glob("echo-*.json")).read_text())
    assert echo["outputs"]["t0"] == t0["keyword_query"]
    expected = k2q_scores(t0["keyword_query"], t0["references"])["ROUGE-L"]
    assert document["systems"]["echo"]["t0/ROUGE-L"]["mean"] == pytest.approx(expected)
    frame = json.loads(next((tmp_path / "out" / "runs").glob("frame-*.json")).read_text())
    assert frame["info"]["frame"].split().count("X") == 1
    # `train --system` trains exactly the recipe the run saved: same data, same config, same weights
    from safetensors.torch import load_file

    from hf_querygen.experiments.recipes import training_recipe
    from hf_querygen.training import train_model

    for key in ("copynet", "copynet_human", "question_frames"):
        recipe = training_recipe(f"ding2018/{key}", "quick", data_dir, reproduction=reproduction)
        trained = tmp_path / f"trained-{key}"
        metadata = train_model(dataclasses.replace(recipe.recipe(), seed=0), recipe.data(), trained)
        saved = json.loads((models / f"{key}-seed0" / "hf_querygen_training.json").read_text())
        for field in ("data_fingerprint", "recipe", "system", "budget"):
            assert metadata[field] == saved[field], field
        if key == "question_frames":  # its train --system fold does not build the synthetic set it drops
            assert metadata["synthetic_set"] is None and metadata["train_examples"] == saved["train_examples"]
        else:
            assert metadata["synthetic_set"] == saved["synthetic_set"]
            assert (
                metadata["synthetic_set"]["pairs"] == 200
                and len(metadata["synthetic_set"]["fingerprint"]) == 40
            )
        ours = json.loads((trained / "config.json").read_text())
        theirs = json.loads((models / f"{key}-seed0" / "config.json").read_text())
        assert ours == theirs  # sizes, vocabularies, and the decoding chosen on validation
        weights = load_file(str(trained / "model.safetensors"))
        reference = load_file(str(models / f"{key}-seed0" / "model.safetensors"))
        assert weights.keys() == reference.keys()
        assert all(weights[k].equal(reference[k]) for k in weights)
    human = json.loads((tmp_path / "trained-copynet_human" / "hf_querygen_training.json").read_text())
    assert human["train_examples"] == 200 + 20  # the synthetic pairs plus the (capped) human pairs
    # the extra row copynet_kq3: its fold carries the further keyword queries of each question (the
    # set built with 3 per question), which only its prepare option trains on
    several = training_recipe("ding2018/copynet_kq3", "quick", data_dir, reproduction=reproduction)
    further = several.splits["synthetic_extra"]
    assert 0 < len(further) <= 2 * 200 and several.prepare_options["synthetic_extra"] is True
    assert several.metadata["synthetic_extra_pairs"] == len(further)
    train = several.splits["train"]
    kept = dict(zip(train["question"], train["keyword_query"], strict=True))
    assert all(kept[q] != k for q, k in zip(further["question"], further["keyword_query"], strict=True))
    prepared = get_task("k2q").prepare(several.splits, **several.prepare_options)
    assert len(prepared.splits["train"]) == 200 + len(further)
    assert "synthetic_extra" not in get_task("k2q").prepare(several.splits).splits
    assert human["selected_on"] == "eval_ROUGE-L" and human["decoding_selection"]


def test_train_system_options_and_recipe_errors(tmp_path, data_dir, capsys):
    from hf_querygen.cli import main as cli_main
    from hf_querygen.errors import InvalidInputError
    from hf_querygen.experiments.recipes import training_recipe

    preset = [
        "train",
        "--preset",
        "ding2018-copynet",
        "--budget",
        "quick",
        "--output-dir",
        str(tmp_path / "a"),
    ]
    assert cli_main(preset) != 0 and "go with --system" in capsys.readouterr().err
    assert cli_main(["train", "--system", "ding2018/echo", "--output-dir", str(tmp_path / "b")]) != 0
    assert "baseline" in capsys.readouterr().err
    with pytest.raises(InvalidInputError, match="no budget 'huge'"):
        training_recipe("ding2018/copynet", "huge", data_dir)
    with pytest.raises(InvalidInputError, match="not trained"):
        training_recipe("ding2018/tbm", "quick", data_dir)
    # the seed pairs alone stay one explicit option away (no synthetic set is built or read)
    tiny = "--set embedding_size=8 --set hidden_size=8 --set decoder_hidden_size=8".split()
    out = tmp_path / "seed-pairs"
    arguments = ["train", "--system", "ding2018/copynet", "--task-corpus-only", "--output-dir", str(out)]
    assert cli_main([*arguments, "--max-steps", "2", "--data-dir", str(data_dir), *tiny]) == 0
    saved = json.loads((out / "hf_querygen_training.json").read_text())
    assert saved["corpus"] == "k2q" and "synthetic_set" not in saved and "recipe" not in saved
    assert saved["train_examples"] == len(K2QTask().load(data_dir=data_dir)["train"])


def test_k2q_evaluate_scores_against_every_reference(monkeypatch):
    """K2QTask.evaluate (what `hf-querygen evaluate` calls) takes the max over all references."""
    from hf_querygen.tasks.k2q.task import K2Q

    split = as_training_split(["capital france"], [["who is it", "capital france"]])
    # an echoing predict: evaluate's scoring is what is under test
    monkeypatch.setattr(K2Q, "predict", lambda model, tokenizer, sources, **kwargs: list(sources))
    scores, outputs = K2Q.evaluate(None, None, split)
    assert outputs == ["capital france"] and scores["ROUGE-L"] == pytest.approx(1.0)


def test_extra_rows_of_single_long_runs_print_after_the_tables_rows():
    from pathlib import Path

    committed = Path(__file__).resolve().parent.parent / "results" / "ding2018" / "results.json"
    document = json.loads(committed.read_text())
    extra = ding2018.systems.EXTRA_ROW_LABELS
    for key in extra:
        document["systems"].pop(key, None)
    # a table row and an extra row (the committed table's CopyNet numbers are its echo-fallback row's)
    document["systems"]["copynet"] = document["systems"]["copynet_echo_fallback"]
    document["systems"]["copynet_recipe"] = document["systems"]["copynet_echo_fallback"]
    markdown = ding2018.report.render_markdown(document)
    t0_table = markdown.split("## Table 2 on T_0 test", 1)[1].split("##", 1)[0]
    rows = [line.split("|")[1].strip() for line in t0_table.splitlines() if line.startswith("| ")]
    assert rows[-1] == extra["copynet_recipe"] and extra["copynet_human_5000"] not in rows
    assert rows.index("CopyNet") < rows.index(extra["copynet_recipe"])


def test_a_validation_cap_limits_every_split_the_decoding_is_chosen_on():
    """``--max-validation-examples N`` (DataSelection.max_validation_examples): the first N examples of
    ``validation`` and of each named validation split (k2q chooses its decoding on T_0's and nl2kw's), not
    of ``validation`` alone; train and test are not validation."""
    from hf_querygen.training import DataSelection, Recipe
    from hf_querygen.training.model_training import _prepared_data

    def split(n: int, tag: str) -> datasets.Dataset:
        queries = [f"{tag} query {i}" for i in range(n)]
        return as_training_split(queries, [[f"what is {query} ?"] for query in queries])

    splits = datasets.DatasetDict(
        train=split(12, "train"),
        validation=split(9, "t0"),
        nl2kw_validation=split(7, "users"),
        nl2kw=split(6, "test"),
    )
    data = DataSelection(task="k2q", splits=splits, max_validation_examples=3)
    prepared = _prepared_data(Recipe(preset="ding2018-copynet"), data)
    sizes = {name: len(prepared.splits[name]) for name in ("train", "t0_validation", "nl2kw_validation")}
    assert sizes == {"train": 12, "t0_validation": 3, "nl2kw_validation": 3}
    assert prepared.splits["nl2kw_validation"]["keyword_query"] == [f"users query {i}" for i in range(3)]
    assert get_task("k2q").selection_splits(prepared) == ("t0_validation", "nl2kw_validation")
