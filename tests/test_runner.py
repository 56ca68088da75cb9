"""The experiment runner: pipeline() on a saved model gives exactly the table's outputs, finished runs
are persisted and skipped on --resume, output folders are never silently reused, and an interrupted
training continues from its last checkpoint."""

import dataclasses
import json

import pytest
from transformers import pipeline

from hf_querygen._fs import write_marker
from hf_querygen.experiments import liu2018, recipes, runner
from hf_querygen.experiments.runner import run_reproduction
from hf_querygen.experiments.tables import Budget
from hf_querygen.tasks.base import get_task

TINY = {"embedding_size": 8, "hidden_size": 8}


@pytest.fixture(scope="module")
def tiny_liu2018():
    budget = Budget(
        "quick",
        max_train=64,
        max_validation=16,
        max_test=16,
        patience=None,
        training_overrides={"num_train_epochs": 1, "eval_strategy": "no", "load_best_model_at_end": False},
        preset_overrides={"dual_decoder": TINY, "sequence_labeling": TINY},
    )
    keep = ("raw_query", "dual_decoder", "sequence_labeling")
    return dataclasses.replace(
        liu2018.REPRODUCTION,
        systems=[s for s in liu2018.REPRODUCTION.systems if s.key in keep],
        budgets={"quick": budget, "full": budget},
        extra_systems=None,
        analyses=(),
        plots=None,
        render_markdown=None,
    )


def test_pipeline_on_a_saved_model_gives_the_tables_outputs(tiny_liu2018, data_dir, tmp_path, monkeypatch):
    out, models = tmp_path / "results", tmp_path / "models"
    document = run_reproduction(
        tiny_liu2018, out, quick=True, data_dir=data_dir, workers=1, save_models=models, progress=False
    )
    assert set(document["systems"]) == {"raw_query", "dual_decoder", "sequence_labeling"}
    assert {"f1", "precision", "recall"} <= set(document["systems"]["dual_decoder"])
    assert (out / "results.md").is_file() and (out / "train.log").stat().st_size > 0
    assert not (out / "checkpoints").exists()

    sources = [
        row["nl_query"]
        for row in recipes.default_folds(
            get_task("nl2kw"), tiny_liu2018.budgets["quick"], data_dir, "nl2kw", "en"
        )[0].splits["test"]
    ]
    for key in ("dual_decoder", "sequence_labeling"):
        record = json.loads((out / "runs" / f"{key}-seed0.json").read_text())
        generate = pipeline("keyword-query-generation", model=str(models / f"{key}-seed0"))
        piped = [result[0]["keyword_query"] for result in generate(sources, batch_size=5)]
        assert piped == record["outputs"]["test"], key
        assert "pipeline_tag:" in (models / f"{key}-seed0" / "README.md").read_text()

    # a second run into the same folder must say what to do
    with pytest.raises(FileExistsError, match="--resume"):
        run_reproduction(tiny_liu2018, out, quick=True, data_dir=data_dir, workers=1, progress=False)

    # --resume: every run is finished, so nothing trains and the document is the same
    def no_training(*args, **kwargs):
        raise AssertionError("resume retrained a finished run")

    monkeypatch.setattr(runner, "train_and_score", no_training)
    again = run_reproduction(
        tiny_liu2018, out, quick=True, data_dir=data_dir, workers=1, resume=True, progress=False
    )
    assert again["systems"] == document["systems"]


def test_overwrite_starts_again(tiny_liu2018, data_dir, tmp_path):
    out = tmp_path / "results"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "dual_decoder-seed0.json").write_text("{}")  # a stale run must not be read back
    write_marker(out, runner.REPRODUCTION_KIND)  # overwrite deletes only what a reproduction wrote
    document = run_reproduction(
        tiny_liu2018, out, quick=True, data_dir=data_dir, workers=1, overwrite=True, progress=False
    )
    assert document["systems"]["dual_decoder"]["f1"]["n"] == 1


