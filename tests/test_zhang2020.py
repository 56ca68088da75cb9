"""zhang2020 reproduction at tiny size: the runner scores CtrsGen, an ablation, PG and the baselines on
q2id, pipeline("intent-description") on a saved model returns exactly the table's outputs, the sweep,
significance and beta-plot hooks fill the report; the q2id task's ROUGE scoring by hand."""

import dataclasses
import json

import pytest
from transformers import AutoModelForSeq2SeqLM, pipeline

from hf_querygen.experiments import zhang2020
from hf_querygen.experiments.recipes import default_folds
from hf_querygen.experiments.runner import run_reproduction
from hf_querygen.experiments.tables import Budget
from hf_querygen.tasks.base import TASKS, get_task
from hf_querygen.tasks.q2id.task import Q2IDTaskData

TINY = {"embedding_size": 8, "hidden_size": 8, "decoder_hidden_size": 8}
TINY_PG = {"embedding_size": 8, "hidden_size": 8}
KEEP = ("ctrsgen", "ctrsgen_i", "ctrsgen_copy", "pg", "textrank", "copy_query", "oracle")


@pytest.fixture(scope="module")
def tiny_zhang2020():
    budget = Budget(
        "quick",
        max_train=40,
        max_validation=6,
        max_test=6,
        patience=None,
        training_overrides={
            "max_steps": 2,
            "eval_strategy": "no",
            "load_best_model_at_end": False,
            "per_device_train_batch_size": 8,
        },
        preset_overrides={
            "ctrsgen": TINY,
            "ctrsgen_i": TINY,
            "ctrsgen_copy": TINY,
            "pg": TINY_PG,
            **{zhang2020.sweep_key(s): TINY for s in zhang2020.SWEEP},
        },
    )
    return dataclasses.replace(
        zhang2020.REPRODUCTION,
        systems=[s for s in zhang2020.REPRODUCTION.systems if s.key in KEEP],
        budgets={"quick": budget, "full": budget},
        # two sweep settings only, to keep the test fast
        extra_systems=lambda budget, seeds: zhang2020.sweep_systems(budget, seeds)[:2],
    )


def test_task_is_registered_with_its_pipeline_and_card_tag():
    task = TASKS.get("q2id")
    assert (task.pipeline_task, task.pipeline_tag, task.corpora) == (
        "intent-description",
        "summarization",
        {"q2id": ()},
    )


def test_sources_are_records_or_json_and_bad_ones_are_named():
    from hf_querygen.errors import InvalidInputError
    from hf_querygen.tasks.q2id.task import as_source

    record = {"query": "q", "relevant_documents": [["one sentence.", "two"], "raw text"]}
    source = as_source(record)
    assert source["relevant_documents"][0] == {"sentences": ["one sentence.", "two"]}
    assert source["irrelevant_documents"] == []
    assert as_source(json.dumps(record)) == source
    with pytest.raises(InvalidInputError, match="relevant_documents"):
        as_source({"query": "q"})
    with pytest.raises(InvalidInputError, match="lists of documents"):
        as_source({"query": "q", "relevant_documents": "not a list"})


def test_score_is_rouge_recall_f1_and_length_by_hand():
    task = get_task("q2id")
    # prediction "the cat sat" vs reference "the cat sat on the mat": unigram recall 3/6, precision 3/3
    scores = task.score(["the cat sat"], ["the cat sat on the mat"], [{}])
    assert scores["rouge1_recall"] == pytest.approx(3 / 6)
    assert scores["rouge1_f"] == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert scores["rouge2_recall"] == pytest.approx(2 / 5)  # "the cat", "cat sat" of 5 bigrams
    assert scores["rougeL_recall"] == pytest.approx(3 / 6)
    assert scores["output_words"] == 3.0


