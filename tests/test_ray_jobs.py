"""The Ray jobs on a local Ray started by this module (2 CPUs, no dashboard, loopback only): synthesis shards,
index shards and batch reformulation give the one-process results."""

from __future__ import annotations

import json
import os

import pytest

from hf_querygen._fs import MARKER_FILE

ray = pytest.importorskip("ray", reason="the [ray] extra (pip install 'hf-querygen[ray]') is not installed")
#: one pytest-xdist worker runs them all (.ci/run: --dist loadgroup): one local Ray, not one per worker
pytestmark = pytest.mark.xdist_group("ray")

from test_synthetic import _toy_questions  # noqa: E402

from hf_querygen import _ray  # noqa: E402
from hf_querygen.cli import main  # noqa: E402
from hf_querygen.errors import InvalidInputError  # noqa: E402
from hf_querygen.retrieval import Index  # noqa: E402
from hf_querygen.retrieval.sharded import ShardedIndex, _build_shard  # noqa: E402
from hf_querygen.synthetic.kqgm import KQGMConfig, LengthPrior  # noqa: E402
from hf_querygen.synthetic.pipeline import SynthesisConfig, synthesize  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():  # a Ray another test's command started (the README's) has other CPUs
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
        configure_logging=False,
    )
    yield ray
    ray.shutdown()


def _files(folder):
    """Every output file's bytes; the library's marker is bookkeeping (it names its own build), not output."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".cache" not in path.parts and path.name != MARKER_FILE
    }


def test_synthesize_on_ray_is_byte_identical_and_resumes(local_ray, tmp_path):
    questions = _toy_questions()
    index = Index.from_texts(
        questions["text"], ids=questions["id"], path=tmp_path / "index", show_progress=False, num_threads=1
    )
    config = SynthesisConfig(
        kqgm=KQGMConfig(strategy="combination", paraphrase=True, phrases=False, alpha=0.6, beta=0.3),
        seed=5,
        num_candidates=4,
        top_n=5,
        shard_size=3,
    )
    prior = LengthPrior.from_lengths([3, 4])
    synthesize(questions, tmp_path / "plain", config, prior, index, top_l=5, progress=False)
    on_ray = synthesize(
        questions, tmp_path / "ray", config, prior, index, top_l=5, progress=False, ray_address=_ray.LOCAL
    )
    plain_files, ray_files = _files(tmp_path / "plain"), _files(tmp_path / "ray")
    assert len([name for name in plain_files if name.startswith("data/all/")]) == 4
    assert ray_files == plain_files  # every shard, the card, the manifest and top_l: the same bytes
    assert len(on_ray) == len(questions)

    # a rerun computes only the missing shard
    shards = sorted((tmp_path / "ray" / "data" / "all").glob("*.parquet"))
    kept = {path.name: path.stat().st_mtime_ns for path in shards[1:]}
    shards[0].unlink()
    synthesize(
        questions, tmp_path / "ray", config, prior, index, top_l=5, progress=False, ray_address=_ray.LOCAL
    )
    assert {path.name: path.stat().st_mtime_ns for path in shards[1:]} == kept
    assert _files(tmp_path / "ray") == plain_files


def test_synthesize_on_ray_needs_an_index_folder(local_ray, tmp_path):
    questions = _toy_questions()
    in_memory = Index.from_texts(questions["text"], ids=questions["id"], show_progress=False, num_threads=1)
    with pytest.raises(InvalidInputError, match="open the index from its folder"):
        synthesize(
            questions,
            tmp_path / "out",
            SynthesisConfig(num_candidates=2, top_n=3, shard_size=6),
            LengthPrior.from_lengths([3]),
            in_memory,
            progress=False,
            ray_address=_ray.LOCAL,
        )


def test_index_build_with_ray_shards_matches_one_index(local_ray, tmp_path, capsys):
    lines = [f"d{i}\t" + " ".join(f"w{(i * j) % 11}" for j in range(1 + i % 7)) for i in range(40)]
    (tmp_path / "docs.tsv").write_text("id\ttext\n" + "\n".join(lines) + "\n")
    assert main(["index", "build", str(tmp_path / "docs.tsv"), str(tmp_path / "one"), "--threads", "1"]) == 0
    args = ["index", "build", str(tmp_path / "docs.tsv"), str(tmp_path / "sharded"), "--threads", "1"]
    assert main([*args, "--shards", "3", "--ray"]) == 0
    sharded = ShardedIndex.open(tmp_path / "sharded")
    assert [len(shard) for shard in sharded.shards] == [14, 13, 13]
    capsys.readouterr()
    for ranker in ("bm25", "ql", "sdm"):
        outputs = []
        for folder in ("one", "sharded"):
            assert (
                main(
                    ["index", "search", str(tmp_path / folder), "w3 w5", "w1", "-k", "40", "--ranker", ranker]
                )
                == 0
            )
            outputs.append(capsys.readouterr().out)
        assert outputs[0] == outputs[1] and json.loads(outputs[0].splitlines()[0])["hits"], ranker
    assert main(["index", "build", str(tmp_path / "docs.tsv"), str(tmp_path / "x"), "--ray"]) == 2
    assert "--shards" in capsys.readouterr().err


def test_a_task_that_fails_twice_is_named(local_ray, tmp_path):
    arguments = [(["a b", "b c"], None, str(tmp_path / "s0"), 1), (["a", 7], None, str(tmp_path / "s1"), 1)]
    with pytest.raises(
        InvalidInputError, match=r"1 task\(s\) failed after 1 retry: shard 1: InvalidInputError"
    ):
        _ray.run_tasks(_build_shard, arguments, ["shard 0", "shard 1"], "build")
    assert Index.open(tmp_path / "s0")  # the task that succeeded kept its output
    assert not (tmp_path / "s1").exists()


def test_reformulate_on_ray_data_equals_one_process(local_ray, tmp_path, capsys):
    import pyarrow.parquet as pq
    from test_batch_reformulation import query_file, tiny_model_folder

    model_dir = tiny_model_folder(tmp_path / "model")
    queries = query_file(tmp_path / "q.tsv", 30)
    common = ["reformulate", "--model", str(model_dir), "--input", str(queries), "--chunk-size", "8"]
    assert main([*common, "--output", str(tmp_path / "plain.parquet")]) == 0
    assert main([*common, "--output", str(tmp_path / "ray.parquet"), "--ray", "--workers", "2"]) == 0
    assert "queries/s" in capsys.readouterr().err
    assert pq.read_table(tmp_path / "ray.parquet").equals(pq.read_table(tmp_path / "plain.parquet"))
    assert main([*common, "--output", str(tmp_path / "x.parquet"), "--workers", "2"]) == 2
    assert "--ray" in capsys.readouterr().err