def test_a_budgets_time_limit_stops_every_training_run(tiny_liu2018, data_dir, tmp_path):
    # batch 8: one epoch of the 64 training pairs is 8 steps; a time limit already spent when training
    # begins stops every run after its first step (which it keeps)
    quick = tiny_liu2018.budgets["quick"]
    overrides = {**quick.training_overrides, "per_device_train_batch_size": 8}
    budget = dataclasses.replace(quick, training_overrides=overrides, time_limit_s=1e-9)
    limited = dataclasses.replace(tiny_liu2018, budgets={"quick": budget, "full": budget})
    out = tmp_path / "results"
    run_reproduction(limited, out, quick=True, data_dir=data_dir, workers=1, progress=False)
    for key in ("dual_decoder", "sequence_labeling"):
        record = json.loads((out / "runs" / f"{key}-seed0.json").read_text())
        assert record["training"]["global_steps"] == 1, key


def test_interrupted_training_continues_from_its_last_checkpoint(data_dir, tmp_path):
    from hf_querygen.tasks.base import get_task
    from hf_querygen.training import train_preset

    task = get_task("nl2kw")
    (fold,) = recipes.default_folds(
        task, Budget("t", max_train=64, max_validation=8, max_test=8), data_dir, None, None
    )
    data = task.prepare(fold.splits)
    steps = {
        "eval_strategy": "no",
        "load_best_model_at_end": False,
        "save_strategy": "steps",
        "save_steps": 2,
    }
    common = dict(preset_overrides=TINY, early_stopping_patience=None)
    common["training_overrides"] = {**steps, "per_device_train_batch_size": 8}
    interrupted = train_preset(
        data,
        "liu2018-dual-decoder",
        tmp_path,
        preset_overrides=TINY,
        early_stopping_patience=None,
        training_overrides={**common["training_overrides"], "max_steps": 2},
    )
    assert interrupted.state.global_step == 2 and (tmp_path / "checkpoint-2").is_dir()
    resumed = train_preset(
        data,
        "liu2018-dual-decoder",
        tmp_path,
        preset_overrides=TINY,
        early_stopping_patience=None,
        resume=True,
        training_overrides={**common["training_overrides"], "max_steps": 4},
    )
    assert resumed.state.global_step == 4
    # the resumed run did only steps 3-4: its first logged step comes after the checkpoint
    assert min(log["step"] for log in resumed.state.log_history if "step" in log) > 2


@pytest.mark.parametrize("paper", ["liu2018", "lin2017", "zhang2020"])
def test_train_system_trains_the_tables_recipe_of_every_paper(paper, data_dir):
    """`hf-querygen train --system <paper>/<row>` goes through training_recipe: the table's fold, the
    reproduction's prepare options (zhang2020: document caps and output vocabulary) and the budget's
    training overrides, exactly what the runner passes to train_preset (ding2018: tests/test_ding2018.py)."""
    from hf_querygen.experiments.papers import get_reproduction
    from hf_querygen.experiments.recipes import row_settings, training_recipe

    reproduction = get_reproduction(paper)
    assert reproduction.train_budget == "full"
    system = next(s for s in reproduction.systems if s.trainable)
    recipe = training_recipe(system, "quick", data_dir)
    settings = row_settings(reproduction, system, reproduction.budgets["quick"])
    row = recipe.recipe()
    assert row.prepare_options == settings["prepare_options"]
    assert dict(reproduction.prepare_options).items() <= row.prepare_options.items()
    assert row.training_overrides == settings["training_overrides"]
    assert row.decoding_choice == system.decoding_choice
    assert recipe.data().splits is recipe.splits and recipe.data().metadata == recipe.metadata
    assert recipe.metadata["reproduction"] == paper and recipe.metadata["budget"] == "quick"
    assert {"train", "validation"} <= set(recipe.splits)