def test_tiny_reproduction_and_pipeline_equals_table(tiny_zhang2020, data_dir, tmp_path):
    out, models = tmp_path / "results", tmp_path / "models"
    document = run_reproduction(
        tiny_zhang2020, out, quick=True, data_dir=data_dir, workers=1, save_models=models, progress=False
    )
    assert set(document["systems"]) == set(KEEP)  # the sweep rows feed the config only
    for key in KEEP:
        assert set(zhang2020.TABLE_METRICS) <= set(document["systems"][key]), key
    config = document["config"]
    # two trained sweep settings plus the table's own, read from the seed-0 CtrsGen row's validation scores
    swept = {system.key for system, _ in zhang2020.sweep_systems(None, 1)[:2]}
    assert set(config["contrast_sweep_validation"]) == swept | {
        zhang2020.sweep_key(zhang2020.CONTRAST_SETTING)
    }
    assert set(config["significance_vs_ctrsgen"]) == set(KEEP) - {"ctrsgen"}
    p = config["significance_vs_ctrsgen"]["oracle"]["rouge1_recall"]["p_value"]
    assert 0.0 <= p <= 1.0
    assert config["beta_plot"] == "beta.png" and (out / "beta.png").stat().st_size > 0
    assert len(config["beta_top_sentences"]) == 3
    # beyond the paper: the same CtrsGen model decoding with BM25-retrieved documents
    retrieved = config["retrieval_sourced"]
    assert retrieved["relevant_documents"] in zhang2020.analysis.RETRIEVED_RELEVANT_CHOICES
    assert set(zhang2020.TABLE_METRICS) <= set(retrieved["summary"])
    judged_r1 = document["systems"]["ctrsgen"]["rouge1_recall"]["mean"]
    assert retrieved["summary"]["rouge1_recall"]["judged"] == pytest.approx(judged_r1)
    assert 0.0 <= retrieved["retrieved_relevant_precision"] <= 1.0
    # beyond the paper: the default model (CtrsGen + copy) against copying the query and TextRank
    tests = config["default_model"]["significance"]["test"]
    assert set(tests) == {"copy_query", "textrank"}
    for by_metric in tests.values():
        assert set(by_metric) == set(zhang2020.systems.DEFAULT_MODEL_METRICS)
        assert all(0.0 <= m["permutation"]["p_value"] <= 1.0 for m in by_metric.values())
    markdown = (out / "results.md").read_text()
    assert "the default model (CtrsGen + copy)" in markdown
    assert "Table 3" in markdown and "Table 4" in markdown and "24.76" in markdown  # the paper's CtrsGen
    assert "documents from the retrieval engine" in markdown
    assert document["paper_numbers"]["ctrsgen"]["rouge1_recall"] == pytest.approx(0.2476)

    (fold,) = default_folds(get_task("q2id"), tiny_zhang2020.budgets["quick"], data_dir, "q2id", None)
    test = fold.splits["test"]
    sources = Q2IDTaskData(get_task("q2id"), fold.splits, None).sources("test")
    for key in ("ctrsgen", "pg"):
        record = json.loads((out / "runs" / f"{key}-seed0.json").read_text())
        folder = models / f"{key}-seed0"
        assert type(AutoModelForSeq2SeqLM.from_pretrained(folder)).__name__.startswith(
            "CtrsGen" if key == "ctrsgen" else "QueryPointerGenerator"
        )
        describe = pipeline("intent-description", model=str(folder))
        piped = [r[0]["description"] for r in describe(sources, batch_size=4, **zhang2020.systems.DECODING)]
        assert piped == record["outputs"]["test"], key
        assert "pipeline_tag: summarization" in (folder / "README.md").read_text()
    # the oracle reads the reference: it can only be at least as good as any single relevant sentence
    oracle = json.loads((out / "runs" / "oracle-seed0.json").read_text())
    assert len(oracle["outputs"]["test"]) == len(test)


