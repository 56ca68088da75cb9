"""The README rule's floors for kept K2Q models, on validation: each selection split's seeded draw (the one
the decoding choice scores), decoded with the decoding saved with the model.

    python -m hf_querygen.experiments.ding2018.studies.validation_rule ROW FOLDER [FOLDER ...] [--out F.json]
        [--decoding '{"keyword_bonus": 1.0, ...}']

ROW is the table row the folders were trained as (``reproduce --save-models``): its fold and prepare options
give the validation splits. Per folder and split: ROUGE-L and its gain over the echoed keyword query,
keywords kept, the share judged well-formed beside the human questions' (the references of the same draw),
and the outputs that repeat a word trigram. ``--decoding``: these keys over the saved decoding (a probe of a
decoding the row's grid does not hold yet, on validation only).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hf_querygen.experiments.jobs import _fold_data
from hf_querygen.experiments.papers import get_reproduction
from hf_querygen.experiments.recipes import _folds, row_budget, row_prepare_options
from hf_querygen.model_folder import load_trained
from hf_querygen.systems import get_system
from hf_querygen.tasks.base import DecodingChoice
from hf_querygen.tasks.k2q import k2q_user_scores
from hf_querygen.training.task_training import _selection_measure


def repeats_a_word_trigram(text: str) -> bool:
    words = text.lower().split()
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return len(trigrams) != len(set(trigrams))


def rule_measures(
    row: str,
    folders: list[Path],
    data_dir: str | None = None,
    reproduction: Any = None,
    budget_name: str = "warm_start",
    decoding: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """folder -> the decoding used and, per validation split, the measures of the module's docstring.
    ``reproduction`` (default: ding2018's) and ``budget_name`` give the fold the models were trained on;
    ``decoding``: keys that replace the saved decoding's."""
    reproduction = reproduction or get_reproduction("ding2018")
    system = get_system(f"ding2018/{row}")
    budget = row_budget(system, reproduction.budgets[budget_name])
    (fold,) = _folds(reproduction, budget, data_dir)
    data = _fold_data(reproduction, fold, {}, row_prepare_options(system, budget))
    # the decoding choice's own splits, seeded draw and echo floor
    measure = _selection_measure(data, system.decoding_choice or DecodingChoice())
    metric = measure.metric
    human_wellformed = {  # the draw's human questions, the same for every model
        name: k2q_user_scores(
            [r[0] for r in measure.references[name]], measure.sources[name], data_dir=data.data_dir
        ).get("wellformed")
        for name in measure.names
    }
    result: dict[str, Any] = {}
    for folder in folders:
        model, _, _ = load_trained(folder)
        used = {**(model.config.task_decoding or {}), **(decoding or {})}
        measured: dict[str, Any] = {"decoding": used}
        for name in measure.names:
            sources = measure.sources[name]
            outputs = data.task.predict(model, data.tokenizer, sources, **used)
            score = measure.scores_of(name, outputs)[metric]
            users = k2q_user_scores(outputs, sources, data_dir=data.data_dir)
            measured[name] = {
                "examples": len(sources),
                metric: score,
                f"echo {metric}": measure.floor[name],
                "gain over echo": score - measure.floor[name],
                "keywords_kept": users["keywords_kept"],
                "wellformed": users.get("wellformed"),
                "human wellformed": human_wellformed[name],
                "repeated word trigram": sum(map(repeats_a_word_trigram, outputs)),
            }
        result[str(folder)] = measured
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "row", help="the ding2018 row the folders were trained as, e.g. warm_start_then_questions"
    )
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--decoding", type=json.loads, default=None, help="JSON: keys over the saved decoding"
    )
    args = parser.parse_args(argv)
    measured = rule_measures(args.row, args.folders, args.data_dir, decoding=args.decoding)
    text = json.dumps(measured, indent=1)
    if args.out is not None:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