def test_a_quick_runs_console_table_says_it_is_a_smoke_run_and_why_rows_read_zero():
    from hf_querygen.experiments.papers import get_reproduction
    from hf_querygen.experiments.runner import summary_table

    reproduction = get_reproduction("liu2018")
    keys = [s.key for s in reproduction.systems if s.in_table][:2]
    metric = list(reproduction.table_metrics)[0]
    systems = {
        keys[0]: {metric: {"mean": 0.0, "std": 0.0, "n": 1}},
        keys[1]: {metric: {"mean": 0.4, "std": 0, "n": 1}},
    }
    document = {"systems": systems, "paper_numbers": {}, "config": {"budget": {"name": "quick"}, "seeds": 1}}
    quick = summary_table(reproduction, document)
    assert "QUICK SMOKE RUN" in quick and "not results" in quick
    assert f"Rows at 0.000 ({reproduction.label(keys[0])})" in quick
    assert reproduction.label(keys[1]) not in quick.split("Rows at 0.000", 1)[1]
    document["config"]["budget"]["name"] = "full"
    full = summary_table(reproduction, document)
    assert "SMOKE" not in full and "Rows at 0.000" not in full and "(full run, 1 seed(s)" in full


def test_a_quick_runs_console_table_names_rows_whose_outputs_are_mostly_degenerate():
    from hf_querygen.experiments.papers import get_reproduction
    from hf_querygen.experiments.runner import summary_table

    reproduction = get_reproduction("liu2018")
    keys = [s.key for s in reproduction.systems if s.in_table][:3]
    metric = list(reproduction.table_metrics)[0]
    systems = {key: {metric: {"mean": 0.3, "std": 0.0, "n": 1}} for key in keys}
    # the first row: 80% degenerate outputs (noted); the second 10% (not); the third none
    config = {"budget": {"name": "quick"}, "seeds": 1, "degenerate_outputs": {keys[0]: 0.8, keys[1]: 0.1}}
    document = {"systems": systems, "paper_numbers": {}, "config": config}
    quick = summary_table(reproduction, document)
    assert (
        "mostly degenerate (empty, only or mostly punctuation, or a word repeated; "
        f"{reproduction.label(keys[0])}: 80%)" in quick
    )
    assert reproduction.label(keys[1]) not in quick.split("mostly degenerate", 1)[1]
    document["config"]["budget"]["name"] = "full"
    assert "degenerate" not in summary_table(reproduction, document)


def test_a_quick_runs_console_table_names_the_rows_it_leaves_out():
    from hf_querygen.experiments.papers import get_reproduction
    from hf_querygen.experiments.runner import summary_table

    reproduction = get_reproduction("ding2018")
    quick = reproduction.budgets["quick"]
    assert quick.skip, "ding2018's smoke run leaves out a row"
    metric = list(reproduction.table_metrics)[0]
    systems = {"echo": {metric: {"mean": 0.5, "std": 0.0, "n": 1}}}
    config = {"budget": {"name": "quick", "skip": list(quick.skip)}, "seeds": 1}
    table = summary_table(reproduction, {"systems": systems, "paper_numbers": {}, "config": config})
    left_out = ", ".join(reproduction.label(key) for key in quick.skip)
    assert f"Rows a smoke run leaves out: {left_out}." in table
    config["budget"]["name"] = "full"
    assert "leaves out" not in summary_table(
        reproduction, {"systems": systems, "paper_numbers": {}, "config": config}
    )


def test_a_budgets_row_prepare_options_go_over_the_rows_own():
    import dataclasses

    from hf_querygen.experiments.papers import get_reproduction
    from hf_querygen.experiments.recipes import row_prepare_options, row_settings

    reproduction = get_reproduction("zhang2020")
    system = reproduction.system("warm_start")
    full = reproduction.budgets["full"]
    assert row_prepare_options(system, full) == dict(system.prepare_options)
    budget = dataclasses.replace(full, row_prepare={"warm_start": {"caps": {"max_relevant_documents": 1}}})
    options = row_settings(reproduction, system, budget)["prepare_options"]
    assert options["caps"] == {"max_relevant_documents": 1}
    assert options["backbone"] == system.prepare_options["backbone"]