def test_train_system_ctrsgen_copy_selects_on_validation_rouge_and_saves_its_decoding(data_dir, tmp_path):
    """`train --system zhang2020/ctrsgen_copy` (tiny sizes) trains the row's recipe: the copy family, the
    run's caps and output vocabulary, the best checkpoint by validation ROUGE (not the loss), and the
    decoding chosen on validation from the row's grid (what the table's report chooses) saved as the model's
    task decoding."""
    from hf_querygen.cli import main
    from hf_querygen.systems import get_system

    folder = tmp_path / "copy"
    argv = ["train", "--system", "zhang2020/ctrsgen_copy", "--output-dir", str(folder), "--data-dir"]
    argv += [
        str(data_dir),
        "--max-steps",
        "3",
        "--max-train-examples",
        "40",
        "--max-validation-examples",
        "6",
    ]
    for field, size in TINY.items():
        argv += ["--set", f"{field}={size}"]
    assert main(argv) == 0
    metadata = json.loads((folder / "hf_querygen_training.json").read_text())
    config = json.loads((folder / "config.json").read_text())
    system = get_system("zhang2020/ctrsgen_copy")
    assert metadata["family"] == "hierarchical-copy" and config["copy"] is True
    assert metadata["output_vocab_size"] == zhang2020.OUTPUT_VOCAB_SIZE
    assert metadata["prepare_options"]["caps"] == zhang2020.CAPS
    # the decoding is chosen on validation after training from the row's grid, as the table's report does
    assert config["task_decoding"] == metadata["decoding"]
    assert config["task_decoding"] in [dict(entry) for entry in system.decoding_choice.grid]
    assert [row["decoding"] for row in metadata["decoding_selection"]] == [
        {**system.decoding, **entry} for entry in system.decoding_choice.grid
    ]
    assert metadata["selected_on"] == "eval_rouge_goal"
    curve = metadata["evaluations"]
    assert len(curve) == 3 and all({"eval_loss", "eval_rouge_goal", "eval_rougeL_f"} <= set(e) for e in curve)
    best = max(curve, key=lambda e: e["eval_rouge_goal"])
    assert metadata["best_metric"] == pytest.approx(best["eval_rouge_goal"])
    assert metadata["best_checkpoint_step"] == best["step"]
    goal = [e["eval_rouge1_recall"] + e["eval_rougeL_recall"] + e["eval_rougeL_f"] for e in curve]
    assert [e["eval_rouge_goal"] for e in curve] == pytest.approx([g / 3 for g in goal])

    # the decoding is chosen on validation (never test) and saved; test is decoded once with it
    from hf_querygen.experiments.zhang2020.copy import report as copy_report

    trained_choice = config["task_decoding"]
    report = copy_report(folder, data_dir, limit=6)  # the 6 validation queries training saw
    rows = report["decoding_grid_validation"]
    assert [row["decoding"] for row in rows] == [dict(entry) for entry in system.decoding_choice.grid]
    assert report["decoding"] == max(rows, key=lambda row: row["scores"]["rouge_goal"])["decoding"]
    # the report's choice is train --system's: the same grid, metric, validation split and tie rule
    assert report["decoding"] == trained_choice
    assert json.loads((folder / "config.json").read_text())["task_decoding"] == report["decoding"]
    assert set(report["scores"]["test"]) == {"ctrsgen_copy", *zhang2020.systems.DEFAULT_MODEL_BASELINES}
    for baseline in zhang2020.systems.DEFAULT_MODEL_BASELINES:
        assert set(report["significance"]["test"][baseline]) == set(zhang2020.systems.DEFAULT_MODEL_METRICS)


def test_paper_budget_uses_the_paper_sizes_for_every_neural_row():
    budget = zhang2020.REPRODUCTION.budgets["paper"]
    assert budget.seeds == 3 and budget.training_overrides["learning_rate"] == 5e-4
    # no size override but the copy row's: every preset is already the paper's size
    assert set(budget.preset_overrides) == {"ctrsgen_copy"}
    assert budget.preset_overrides["ctrsgen_copy"]["hidden_size"] == 256


