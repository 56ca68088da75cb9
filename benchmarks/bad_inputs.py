"""Bad-input harness: a catalogue of bad inputs tried against the public entry points, each outcome
classified.

    python benchmarks/bad_inputs.py [--out benchmarks/bad_inputs_results.json] [--only GROUP ...]
    PYTHONPATH=/work/main python benchmarks/bad_inputs.py --out /tmp/before.json   # another checkout

Groups: corpus builders on corrupt copies of every raw file type (``load_corpus`` strict and lenient;
the corruptions of ``tests/_fuzz_corrupt.py``), ``load_corpus`` arguments, configs, metrics,
tokenizers, pipelines and ``generate`` with a tiny saved model, models loaded from corrupted
folders, and the CLI run as subprocesses.

Each input carries its expectation, and each outcome is one of:

* ``ok``: the input was handled as documented without an error (e.g. an empty list in, an empty
  list out; a duplicate dropped and counted);
* ``clear``: an error of our type (``hf_querygen.errors``) or one whose message names the argument /
  file (for corpus files: the right file, and the right line where the damage has one); CLI: a
  non-zero exit with a short message and no traceback;
* ``crash``: any other exception, a traceback on the CLI, or an error that blames the wrong file
  or line (``misleading``);
* ``silent``: no error where one was expected, or a result that contradicts the expectation;
* ``hang``: over the time limit.

Prints the counts as JSON and writes every outcome to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the corruption catalogue shared with the fuzz suite

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class Hang(BaseException):
    """Raised by the alarm: BaseException, so that no ``except Exception`` in the code swallows it."""


@dataclass
class Case:
    """One bad input: ``call`` runs it; ``expect`` is "error", "ok" or a predicate on the result;
    ``mentions``: words a clear message must hold (all of them; our exception type alone is not
    enough when given with ``strict_mentions``)."""

    id: str
    group: str
    call: Callable[[], Any]
    expect: Any = "error"
    mentions: tuple[str, ...] = ()
    strict_mentions: bool = False
    timeout: int = 60
    memory_gb: float | None = None  # address-space headroom: an allocation beyond it fails, not the OS
    note: str = ""
    outcome: str = ""
    detail: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def _ours(error: BaseException) -> bool:
    return any(cls.__name__ == "HFQueryGenError" for cls in type(error).__mro__)


def run_case(case: Case) -> None:
    def alarm(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(case.timeout)
    start = time.perf_counter()
    limits = _limit_memory(case.memory_gb)
    try:
        result = case.call()
    except Hang:
        case.outcome, case.detail = "hang", f"over {case.timeout} s"
    except Exception as error:  # noqa: BLE001 - classifying every failure is the point
        message = f"{type(error).__name__}: {error}"
        named = bool(case.mentions) and all(word in str(error) for word in case.mentions)
        if case.strict_mentions:  # corpus files: the right file (and line) must be named
            clear = named
            if _ours(error) and not named:
                message = "misleading: " + message
        else:
            clear = _ours(error) or named
        case.outcome = "clear" if clear else "crash"
        case.detail = message[:400]
    else:
        if case.expect == "error":
            case.outcome, case.detail = "silent", f"no error; returned {str(result)[:200]!r}"
        elif callable(case.expect):
            try:
                good = bool(case.expect(result))
            except Exception as error:  # noqa: BLE001
                good, case.detail = False, f"check failed: {type(error).__name__}: {error}"[:300]
            case.outcome = "ok" if good else "silent"
            if not good and not case.detail:
                case.detail = f"returned {str(result)[:300]!r}"
        else:
            case.outcome = "ok"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if limits is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, limits)
        case.seconds = round(time.perf_counter() - start, 2)


def _limit_memory(headroom_gb: float | None):
    """Cap the address space at the current size + ``headroom_gb`` (returns the old limits): a 100,000-word
    input that asks for 80 GB then fails with an error in this process instead of being OOM-killed."""
    if headroom_gb is None:
        return None
    import resource

    size_kb = next(
        int(line.split()[1])
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmSize")
    )
    old = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (size_kb * 1024 + int(headroom_gb * 2**30), old[1]))
    return old


# ---------------------------------------------------------------- corpus builders
CORPUS_OF = {
    "trec-sgml": ("nl2kw", "en"),
    "trec-web-xml": ("nl2kw", "en"),
    "trec-covid-xml": ("nl2kw", "en"),
    "epic-qa-json": ("nl2kw", "en"),
    "uqv100-tsv": ("nl2kw", "en"),
    "qald-xml": ("nl2kw", "de"),
    "qald-json": ("nl2kw", "en"),  # QALD-8 test is English only
    "comqa-json": ("wikianswers", "comqa"),
    "paralex-aligned": ("wikianswers", "paralex"),
    "quora-aligned": ("wikianswers", "quora"),
    "wellformedness-tsv": ("wikianswers", "wellformedness"),
    "webis-queries": ("webis_qsec_10", "segmentations"),
    "webis-crowd-literal": ("webis_qsec_10", "segmentations"),
    "webis-algorithm": ("webis_qsec_10", "algorithms"),
    "webis-values": ("resources", None),
    "webis-pos-literal": ("resources", None),
    "webis-titles": ("resources", None),
    "semeval2015-xml": ("q2id", "semeval"),
    "semeval2016-xml": ("q2id", "semeval"),
    "semeval2016-csv": ("q2id", "semeval"),
    "nfcorpus-ids": ("q2id", "nfcorpus"),
    "nfcorpus-docs": ("q2id", "nfcorpus"),
    "nfcorpus-qrels": ("q2id", "nfcorpus"),
}


def corpus_cases(real: Path, work: Path) -> list[Case]:
    import warnings

    import _fuzz_corrupt as C
    from _corpus_testing import data_dir_with

    from hf_querygen.corpora import load_corpus

    warnings.simplefilter("ignore")  # count warnings of a changed build are expected here
    types = {ft.key: ft for ft in C.file_types(real)}
    counter = [0]
    clean_logs: dict = {}

    def build(key: str, replacements: dict[str, bytes], strict: bool = True):
        corpus, config = CORPUS_OF[key]
        counter[0] += 1
        data_dir = data_dir_with(real, work / f"c{counter[0]}", replacements)
        if corpus == "resources":
            from hf_querygen.corpora.webis_qsec_10 import load_segmentation_resources

            return load_segmentation_resources(data_dir, strict=strict), None
        return load_corpus(corpus, config, data_dir=data_dir, strict=strict, return_log=True)

    def clean_log(key: str):
        corpus, config = CORPUS_OF[key]
        if (corpus, config) not in clean_logs:
            clean_logs[corpus, config] = load_corpus(corpus, config, data_dir=real, return_log=True)[1]
        return clean_logs[corpus, config]

    def base(ft) -> bytes:
        raw = (real / ft.rel).read_bytes()
        return ft.shrink(raw) if ft.shrink else raw

    cases: list[Case] = []

    def add(key: str, damage: str, content: bytes, expected, expect="error", strict=True, extra=None):
        ft = types[key]
        mentions = [Path(ft.rel).name]
        if expected is not None and expected.line is not None and expected.line_tolerance == 0:
            mentions.append(f":{expected.line}:")
        replacements = {ft.rel: content, **(extra or {})}
        cases.append(
            Case(
                f"corpus/{key}/{damage}" + ("" if strict else "/lenient"),
                "corpus",
                lambda r=replacements, k=key, s=strict: build(k, r, s),
                expect=expect,
                mentions=tuple(mentions),
                strict_mentions=True,
                timeout=120,
            )
        )

    def lenient_ok(rel: str):
        def check(result):
            _, log = result
            if log is None:  # load_segmentation_resources keeps its log to itself
                return True
            return any(Path(str(e.path)).as_posix().endswith(rel) for e in log.errors)

        return check

    for key, ft in types.items():
        raw = base(ft)
        shrunk = {ft.rel: raw} if ft.shrink else {}
        content, expected = C.invalid_utf8(raw, ft)
        add(key, "invalid-utf8", content, expected)
        add(key, "invalid-utf8", content, expected, expect=lenient_ok(ft.rel), strict=False)
        # a CR inside line 2 may itself be malformed data there (a strict build stops at line 2), so
        # the line-number check is lenient: the bad byte must be reported at its own line
        add(
            key,
            "cr-then-invalid-utf8",
            C.stray_cr(content),
            expected,
            expect=lambda result, line=expected.line, rel=ft.rel: (
                result[1] is None
                or any(
                    e.line == line and Path(str(e.path)).as_posix().endswith(rel) and "UTF-8" in e.reason
                    for e in result[1].errors
                )
            ),
            strict=False,
        )
        content, expected = C.truncated(raw, ft)
        if ft.truncation_detectable:
            add(key, "truncated", content, expected)
        add(key, "empty", b"", C.Expected(None, ("empty",), ft.rel))
        add(key, "blank", b"\n  \r\n", C.Expected(None, ("empty",), ft.rel))
        content, expected = C.bad_syntax(raw, ft)
        add(key, "malformed-record", content, expected)
        content, expected = C.duplicated(raw, ft)
        if ft.kind == "aligned":
            expected = C.Expected(None, ("out of step",), ft.rel)
            add(key, "duplicated-line-in-one-file", content, expected)
        elif ft.duplicate == "error":
            add(key, "duplicated-record", content, expected)
        else:

            def counted(result, k=key, kind=ft.duplicate):
                _, log = result
                before = clean_log(k)
                if kind == "kept":
                    now = sum(getattr(log, "duplicates_kept", {}).values())
                    return now > sum(getattr(before, "duplicates_kept", {}).values())
                return sum(log.removed_counts.values()) > sum(before.removed_counts.values())

            add(key, "duplicated-record", content, None, expect=counted)
        del shrunk
        if ft.kind == "aligned":
            content, expected = C.misaligned(raw, ft)
            add(key, "misaligned", content, C.Expected(None, ("out of step",), ft.rel))
    return cases


def load_corpus_cases(real: Path, work: Path) -> list[Case]:
    from hf_querygen.corpora import load_corpus

    a_file = work / "a_file.txt"
    a_file.write_text("x")
    rows = [
        ("unknown-name", lambda: load_corpus("nl2kv"), ("nl2kv",)),
        ("unknown-name-case", lambda: load_corpus("NL2KW"), ("NL2KW",)),
        ("unknown-name-typo", lambda: load_corpus("wikianswer"), ("wikianswer",)),
        ("name-none", lambda: load_corpus(None), ("name",)),
        ("name-int", lambda: load_corpus(3), ("name",)),
        ("name-empty", lambda: load_corpus(""), ("corpus",)),
        ("config-typo", lambda: load_corpus("nl2kw", "EN", data_dir=real), ("EN",)),
        ("config-unknown", lambda: load_corpus("wikianswers", "paralexx", data_dir=real), ("paralexx",)),
        ("config-int", lambda: load_corpus("nl2kw", 1, data_dir=real), ("config",)),
        ("config-list", lambda: load_corpus("nl2kw", ["en"], data_dir=real), ("config",)),
        ("data-dir-missing", lambda: load_corpus("nl2kw", "en", data_dir=work / "nowhere"), ("nowhere",)),
        ("data-dir-file", lambda: load_corpus("nl2kw", "en", data_dir=a_file), ("a_file",)),
        ("data-dir-int", lambda: load_corpus("nl2kw", "en", data_dir=5), ("data_dir",)),
        ("data-dir-empty-folder", lambda: load_corpus("nl2kw", "en", data_dir=work), ("trec-topics",)),
        ("strict-string", lambda: load_corpus("webis_qsec_10", strict="no", data_dir=real), ("strict",)),
        ("q2id-data-dir-empty", lambda: load_corpus("q2id", "all", data_dir=work), ("semeval",)),
        ("webis-data-dir-empty", lambda: load_corpus("webis_qsec_10", data_dir=work), ("webis",)),
        (
            "wikianswers-data-dir-empty",
            lambda: load_corpus("wikianswers", "quora", data_dir=work),
            ("quora",),
        ),
    ]
    return [Case(f"load_corpus/{name}", "load_corpus", call, mentions=m) for name, call, m in rows]


# ---------------------------------------------------------------- configs
def config_cases() -> list[Case]:
    from hf_querygen.models.dual_decoder.configuration_dual_decoder import DualDecoderConfig
    from hf_querygen.models.joint_seq2seq_tagger.configuration_joint_seq2seq_tagger import (
        JointSeq2SeqTaggerConfig,
    )
    from hf_querygen.models.rnn_seq2seq.configuration_rnn_seq2seq import RNNSeq2SeqConfig
    from hf_querygen.models.rnn_tagger.configuration_rnn_tagger import RNNTaggerConfig

    bad = {
        RNNSeq2SeqConfig: {
            "vocab_size": ["50", 0, -3, 2.5, None, True],
            "hidden_size": ["16", 0, 1.5, None],
            "embedding_size": [0, "8"],
            "num_encoder_layers": [0, "2"],
            "cell": ["LSTMs", 3, None],
            "attention": ["bahdanu", None, 1],
            "dropout": [1.0, -0.1, "0.1", float("nan")],
            "bridge": ["lin"],
            "copy": ["copy-net", True],
            "bos_token_id": [-1, 99, "2"],
            "bidirectional_encoder": ["yes", 2],
            "local_attention_score": ["dott"],
            "max_decoding_length": [0, "32"],
            "output_vocab_size": [0, 1000],
        },
        DualDecoderConfig: {
            "vocab_size": ["50", 0, None],
            "hidden_size": [0, "128"],
            "dropout": [1.5, "0.4"],
            "loss_lambda": [1.5, -0.1, "0.5"],
            "pointer_only": ["false", 1],
            "eos_token_id": [99, -1],
            "output_vocab_size": [0, 51],
        },
        RNNTaggerConfig: {
            "vocab_size": [0, "50"],
            "num_layers": [0, 1.5],
            "cell": ["crf"],
            "bidirectional": ["true"],
            "dropout": [1.0, "x"],
            "pad_token_id": [-1, "0"],
        },
        JointSeq2SeqTaggerConfig: {
            "num_tag_labels": [1, "2"],
            "tag_loss_weight": [-1.0, "1"],
            "copy": ["copynet"],
        },
    }
    cases = []
    for cls, arguments in bad.items():
        for name, values in arguments.items():
            for value in values:
                cases.append(
                    Case(
                        f"config/{cls.__name__}/{name}={value!r}",
                        "config",
                        lambda c=cls, n=name, v=value: c(**{n: v}),
                        mentions=(name,),
                        strict_mentions=False,
                    )
                )
    # a config that is valid must keep constructing (guards against over-eager validation)
    cases.append(Case("config/RNNSeq2SeqConfig/valid", "config", lambda: RNNSeq2SeqConfig(dropout=0), "ok"))
    return cases


# ---------------------------------------------------------------- metrics and text functions
LONG = " ".join(f"word{i % 997}" for i in range(100_000))


def metric_cases() -> list[Case]:
    from hf_querygen.corpora._base import normalize_for_matching
    from hf_querygen.metrics.exact_match import exact_match
    from hf_querygen.metrics.keyword_prf import keyword_prf
    from hf_querygen.metrics.rouge import rouge
    from hf_querygen.metrics.sacrebleu_metric import corpus_bleu
    from hf_querygen.metrics.segmentation_scores import segmentation_scores

    metrics = {
        "keyword_prf": keyword_prf,
        "bleu": corpus_bleu,
        "exact_match": exact_match,
        "rouge": rouge,
        "segmentation": segmentation_scores,
    }
    bad_inputs = {
        "string-not-list": ("a b", ["a b"], ("predictions",)),
        "references-string": (["a b"], "a b", ("references",)),
        "none-item": (["a", None], ["a", "a"], ("predictions[1]",)),
        "int-item": (["a", 3], ["a", "a"], ("predictions[1]",)),
        "bytes-item": (["a", b"a"], ["a", "a"], ("predictions[1]",)),
        "reference-none-item": (["a", "b"], ["a", None], ("references[1]",)),
        "length-mismatch": (["a", "b"], ["a"], ("2",)),
        "empty-lists": ([], [], ("predictions",)),
        "predictions-none": (None, ["a"], ("predictions",)),
        "dict-item": (["a", {"k": 1}], ["a", "a"], ("predictions[1]",)),
    }
    cases = []
    for metric_name, metric in metrics.items():
        for input_name, (predictions, references, mentions) in bad_inputs.items():
            expect: Any = "error"
            if input_name == "empty-lists" and metric_name in ("rouge", "bleu"):
                expect = lambda result: isinstance(result, dict)  # noqa: E731 - empty in, a result out
            cases.append(
                Case(
                    f"metric/{metric_name}/{input_name}",
                    "metric",
                    lambda m=metric, p=predictions, r=references: m(p, r),
                    expect=expect,
                    mentions=mentions,
                )
            )
    kwargs_rows = [
        ("bleu/max_order=0", lambda: corpus_bleu(["a"], ["a"], max_order=0), ("max_order",)),
        ("bleu/max_order=str", lambda: corpus_bleu(["a"], ["a"], max_order="4"), ("max_order",)),
        ("bleu/smooth=str", lambda: corpus_bleu(["a"], ["a"], smooth="yes"), ("smooth",)),
        ("rouge/type-unknown", lambda: rouge(["a"], ["a"], rouge_types=["rougeX"]), ("rougeX",)),
        ("rouge/type-string", lambda: rouge(["a"], ["a"], rouge_types="rouge1"), ("rouge_types",)),
        ("rouge/use_stemmer=str", lambda: rouge(["a"], ["a"], use_stemmer="no"), ("use_stemmer",)),
        ("exact_match/lowercase=str", lambda: exact_match(["a"], ["a"], lowercase="no"), ("lowercase",)),
        ("exact_match/normalize=int", lambda: exact_match(["a"], ["a"], normalize=3), ("normalize",)),
        ("keyword_prf/normalize=int", lambda: keyword_prf(["a"], ["a"], normalize=3), ("normalize",)),
        ("keyword_prf/sources-short", lambda: keyword_prf(["a"], ["a"], sources=[]), ("sources",)),
        ("keyword_prf/sources-int", lambda: keyword_prf(["a"], ["a"], sources=[1]), ("sources",)),
        ("segmentation/other-words", lambda: segmentation_scores(["a|b"], ["a|c"]), ("predictions[0]",)),
        ("segmentation/empty-segment", lambda: segmentation_scores(["a||b"], ["a|b"]), ("empty segment",)),
        ("segmentation/only-bars", lambda: segmentation_scores(["|"], ["|"]), ("segment",)),
    ]
    cases += [Case(f"metric/{name}", "metric", call, mentions=m) for name, call, m in kwargs_rows]
    # resource limits: 100,000 words must neither hang nor fail
    long_rows = {
        "normalize_for_matching": lambda: normalize_for_matching(LONG),
        "keyword_prf": lambda: keyword_prf([LONG], [LONG]),
        "bleu": lambda: corpus_bleu([LONG], [LONG]),
        "exact_match": lambda: exact_match([LONG], [LONG]),
        "rouge": lambda: rouge([LONG], [LONG], rouge_types=["rouge1", "rougeL"]),
        "segmentation": lambda: segmentation_scores([LONG], [LONG]),
    }
    cases += [
        Case(
            f"resource/100k-words/{name}",
            "resource",
            call,
            expect=lambda result: result is not None,
            timeout=60,
        )
        for name, call in long_rows.items()
    ]
    return cases


def tokenizer_cases() -> list[Case]:
    from hf_querygen.tokenization import train_word_tokenizer, word_tokenize

    tokenizer = train_word_tokenizer(["where to go in beijing", "what is the weather"])
    rows = [
        (
            "train/min_frequency=0",
            lambda: train_word_tokenizer(["a b"], min_frequency=0),
            "error",
            ("min_frequency",),
        ),
        ("train/vocab_size=2", lambda: train_word_tokenizer(["a b"], vocab_size=2), "error", ("vocab_size",)),
        ("train/texts=None", lambda: train_word_tokenizer(None), "error", ("texts",)),
        ("train/texts=str", lambda: train_word_tokenizer("a b c"), "error", ("texts",)),
        ("train/texts-int-item", lambda: train_word_tokenizer(["a", 3]), "error", ("texts",)),
        ("word_tokenize/None", lambda: word_tokenize(tokenizer, None), "error", ("string",)),
        ("word_tokenize/bytes", lambda: word_tokenize(tokenizer, b"abc"), "error", ("string",)),
        ("word_tokenize/empty", lambda: word_tokenize(tokenizer, ""), lambda r: r == [], ()),
        ("encode/100k-words", lambda: tokenizer(LONG)["input_ids"], lambda r: len(r) >= 100_000, ()),
        (
            "encode/100k-words-truncated",
            lambda: tokenizer(LONG, truncation=True, max_length=64)["input_ids"],
            lambda r: len(r) == 64,
            (),
        ),
        (
            "encode/emoji-mixed",
            lambda: tokenizer("北京 🚀 where\u200b to\tgo")["input_ids"],
            lambda r: len(r) > 1,
            (),
        ),
    ]
    return [
        Case(f"tokenizer/{name}", "tokenizer", call, expect=expect, mentions=m, timeout=60)
        for name, call, expect, m in rows
    ]


# ---------------------------------------------------------------- models, pipelines, generate
def _tiny_models(work: Path) -> dict[str, Path]:
    import torch

    from hf_querygen.models.dual_decoder import DualDecoderConfig, DualDecoderForKeywordGeneration
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
    from hf_querygen.models.rnn_tagger import RNNTaggerConfig, RNNTaggerForTokenClassification
    from hf_querygen.text import BIO_LABELS
    from hf_querygen.tokenization import output_vocab_size_of, train_word_tokenizer

    torch.manual_seed(0)
    texts = ["where should i go in beijing", "graffiti fonts alphabet", "what is the weather in berlin"]
    tokenizer = train_word_tokenizer(texts)
    size, out = len(tokenizer), output_vocab_size_of(tokenizer)
    folders = {}
    seq2seq = RNNSeq2SeqForConditionalGeneration(
        RNNSeq2SeqConfig(
            vocab_size=size,
            output_vocab_size=out,
            embedding_size=8,
            hidden_size=8,
            attention="bahdanau",
            max_decoding_length=6,
        )
    )
    dual = DualDecoderForKeywordGeneration(
        DualDecoderConfig(vocab_size=size, output_vocab_size=out, embedding_size=8, hidden_size=8)
    )
    tagger = RNNTaggerForTokenClassification(
        RNNTaggerConfig(
            vocab_size=size,
            embedding_size=8,
            hidden_size=8,
            # a segmentation tagger, as the segmentation task builds it (B = segment starts, I = continues)
            id2label=dict(enumerate(BIO_LABELS)),
            label2id={label: i for i, label in enumerate(BIO_LABELS)},
        )
    )
    for name, model in (("seq2seq", seq2seq), ("dual", dual), ("tagger", tagger)):
        if hasattr(model, "generation_config") and model.generation_config is not None:
            model.generation_config.max_length = 6
        folder = work / name
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[name] = folder
    return folders


def model_cases(work: Path) -> list[Case]:
    import shutil

    from transformers import AutoModelForSeq2SeqLM, AutoModelForTokenClassification, AutoTokenizer, pipeline

    import hf_querygen  # noqa: F401 - registers the Auto classes and pipelines
    from hf_querygen.training import load_trained

    try:
        folders = _tiny_models(work / "models")
    except Exception as error:  # noqa: BLE001 - the API moved: every row fails the same way
        reason = f"tiny model setup failed: {error}"

        def failed():
            raise RuntimeError(reason)

        return [Case("model/setup", "model", failed)]
    cases: list[Case] = []

    def corrupt(name: str, edit: Callable[[Path], None]) -> Path:
        folder = work / f"corrupt-{name}"
        shutil.copytree(folders["seq2seq"], folder)
        edit(folder)
        return folder

    weights = lambda f: next(f.glob("*.safetensors"))  # noqa: E731
    corrupted = {
        "no-config": (lambda f: (f / "config.json").unlink(), ("config.json",)),
        "config-not-json": (lambda f: (f / "config.json").write_text("{not json"), ("config.json",)),
        "config-empty": (lambda f: (f / "config.json").write_text(""), ("config.json",)),
        "config-bad-value": (
            lambda f: (f / "config.json").write_text(
                json.dumps({**json.loads((f / "config.json").read_text()), "hidden_size": "eight"})
            ),
            ("hidden_size",),
        ),
        "config-bad-cell": (
            lambda f: (f / "config.json").write_text(
                json.dumps({**json.loads((f / "config.json").read_text()), "cell": "transformer"})
            ),
            ("cell",),
        ),
        "no-weights": (lambda f: weights(f).unlink(), ("model",)),
        "weights-truncated": (
            lambda f: weights(f).write_bytes(weights(f).read_bytes()[:100]),
            ("safetensors",),
        ),
        "weights-empty": (lambda f: weights(f).write_bytes(b""), ("safetensors",)),
        "weights-garbage": (lambda f: weights(f).write_bytes(os.urandom(2000)), ("safetensors",)),
    }
    for name, (edit, mentions) in corrupted.items():
        cases.append(
            Case(
                f"model-folder/{name}",
                "model",
                # load_trained is the library's model-folder loader (the CLI, load_pipeline use it)
                lambda n=name, e=edit: load_trained(corrupt(n, e)),
                mentions=mentions,
            )
        )
    cases.append(
        Case(
            "model-folder/missing-folder",
            "model",
            lambda: load_trained(str(work / "no-such-model")),
            mentions=("no-such-model",),
        )
    )
    cases.append(
        Case(
            "model-folder/tagger-as-seq2seq",
            "model",
            lambda: AutoModelForSeq2SeqLM.from_pretrained(folders["tagger"]),
            mentions=("rnn_tagger",),
        )
    )
    no_tokenizer = work / "no-tokenizer"
    shutil.copytree(folders["seq2seq"], no_tokenizer)
    (no_tokenizer / "tokenizer.json").unlink()
    cases.append(
        Case(
            "model-folder/no-tokenizer-json",
            "model",
            lambda: load_trained(no_tokenizer),
            mentions=("tokenizer.json",),
        )
    )
    bad_tokenizer = work / "bad-tokenizer"
    shutil.copytree(folders["seq2seq"], bad_tokenizer)
    (bad_tokenizer / "tokenizer.json").write_text("{")
    cases.append(
        Case(
            "model-folder/tokenizer-json-corrupt",
            "model",
            lambda: load_trained(bad_tokenizer),
            mentions=("tokenizer.json",),
        )
    )

    # generate
    import torch

    model = AutoModelForSeq2SeqLM.from_pretrained(folders["seq2seq"])
    tokenizer = AutoTokenizer.from_pretrained(folders["seq2seq"])
    empty = torch.zeros((0, 5), dtype=torch.long)
    generate_rows = [
        (
            "zero-rows",
            lambda: model.generate(input_ids=empty, attention_mask=empty),
            lambda r: r.shape[0] == 0,
            (),
        ),
        (
            "zero-length",
            lambda: model.generate(input_ids=torch.zeros((2, 0), dtype=torch.long)),
            "error",
            ("empty",),
        ),
        ("float-ids", lambda: model.generate(input_ids=torch.rand(2, 3)), "error", ("input_ids",)),
        (
            "ids-out-of-vocab",
            lambda: model.generate(input_ids=torch.full((1, 3), 10_000)),
            "error",
            ("vocab",),
        ),
        ("negative-ids", lambda: model.generate(input_ids=torch.full((1, 3), -4)), "error", ("input_ids",)),
        (
            "max-new-tokens-0",
            lambda: model.generate(**tokenizer(["where"], return_tensors="pt"), max_new_tokens=0),
            "error",
            ("max_new_tokens",),
        ),
        (
            "num-beams-0",
            lambda: model.generate(**tokenizer(["where"], return_tensors="pt"), num_beams=0),
            "error",
            ("num_beams",),
        ),
        (
            "mask-shape-mismatch",
            lambda: model.generate(
                input_ids=torch.ones((2, 4), dtype=torch.long),
                attention_mask=torch.ones((2, 3), dtype=torch.long),
            ),
            "error",
            ("attention_mask",),
        ),
        (
            "all-padding-row",
            lambda: model.generate(
                input_ids=torch.zeros((1, 4), dtype=torch.long),
                attention_mask=torch.zeros((1, 4), dtype=torch.long),
            ),
            "error",
            ("padding",),
        ),
    ]
    cases += [
        Case(f"generate/{name}", "generate", call, expect=expect, mentions=mentions)
        for name, call, expect, mentions in generate_rows
    ]

    # pipelines
    tasks = {
        "seq2seq": "query-reformulation",
        "dual": "keyword-query-generation",
        "tagger": "query-segmentation",
    }
    for model_name, task in tasks.items():

        def make(t=task, m=model_name):
            return pipeline(t, model=str(folders[m]))

        rows = [
            ("empty-list", lambda p=make: p()([]), lambda r: r == []),
            ("empty-string", lambda p=make: p()(""), lambda r: not _has_words(r)),
            ("whitespace", lambda p=make: p()("   \t "), lambda r: not _has_words(r)),
            ("none", lambda p=make: p()(None), "error"),
            ("int", lambda p=make: p()(5), "error"),
            ("bytes", lambda p=make: p()(b"abc"), "error"),
            ("list-with-none", lambda p=make: p()(["where", None]), "error"),
            ("dict", lambda p=make: p()({"text": "where"}), "error"),
            ("100k-words", lambda p=make: p()(LONG), lambda r: r is not None),
            ("emoji-only", lambda p=make: p()("🚀🚀"), lambda r: r is not None),
        ]
        cases += [
            Case(
                f"pipeline/{task}/{name}",
                "pipeline",
                call,
                expect=expect,
                mentions=("input",),
                timeout=60,
                memory_gb=4 if "100k" in name else None,
            )
            for name, call, expect in rows
        ]
    wrong_kind = [
        ("query-segmentation", "dual"),
        ("keyword-query-generation", "tagger"),
        ("query-reformulation", "tagger"),
    ]
    for task, model_name in wrong_kind:
        cases.append(
            Case(
                f"pipeline/{task}/wrong-model-{model_name}",
                "pipeline",
                lambda t=task, m=model_name: pipeline(t, model=str(folders[m]))("where to go"),
                mentions=(task,),
                strict_mentions=True,
            )
        )
    # a seq2seq model is a keyword-query model too (the liu2018 attention seq2seq baselines): it must
    # decode, its words split into extracted / generated by whether they occur in the query
    cases.append(
        Case(
            "pipeline/keyword-query-generation/seq2seq-model",
            "pipeline",
            lambda: pipeline("keyword-query-generation", model=str(folders["seq2seq"]))("where to go"),
            expect=lambda r: isinstance(r, list) and all("extracted" in q for q in r),
        )
    )
    cases.append(
        Case(
            "pipeline/unknown-task",
            "pipeline",
            lambda: pipeline("query-segmentatoin", model=str(folders["tagger"])),
            mentions=("query-segmentatoin",),
        )
    )
    del AutoModelForTokenClassification
    return cases


def _has_words(result: Any) -> bool:
    text = json.dumps(result, default=str)
    return any(
        ch.isalpha()
        for ch in text.replace("keyword_query", "")
        .replace("keywords", "")
        .replace("extracted", "")
        .replace("generated", "")
        .replace("segments", "")
        .replace("generated_text", "")
        .replace("text", "")
    )


# ---------------------------------------------------------------- the CLI
def cli_cases(work: Path) -> list[Case]:
    models = work / "models" / "seq2seq"
    rows = [
        ["--help-me"],
        ["corpus"],
        ["corpus", "build"],
        ["corpus", "build", "nl2kv"],
        ["corpus", "build", "nl2kw", "--config", "EN", "--out-dir", str(work / "o1")],
        ["corpus", "build", "nl2kw", "--data-dir", str(work / "nowhere"), "--out-dir", str(work / "o2")],
        ["corpus", "stats", "nl2kv"],
        ["corpus", "stats", "nl2kw", "--config", "xx"],
        ["train"],
        ["train", "--corpus", "nl2kv", "--preset", "liu2018-attn-seq2seq", "--output-dir", str(work / "t1")],
        ["train", "--corpus", "nl2kw", "--preset", "no-such-preset", "--output-dir", str(work / "t2")],
        [
            "train",
            "--corpus",
            "nl2kw",
            "--preset",
            "liu2018-attn-seq2seq",
            "--output-dir",
            str(work / "t3"),
            "--max-steps",
            "-5",
        ],
        [
            "train",
            "--corpus",
            "nl2kw",
            "--preset",
            "liu2018-attn-seq2seq",
            "--output-dir",
            str(work / "t4"),
            "--max-steps",
            "0",
        ],
        [
            "train",
            "--corpus",
            "nl2kw",
            "--preset",
            "liu2018-attn-seq2seq",
            "--output-dir",
            str(work / "t5"),
            "--epochs",
            "-1",
        ],
        [
            "train",
            "--corpus",
            "nl2kw",
            "--preset",
            "liu2018-attn-seq2seq",
            "--output-dir",
            str(work / "t6"),
            "--vocab-size",
            "2",
        ],
        # the refactored `train` has no --vocab-size: a config field is overridden with --set
        [
            "train",
            "--corpus",
            "nl2kw",
            "--preset",
            "liu2018-attn-seq2seq",
            "--output-dir",
            str(work / "t8"),
            "--set",
            "vocab_size=2",
            "--max-steps",
            "1",
        ],
        [
            "train",
            "--corpus",
            "nl2kw",
            "--preset",
            "liu2018-attn-seq2seq",
            "--output-dir",
            str(work / "t7"),
            "--max-steps",
            "abc",
        ],
        ["evaluate", "--model", str(work / "no-model")],
        ["evaluate", "--model", str(models), "--limit", "-1"],
        ["evaluate", "--model", str(models), "--batch-size", "0"],
        ["evaluate", "--model", str(models), "--split", "tset"],
        ["generate", "--model", str(work / "no-model"), "hello"],
        ["generate", "--model", str(models)],
        ["generate", "--model", str(models), "--num-beams", "0", "where to go"],
        ["generate", "--model", str(models), "--max-new-tokens", "-3", "where to go"],
        ["generate", "--model", str(models), "--num-return-sequences", "5", "where to go"],
        ["reproduce", "liu2019"],
        ["reproduce"],
    ]
    cases = []
    for argv in rows:
        name = " ".join(a if not a.startswith(str(work)) else Path(a).name for a in argv)
        cases.append(Case(f"cli/{name}", "cli", lambda a=argv: _run_cli(a), timeout=120))
    return cases


def _run_cli(argv: list[str]) -> subprocess.CompletedProcess:
    code = "import sys; from hf_querygen.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=100, check=False
    )


def classify_cli(case: Case) -> None:
    """CLI rows: run, then classify by exit code and stderr."""
    start = time.perf_counter()
    try:
        process = case.call()
    except subprocess.TimeoutExpired:
        case.outcome, case.detail = "hang", "over 100 s (e.g. a full training started)"
        case.seconds = round(time.perf_counter() - start, 2)
        return
    case.seconds = round(time.perf_counter() - start, 2)
    err = (process.stderr or "").strip()
    last = err.splitlines()[-1][:300] if err else ""
    if process.returncode == 0:
        case.outcome, case.detail = "silent", f"exit 0; stdout {process.stdout[-200:]!r}"
    elif "Traceback (most recent call last)" in err:
        case.outcome, case.detail = "crash", f"exit {process.returncode}; traceback ending {last!r}"
    else:
        case.outcome, case.detail = "clear", f"exit {process.returncode}; {last!r}"


# ---------------------------------------------------------------- main
GROUPS = ("corpus", "load_corpus", "config", "metric", "tokenizer", "model", "cli")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bad_inputs_results.json")
    parser.add_argument("--only", nargs="*", default=None, choices=GROUPS)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    import hf_querygen
    from hf_querygen.corpora import resolve_data_dir

    real = resolve_data_dir(args.data_dir)
    groups = args.only or list(GROUPS)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases: list[Case] = []
        builders = {
            "corpus": lambda: corpus_cases(real, work / "corpus"),
            "load_corpus": lambda: load_corpus_cases(real, work / "lc"),
            "config": config_cases,
            "metric": metric_cases,
            "tokenizer": tokenizer_cases,
            "model": lambda: model_cases(work),
            "cli": lambda: cli_cases(work),
        }
        (work / "lc").mkdir()
        (work / "corpus").mkdir()
        if "cli" in groups and "model" not in groups:
            _tiny_models(work / "models")  # the CLI rows use a saved model
        for group in GROUPS:
            if group not in groups:
                continue
            try:
                cases += builders[group]()
            except Exception as error:  # noqa: BLE001 - the API moved: one crash row for the group
                cases.append(Case(f"{group}/setup", group, lambda e=error: (_ for _ in ()).throw(e)))
        for index, case in enumerate(cases, start=1):
            if case.group == "cli":
                classify_cli(case)
            else:
                run_case(case)
            print(
                f"[{index}/{len(cases)}] {case.outcome:6s} {case.id} ({case.seconds} s) {case.detail[:120]}",
                file=sys.stderr,
                flush=True,
            )
    counts = Counter(case.outcome for case in cases)
    by_group: dict[str, Counter] = {}
    for case in cases:
        by_group.setdefault(case.group, Counter())[case.outcome] += 1
    summary = {
        "code": str(Path(hf_querygen.__file__).resolve().parents[1]),
        "inputs": len(cases),
        "counts": {k: counts.get(k, 0) for k in ("ok", "clear", "crash", "silent", "hang")},
        "by_group": {g: dict(c) for g, c in by_group.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                **summary,
                "cases": [
                    {
                        "id": c.id,
                        "group": c.group,
                        "outcome": c.outcome,
                        "detail": c.detail,
                        "seconds": c.seconds,
                    }
                    for c in cases
                ],
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