@pytest.mark.parametrize("rescore", [False, True])
def test_a_device_row_is_prepared_as_the_runner_prepares_it(rescore, tmp_path, monkeypatch):
    """device_rows.run_one builds the row's data with the budget's row_prepare over the row's own options
    (as the runner and train --system do), with the threads asked for, and records the training's time limit
    only where it trains."""
    import torch

    from hf_querygen.experiments import device_rows
    from hf_querygen.experiments.papers import get_reproduction
    from hf_querygen.experiments.recipes import row_prepare_options

    reproduction = get_reproduction("zhang2020")
    system = reproduction.system("warm_start")
    budget = reproduction.budgets["quick"]
    assert budget.row_prepare.get("warm_start")  # the budget changes the row's options
    seen: dict = {}

    def fold_data(reproduction, fold, overrides, prepare_options):
        seen["prepare_options"] = prepare_options
        seen["threads"] = torch.get_num_threads()
        return "data"

    def finished(job, *args, **kwargs):
        seen["ran"], seen["job"] = "rescore" if rescore else "train", job
        seen["variants_only"] = args[-1] if rescore else None
        return [{"train_seconds": None if rescore else 1.0, "training": {}, "scores": {}}]

    saved: list = []
    fold = dataclasses.make_dataclass("Fold", ["id"])(None)
    monkeypatch.setattr(device_rows, "_folds", lambda *args: [fold])
    monkeypatch.setattr(device_rows, "_fold_data", fold_data)
    monkeypatch.setattr(device_rows, "rescore_saved" if rescore else "train_and_score", finished)
    monkeypatch.setattr(device_rows, "_save_record", lambda out, record: saved.append(dict(record)))
    threads = torch.get_num_threads()
    try:
        summary = device_rows.run_one(
            "zhang2020",
            "warm_start",
            0,
            "quick",
            2.0,
            None,
            str(tmp_path),
            rescore_models=str(tmp_path / "kept") if rescore else None,
            threads=2,
            variants_only=rescore,
        )
    finally:
        torch.set_num_threads(threads)
    assert "error" not in summary, summary.get("error")
    assert seen["ran"] == ("rescore" if rescore else "train") and seen["threads"] == 2
    # the rows that decode the row's model another way are scored with it (with_variants), as by the runner
    assert [v.key for v in seen["job"].variants] == ["warm_start", "warm_start_capped"]
    assert seen["variants_only"] is (True if rescore else None)
    assert seen["prepare_options"] == row_prepare_options(system, budget) != dict(system.prepare_options)
    (record,) = saved
    assert record["budget"] == "quick" and record["device"]
    if rescore:
        assert "time_limit_s" not in record
    else:
        assert record["time_limit_s"] == 120.0


def test_library_warnings_and_logs_of_every_stage_go_to_train_log_not_the_console(
    tiny_liu2018, data_dir, tmp_path, capfd
):
    import warnings

    from transformers.utils import logging as hf_logging

    def noisy_baseline(context):
        warnings.warn("a dependency's warning in a baseline", RuntimeWarning, stacklevel=1)
        hf_logging.get_logger("transformers").warning("a transformers log line in a baseline")
        return context.data.sources(context.split)

    def noisy_analysis(context):
        warnings.warn("a dependency's warning in an analysis", UserWarning, stacklevel=1)
        return {}

    raw = next(s for s in tiny_liu2018.systems if s.key == "raw_query")
    reproduction = dataclasses.replace(
        tiny_liu2018,
        systems=[dataclasses.replace(raw, name="liu2018/noisy", label="noisy", baseline=noisy_baseline)],
        analyses=(noisy_analysis,),
    )
    out = tmp_path / "results"
    run_reproduction(reproduction, out, quick=True, data_dir=data_dir, workers=1, progress=True)
    console = capfd.readouterr()
    assert "noisy" in console.err  # the summary table is on the console
    for line in ("a dependency's warning in a baseline", "a transformers log line", "in an analysis"):
        assert line not in console.out + console.err, line
        assert line in (out / "train.log").read_text(), line