def test_each_ablation_pairs_rows_that_differ_in_their_part_alone():
    """A row of ``systems.ABLATIONS`` and the row it is compared with: the same backbone, caps, selection
    and decoding grid; the contrast's pairs differ in the contrast's options alone, the pointer's in the
    preset alone (``warm_start`` also stops at 600 steps: its schedule is its own, the rate constant)."""
    from hf_querygen.experiments.zhang2020.systems import (
        CONTRAST_ABLATIONS,
        POINTER_ABLATIONS,
        WARM_START_CONTRAST,
    )
    from hf_querygen.systems import get_system

    def row(key: str):
        return get_system(f"zhang2020/{key}")

    def without(options, keys):
        return {key: value for key, value in options.items() if key not in keys}

    for with_part, without_part in CONTRAST_ABLATIONS.items():
        a, b = row(with_part), row(without_part)
        assert a.prepare_options["contrast_weight"] > 0 == b.prepare_options["contrast_weight"]
        contrast = set(WARM_START_CONTRAST)
        assert without(a.prepare_options, contrast) == without(b.prepare_options, contrast)
        assert (a.preset, a.train_options) == (b.preset, b.train_options)
        assert a.decoding_choice == b.decoding_choice
    for with_part, without_part in POINTER_ABLATIONS.items():
        a, b = row(with_part), row(without_part)
        assert (a.preset, b.preset) == ("bert2bert-pointer", "bert2bert")
        assert (a.prepare_options, a.train_options) == (b.prepare_options, b.train_options)
        assert a.decoding_choice == b.decoding_choice
    # what train --system zhang2020/warm_start trains: the pointer, the frozen encoder and the contrast
    warm = row("warm_start")
    assert warm.preset == "bert2bert-pointer" and warm.train_options["frozen_encoder"] is True
    assert warm.prepare_options["contrast_weight"] == WARM_START_CONTRAST["contrast_weight"]
    assert warm.training_overrides["max_steps"] == 600
    gpu = row("warm_start_finetuned_encoder")
    assert "frozen_encoder" not in gpu.train_options and gpu.preset == "bert2bert"


def test_rows_trained_one_by_one_say_where_they_come_from_and_each_warm_start_gets_its_paired_tests():
    from hf_querygen.experiments.zhang2020.report import _device_rows_section

    def tests(row: str, difference: float) -> dict:
        permutation = {"mean_difference": difference, "p_value": 0.0002}
        result = {"permutation": permutation, "ttest": {"p_value": 0.01}}
        return {"metrics": {"rougeL_f": result}, "note": f"{row} minus ctrsgen_copy_h200"}

    cell = {"mean": 0.168, "std": 0.002, "n": 3}
    document = {
        # a table row trained one by one: its cells are in the section's table too, with the re-run's
        "systems": {"warm_start_no_contrast": {"rougeL_f": cell}},
        "config": {
            "device_rows": {"ctrsgen_copy_h200": {"rougeL_f": {"mean": 0.177, "std": 0.004, "n": 3}}},
            "device_rows_note": "The H200 warm_start records never trained the contrast.",
            "row_provenance": {"warm_start_no_contrast": "records of `zhang2020/warm_start`, 3 seed(s)"},
            "warm_start_vs_copy": {
                "warm_start_no_contrast": tests("warm_start_no_contrast", -0.0132),
                "warm_start_frozen_encoder": tests("warm_start_frozen_encoder", -0.02),
            },
            "contrast_ablation": {
                "warm_start_frozen_encoder_contrast": tests("the contrast's ablation: with", 0.0071),
            },
            "pointer_ablation": {
                "warm_start_frozen_encoder_pointer": tests("the pointer's ablation: with", 0.0123),
            },
        },
    }
    text = "\n".join(_device_rows_section(document))
    assert "the contrast's ablation: with minus" in text and "| rougeL_f | +0.0071 |" in text
    assert "the pointer's ablation: with minus" in text and "| rougeL_f | +0.0123 |" in text
    assert "never trained the contrast" in text and "records of `zhang2020/warm_start`" in text
    assert "warm_start_no_contrast minus" in text and "| rougeL_f | -0.0132 |" in text
    assert "warm_start_frozen_encoder minus" in text and "| rougeL_f | -0.0200 |" in text
    table = [line for line in text.splitlines() if line.startswith("| warm_start_no_contrast |")]
    assert len(table) == 1 and "16.80" in table[0]
    assert any(line.startswith("| ctrsgen_copy_h200 |") and "17.70" in line for line in text.splitlines())
    assert _device_rows_section({"config": {}}) == []


