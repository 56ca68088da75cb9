"""``hf-querygen train`` trains every preset on a corpus its task supports, and every output folder
opens with the Auto classes and ``pipeline()`` (tiny sizes: a few steps on a data slice)."""

import json

import pytest
from transformers import AutoConfig, AutoTokenizer, pipeline

from hf_querygen.cli import main as cli_main
from hf_querygen.model_folder import load_trained
from hf_querygen.tasks.base import get_task
from hf_querygen.utils import TRAINING_METADATA_FILE

TINY_RNN = ["--set", "embedding_size=8", "--set", "hidden_size=8"]
TINY_SEQ2SEQ = [*TINY_RNN, "--set", "decoder_hidden_size=8"]

#: (task, corpus, preset, extra CLI arguments, an input)
CASES = [
    ("nl2kw", "nl2kw", "liu2018-seq2seq", TINY_SEQ2SEQ, "what is the population of berlin"),
    ("nl2kw", "nl2kw", "liu2018-attn-seq2seq", TINY_SEQ2SEQ, "what is the population of berlin"),
    ("nl2kw", "nl2kw", "song2017", TINY_SEQ2SEQ, "what is the population of berlin"),
    ("nl2kw", "nl2kw", "liu2018-dual-decoder", TINY_RNN, "what is the population of berlin"),
    ("nl2kw", "nl2kw", "liu2018-pointer-network", TINY_RNN, "what is the population of berlin"),
    ("nl2kw", "nl2kw", "liu2018-sequence-labeling", TINY_RNN, "what is the population of berlin"),
    ("nl2kw", "nl2kw", "liu2018-joint", TINY_SEQ2SEQ, "what is the population of berlin"),
    ("segmentation", "webis_qsec_10", "lin2017-segmenter", TINY_SEQ2SEQ, "graffiti fonts alphabet"),
    ("segmentation", "webis_qsec_10", "lin2017-tagger", TINY_RNN, "graffiti fonts alphabet"),
    ("text2text", "wikianswers", "ding2018-ednet", TINY_SEQ2SEQ, "berlin population"),
    ("text2text", "wikianswers", "ding2018-attnet", TINY_SEQ2SEQ, "berlin population"),
    ("text2text", "wikianswers", "ding2018-copynet", TINY_SEQ2SEQ, "berlin population"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("task_name", "corpus", "preset", "extra", "text"), CASES, ids=[c[2] for c in CASES])
def test_train_every_preset_and_open_it_with_auto_classes_and_pipeline(
    task_name, corpus, preset, extra, text, data_dir, tmp_path, capsys
):
    out = tmp_path / preset
    arguments = ["train", "--corpus", corpus, "--preset", preset, "--output-dir", str(out)]
    arguments += ["--max-steps", "2", "--max-train-examples", "64", "--max-validation-examples", "8"]
    verbose = ["--verbose"] if preset == "liu2018-seq2seq" else []  # one case checks --verbose
    assert cli_main([*arguments, *extra, *verbose, "--data-dir", str(data_dir)]) == 0
    console = capsys.readouterr()
    metadata = json.loads((out / TRAINING_METADATA_FILE).read_text())
    assert metadata["task"] == task_name and metadata["preset"] == preset and metadata["global_steps"] == 2
    if verbose:  # the whole record on stdout, the Trainer's log dicts on the console
        assert json.loads(console.out) == metadata
    else:  # a summary; the Trainer's log dicts and transformers' records are in the folder's train.log
        assert console.out.startswith(f"trained {preset} (") and str(out) in console.out
        assert len(console.out.splitlines()) == 3 and "{'loss'" not in console.err + console.out
        lines = (out / "train.log").read_text().splitlines()
        logged = [json.loads(line) for line in lines if line.startswith("{")]
        assert any("train_loss" in entry or "eval_loss" in entry for entry in logged)
    assert not list(tmp_path.glob(".*"))  # no staging, checkpoint or log file left behind

    task = get_task(task_name)
    model, tokenizer, _ = load_trained(out)
    assert AutoConfig.from_pretrained(out).model_type == model.config.model_type
    assert AutoTokenizer.from_pretrained(out).get_vocab() == tokenizer.get_vocab()
    card = (out / "README.md").read_text()
    assert f"pipeline_tag: {task.card_pipeline_tag(model.config)}" in card
    assert f'pipeline("{task.pipeline_task}"' in card

    predict = pipeline(task.pipeline_task, model=str(out))
    output = predict(text)
    assert output is not None
    # the pipeline decodes through the task: same output as Task.predict
    direct = task.predict(model, tokenizer, [text])[0]
    if task_name == "nl2kw":
        assert output == [direct.as_dict()]
    elif task_name == "segmentation":
        assert output == direct
    else:
        assert output == [{"generated_text": direct}]

    # an existing output folder is never overwritten silently
    assert cli_main([*arguments, *extra, "--data-dir", str(data_dir)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    with pytest.raises(FileExistsError, match="--overwrite"):  # OutputExistsError, also a FileExistsError
        cli_main(["--debug", *arguments, *extra, "--data-dir", str(data_dir)])