def test_provenance_says_whether_records_were_trained_or_decoded_again_from_kept_models():
    from hf_querygen.experiments.zhang2020.studies.device_rows import provenance

    record = {
        "system": "warm_start_frozen_encoder",
        "seed": 0,
        "device": "cpu",
        "budget": "full",
        "time_limit_s": 600.0,
        "training": {"global_steps": 1800, "epochs": 10.4},
        "decoding": {"restate_query": True, "encoder_repetition_penalty": 1.15},
    }
    trained = provenance("warm_start_frozen_encoder", [record])
    assert "the runner's training and scoring" in trained and "time limit 600.0 s" in trained
    assert "1,800 steps (10.4 epochs)" in trained and '"encoder_repetition_penalty": 1.15' in trained
    rescored = provenance("warm_start_frozen_encoder", [{**record, "rescored_from": "kept/run"}])
    assert "decoded and scored again" in rescored and "no training" in rescored
    assert "time limit" not in rescored and not rescored.startswith("records of")
    mixed = provenance("warm_start_frozen_encoder", [record, {**record, "seed": 1, "rescored_from": "kept"}])
    assert "the runner's training and scoring" in mixed and mixed.count("its kept model decoded again") == 1
    assert mixed.index("seed 1") < mixed.index("its kept model decoded again")
    # a rescored first seed (no time limit of its own) beside a trained one: the trained run's limit
    rescored_first = {**record, "rescored_from": "kept", "time_limit_s": None}
    mixed = provenance("warm_start_frozen_encoder", [rescored_first, {**record, "seed": 1}])
    assert "time limit 600.0 s" in mixed and "None" not in mixed
    # a row decoding another row's model says whose model it decodes
    capped = {**record, "system": "warm_start_capped", "rescored_from": "kept"}
    assert provenance("warm_start_capped", [capped]).startswith("the `warm_start` model of each seed decoded")


def test_paired_tests_compare_every_measure_by_both_methods():
    from hf_querygen.experiments.zhang2020.analysis import paired_tests
    from hf_querygen.experiments.zhang2020.studies.device_rows import COMPARED

    rows = [{metric: 0.1 * i + 0.04 + 0.01 * (i % 3) for metric in COMPARED} for i in range(9)]
    others = [{metric: 0.1 * i for metric in COMPARED} for i in range(9)]
    result = paired_tests(rows, others, COMPARED)
    assert set(result) == set(COMPARED)
    for by_method in result.values():
        assert set(by_method) == {"permutation", "ttest"}
        assert by_method["permutation"]["mean_difference"] == pytest.approx(0.05)
        assert by_method["permutation"]["p_value"] < 0.05


def test_the_capped_row_decodes_the_warm_start_model_with_its_own_length_caps_chosen_on_rouge_l_f1():
    """``warm_start_capped``: one registration that decodes ``warm_start``'s model (the runner's job and
    ``device_rows`` score it with that model, ``train --system`` trains that row and saves this row's
    choice), its grid the restated query with the description capped, chosen on ROUGE-L F1; the table lists
    it beside ``warm_start`` and the study measures the cap as an ablation."""
    from hf_querygen.cli import build_parser
    from hf_querygen.commands import _command_recipe
    from hf_querygen.experiments.jobs import with_variants
    from hf_querygen.experiments.zhang2020.systems import (
        ABLATIONS,
        TABLE4,
        WARM_START_LENGTH_CAPS,
        WARM_START_VARIANTS,
    )
    from hf_querygen.systems import get_system

    warm, capped = get_system("zhang2020/warm_start"), get_system("zhang2020/warm_start_capped")
    assert with_variants(warm, zhang2020.REPRODUCTION.systems) == (warm, capped)
    assert capped.decodes_model_of == "warm_start" and capped.decoding == warm.decoding
    grid = capped.decoding_choice.grid
    assert capped.decoding_choice.metric == "rougeL_f" != warm.decoding_choice.metric
    assert {entry["max_new_tokens"] for entry in grid} == set(WARM_START_LENGTH_CAPS)
    assert all(entry["restate_query"] is True for entry in grid)
    assert all("max_new_tokens" not in entry for entry in warm.decoding_choice.grid)
    assert TABLE4.index("warm_start_capped") == TABLE4.index("warm_start") + 1
    pairs, part = ABLATIONS["length_cap_ablation"]
    assert pairs == WARM_START_VARIANTS and dict(pairs) == {"warm_start_capped": "warm_start"}
    assert part == "the length cap"
    args = build_parser().parse_args(
        ["train", "--system", "zhang2020/warm_start_capped", "--output-dir", "x"]
    )
    recipe, _ = _command_recipe(args)
    assert recipe.preset == warm.preset and recipe.training_overrides == dict(warm.training_overrides)
    assert recipe.decoding_choice == capped.decoding_choice
