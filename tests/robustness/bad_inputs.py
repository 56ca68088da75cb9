"""Bad-input harness: a catalogue of bad inputs tried against the public entry points, each outcome
classified.

    python tests/robustness/bad_inputs.py [--out tests/robustness/bad_inputs_results.json] [--only GROUP ...]
    PYTHONPATH=/path/to/other/checkout python tests/robustness/bad_inputs.py --out /tmp/other.json

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

ROOT = Path(__file__).resolve().parents[2]
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
    from hf_querygen.model_folder import load_trained

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
    except Exception as error:  # noqa: BLE001 - e.g. DataLoss found after the command ran
        case.outcome, case.detail = "crash", f"{type(error).__name__}: {error}"[:400]
        case.seconds = round(time.perf_counter() - start, 2)
        return
    case.seconds = round(time.perf_counter() - start, 2)
    err = (process.stderr or "").strip()
    last = err.splitlines()[-1][:300] if err else ""
    if case.expect == "ok":  # a row that must succeed
        case.outcome = "ok" if process.returncode == 0 else "crash"
        case.detail = f"exit {process.returncode}; {last!r}"
    elif process.returncode < 0:
        case.outcome, case.detail = "crash", f"killed by signal {-process.returncode}; {last!r}"
    elif process.returncode == 0:
        case.outcome, case.detail = "silent", f"exit 0; stdout {process.stdout[-200:]!r}"
    elif "Traceback (most recent call last)" in err:
        case.outcome, case.detail = "crash", f"exit {process.returncode}; traceback ending {last!r}"
    elif case.mentions and not all(word in err for word in case.mentions):  # refused, for another reason
        case.outcome, case.detail = "crash", f"misleading: exit {process.returncode}; {last!r}"
    else:
        case.outcome, case.detail = "clear", f"exit {process.returncode}; {last!r}"


# ---------------------------------------------------------------- outputs, indexes, folders, NUL characters
# Eight classes of a new user's inputs: data loss by ``overwrite``, process aborts
# and silent results in the retrieval API, index folders, ``index build`` files, CLI paths, model
# folders, metric modules, file modes, NUL characters in corpora. A process abort would kill this
# harness, so the cases that could abort run in a child process (``_child``).
class DataLoss(Exception):
    """Files the user owned were deleted or changed: never a clear outcome."""


class ChildKilled(Exception):
    """A child process died from a signal (SIGABRT from tantivy, ...)."""


SMALL_INDEX = {"show_progress": False, "heap_size": 15_000_000, "num_threads": 1}
DOCS = ["alpha beta gamma", "beta gamma delta beta", "alpha alpha epsilon", "gamma", "zeta eta alpha"]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _user_folder(path: Path) -> Path:
    """A user's folder that holds subfolders named like an index's and a model's files."""
    (path / "stats").mkdir(parents=True)
    (path / "tantivy").mkdir()
    (path / "runs").mkdir()
    (path / "thesis.tex").write_text("years of work")
    (path / "stats" / "results.csv").write_text("a,b\n1,2\n")
    (path / "tantivy" / "notes.md").write_text("# notes")
    (path / "index.json").write_text('{"format_version": 1, "num_docs": 1}')
    (path / "config.json").write_text('{"model_type": "mine"}')
    (path / "results.json").write_text("{}")
    return path


def _keeps(folder: Path, action: Callable[[], Any]) -> Any:
    """Run ``action``; whatever it raises or returns, the folder's files must be unchanged."""
    before = _snapshot(folder)
    try:
        return action()
    finally:
        if _snapshot(folder) != before:
            raise DataLoss(f"files in {folder} were deleted or changed")


def _child(code: str, timeout: int = 120) -> str:
    """Run ``code`` in a fresh interpreter; its last stdout line, or its error as an exception of the
    same message (so our error types are recognised by name)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode < 0:
        raise ChildKilled(f"killed by signal {-done.returncode}: {done.stderr.strip()[-200:]}")
    if done.returncode:
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no message"
        kind, _, message = last.partition(": ")
        error = type(kind.rsplit(".", 1)[-1], (Exception,), {})
        if kind.rsplit(".", 1)[-1] in ("InvalidInputError", "ModelFolderError", "OutputExistsError"):
            error = type(kind.rsplit(".", 1)[-1], (_our_base(),), {})
        raise error(message)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def _our_base() -> type:
    from hf_querygen.errors import HFQueryGenError

    return HFQueryGenError


def _search_in_child(call: str) -> str:
    return _child(
        "from hf_querygen.retrieval import Index\n"
        f"ix = Index.from_texts({DOCS!r}, show_progress=False, heap_size=15_000_000, num_threads=1)\n"
        f"hits = {call}\n"
        "import math\n"
        "scores = [h.score for h in hits]\n"
        "assert all(math.isfinite(s) for s in scores) and scores == sorted(scores, reverse=True), hits\n"
        "print(len(hits))\n"
    )


def _cli_case(
    case_id: str,
    group: str,
    argv: list[str],
    check: Callable[[], None] | None = None,
    mentions: tuple[str, ...] = (),
) -> Case:
    def call():
        process = _run_cli(argv)
        if check is not None:
            check()
        return process

    return Case(case_id, group, call, timeout=120, mentions=mentions, extra={"cli": True})


def overwrite_cases(work: Path) -> list[Case]:
    from concurrent.futures import ThreadPoolExecutor

    from hf_querygen.retrieval import Index

    work.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def index_into_user_folder():
        folder = _user_folder(work / "u1")
        return _keeps(folder, lambda: Index.from_texts(["x y"], path=folder, overwrite=True, **SMALL_INDEX))

    def model_into_user_folder():
        from hf_querygen.tokenization import train_word_tokenizer
        from hf_querygen.training import save_model_folder

        folder = _user_folder(work / "u2")
        tokenizer = train_word_tokenizer(["a b c"])
        model = _tiny_seq2seq(tokenizer)
        return _keeps(folder, lambda: save_model_folder(model, tokenizer, folder, {}, overwrite=True))

    def reproduction_into_user_folder():
        from hf_querygen.experiments.runner import run_reproduction

        folder = _user_folder(work / "u3")
        # the folder is decided before the (absent) data is read
        missing = work / "no-data"
        return _keeps(folder, lambda: run_reproduction("liu2018", folder, overwrite=True, data_dir=missing))

    def added_file_in_library_index():
        folder = work / "u4"
        Index.from_texts(["alpha"], path=folder, **SMALL_INDEX)
        (folder / "my-queries.txt").write_text("precious")
        return _keeps(folder, lambda: Index.from_texts(["b"], path=folder, overwrite=True, **SMALL_INDEX))

    def library_index_is_replaced():
        folder = work / "u5"
        Index.from_texts(["alpha"], path=folder, **SMALL_INDEX)
        return Index.from_texts(["beta gamma"], path=folder, overwrite=True, **SMALL_INDEX)

    def refused_build_leaves_nothing():
        folder = work / "u6" / "ix"
        folder.parent.mkdir()
        try:
            Index.from_texts(["fine", None], path=folder, **SMALL_INDEX)
        finally:
            if list(folder.parent.iterdir()):
                raise DataLoss(f"a refused build left {sorted(p.name for p in folder.parent.iterdir())}")

    def racing_builds():
        folder = work / "u7"
        texts = [f"document {i} topic {i % 7}" for i in range(3000)]

        def build(tag):
            try:
                Index.from_texts([*texts, tag], path=folder, **SMALL_INDEX)
                return tag
            except Exception as error:  # noqa: BLE001
                return error

        with ThreadPoolExecutor(2) as pool:
            outcomes = list(pool.map(build, ["first", "second"]))
        winners = [o for o in outcomes if isinstance(o, str)]
        losers = [o for o in outcomes if not isinstance(o, str)]
        clear = all(_ours(error) for error in losers)
        won = len(winners) == 1 and Index.open(folder).search(winners[0])[0].row == len(texts)
        return won and len(losers) == 1 and clear

    def cli_index_overwrite():
        folder = _user_folder(work / "u8")
        docs = work / "u8-docs.tsv"
        docs.write_text("d1\tred fox\n")
        before = _snapshot(folder)

        def check():
            if _snapshot(folder) != before:
                raise DataLoss(f"files in {folder} were deleted or changed")

        return ["index", "build", str(docs), str(folder), "--overwrite"], check

    rows = [
        ("overwrite/index user folder with stats/ tantivy/", index_into_user_folder, "error"),
        ("overwrite/model folder over a user folder", model_into_user_folder, "error"),
        ("overwrite/reproduce --overwrite on an unmarked folder", reproduction_into_user_folder, "error"),
        ("overwrite/user file added to a library index", added_file_in_library_index, "error"),
        ("overwrite/library index replaced", library_index_is_replaced, lambda ix: len(ix) == 1),
        ("overwrite/refused build leaves nothing behind", refused_build_leaves_nothing, "error"),
        ("overwrite/two builds race for one path", racing_builds, bool),
    ]
    cases += [Case(i, "overwrite", call, expect=e) for i, call, e in rows]
    argv, check = cli_index_overwrite()
    cases.append(_cli_case("overwrite/cli index build --overwrite user folder", "overwrite", argv, check))
    return cases


def _tiny_seq2seq(tokenizer):
    from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig, RNNSeq2SeqForConditionalGeneration
    from hf_querygen.tokenization import output_vocab_size_of

    config = RNNSeq2SeqConfig(
        vocab_size=len(tokenizer),
        output_vocab_size=output_vocab_size_of(tokenizer),
        embedding_size=8,
        hidden_size=8,
        max_decoding_length=4,
    )
    model = RNNSeq2SeqForConditionalGeneration(config)
    model.generation_config.max_length = 4
    return model


def retrieval_cases(work: Path) -> list[Case]:
    import shutil

    from hf_querygen.retrieval import Index

    work.mkdir(parents=True, exist_ok=True)
    index = Index.from_texts(DOCS, ids=[f"d{i}" for i in range(len(DOCS))], **SMALL_INDEX)
    cases: list[Case] = []
    # process aborts: in a child
    for name, call in [
        ("k=10**12", "ix.search('alpha beta', k=10**12)"),
        ("k=2**63", "ix.search('alpha beta', k=2**63)"),
        ("sdm depth=10**12", "ix.search('alpha beta', ranker='sdm', depth=10**12)"),
        (
            "search_batch k=2**40",
            "[h for hs in ix.search_batch(['alpha', 'gamma'], k=2**40) for h in hs][:1]",
        ),
    ]:
        cases.append(
            Case(f"retrieval/{name} (child)", "retrieval", lambda c=call: _search_in_child(c), expect=bool)
        )
    bad_params = [
        ("bm25", {"k1": float("nan")}),
        ("bm25", {"k1": 0}),
        ("bm25", {"k1": float("inf")}),
        ("bm25", {"k1": "1.2"}),
        ("bm25", {"b": -1}),
        ("bm25", {"b": 2}),
        ("bm25", {"exact": "yes"}),
        ("ql", {"mu": 0}),
        ("ql", {"mu": -5}),
        ("ql", {"mu": float("inf")}),
        ("ql", {"mu": float("nan")}),
        ("ql", {"mu": True}),
        ("sdm", {"weights": (1, 2)}),
        ("sdm", {"weights": (-1, 0, 0)}),
        ("sdm", {"weights": "abc"}),
        ("sdm", {"weights": (float("nan"), 0, 0)}),
        ("sdm", {"weights": (0, 0, 0)}),
        ("sdm", {"window": 1}),
        ("sdm", {"window": 2.5}),
        ("sdm", {"window": 10**12}),
        ("sdm", {"depth": 0}),
        ("sdm", {"depth": -3}),
        ("sdm", {"depth": 1.5}),
        ("sdm", {"mu": "2500"}),
    ]
    for ranker, params in bad_params:
        ((name, value),) = params.items()
        cases.append(
            Case(
                f"retrieval/{ranker} {name}={value!r}",
                "retrieval",
                lambda r=ranker, p=params: index.search("alpha beta", ranker=r, **p),
                mentions=(name,),
                strict_mentions=True,
            )
        )
    for value in (0, -1, 2.5, True, "10", None):
        cases.append(
            Case(
                f"retrieval/k={value!r}",
                "retrieval",
                lambda v=value: index.search("alpha", k=v),
                mentions=("k",),
            )
        )
    for value in ([10**6], [-1], "01", [0.5], {"a": 1}):
        cases.append(
            Case(
                f"retrieval/score rows={value!r}",
                "retrieval",
                lambda v=value: index.score("alpha", rows=v),
                mentions=("rows",),
                strict_mentions=True,
            )
        )
    for value in (-1, 10**9, 2.5, "4"):
        cases.append(
            Case(
                f"retrieval/search_batch threads={value!r}",
                "retrieval",
                lambda v=value: index.search_batch(["alpha", "beta"], threads=v),
                mentions=("threads",),
                strict_mentions=True,
            )
        )
    construction = [
        ("texts is a string", lambda: Index.from_texts("alpha beta", **SMALL_INDEX), ("texts",)),
        ("texts is a mapping", lambda: Index.from_texts({"a": "alpha"}, **SMALL_INDEX), ("texts",)),
        ("texts is None", lambda: Index.from_texts(None, **SMALL_INDEX), ("texts",)),
        ("ids is a string", lambda: Index.from_texts(["a", "b"], ids="xy", **SMALL_INDEX), ("ids",)),
        ("an id is None", lambda: Index.from_texts(["a", "b"], ids=["x", None], **SMALL_INDEX), ("ids",)),
        ("an id is empty", lambda: Index.from_texts(["a", "b"], ids=["x", ""], **SMALL_INDEX), ("id",)),
        ("duplicate ids", lambda: Index.from_texts(["a", "b"], ids=["x", "x"], **SMALL_INDEX), ("id",)),
        (
            "num_threads=-1",
            lambda: Index.from_texts(["a"], **{**SMALL_INDEX, "num_threads": -1}),
            ("num_threads",),
        ),
        ("heap_size=10", lambda: Index.from_texts(["a"], **{**SMALL_INDEX, "heap_size": 10}), ("heap_size",)),
    ]
    cases += [
        Case(f"retrieval/from_texts {name}", "retrieval", call, mentions=m, strict_mentions=True)
        for name, call, m in construction
    ]
    cases.append(
        Case(
            "retrieval/k above the collection size is capped",
            "retrieval",
            lambda: index.search("alpha", k=10**9, ranker="ql"),
            expect=lambda hits: len(hits) == 3,
        )
    )

    # index folders
    def built(name: str, texts=("a b c", "d e"), ids=("x", "y")) -> Path:
        folder = work / name
        Index.from_texts(list(texts), ids=list(ids), path=folder, **SMALL_INDEX)
        return folder

    def missing_ids():
        folder = built("f1")
        (folder / "ids.json").unlink()
        return Index.open(folder).search("a")

    def swapped(part: str):
        def call():
            one, two = (
                built(f"s-{part.replace('/', '-')}-1"),
                built(f"s-{part.replace('/', '-')}-2", ("d e", "a b c"), ("y", "x")),
            )
            if part == "tantivy":
                shutil.rmtree(one / "tantivy")
                shutil.copytree(two / "tantivy", one / "tantivy")
            else:
                (one / part).write_bytes((two / part).read_bytes())
            return Index.open(one).search("a b c")

        return call

    def truncated_positions():
        folder = built("f3")
        path = folder / "stats" / "positions.npy"
        path.write_bytes(path.read_bytes()[:-4])
        return Index.open(folder).search("a")

    def read_only_folder():
        folder = built("f4")
        expected = Index.open(folder).search("a b", ranker="sdm")
        if os.geteuid() != 0:
            for path in [folder, *folder.rglob("*")]:
                path.chmod(0o555 if path.is_dir() else 0o444)
            try:
                return Index.open(folder).search("a b", ranker="sdm") == expected
            finally:
                for path in [folder, *folder.rglob("*")]:
                    path.chmod(0o755 if path.is_dir() else 0o644)
        view = work / "f4-ro"
        view.mkdir()
        if subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True).returncode:
            raise RuntimeError("cannot make a read-only view here (root without mount)")
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
            return Index.open(view).search("a b", ranker="sdm") == expected
        finally:
            import gc

            gc.collect()
            subprocess.run(["umount", "-l", str(view)], check=False)

    cases += [
        Case(
            "retrieval/folder without ids.json",
            "retrieval",
            missing_ids,
            mentions=("ids.json",),
            strict_mentions=True,
        ),
        Case(
            "retrieval/folder with another index's stats/vocab.txt",
            "retrieval",
            swapped("stats/vocab.txt"),
            mentions=("vocab.txt",),
            strict_mentions=True,
        ),
        Case(
            "retrieval/folder with another index's stats/doc_offsets.npy",
            "retrieval",
            swapped("stats/doc_offsets.npy"),
            mentions=("doc_offsets.npy",),
            strict_mentions=True,
        ),
        Case(
            "retrieval/folder with another index's tantivy/",
            "retrieval",
            swapped("tantivy"),
            mentions=("tantivy",),
            strict_mentions=True,
        ),
        Case(
            "retrieval/folder with another index's ids.json",
            "retrieval",
            swapped("ids.json"),
            mentions=("ids.json",),
            strict_mentions=True,
        ),
        Case(
            "retrieval/truncated positions.npy",
            "retrieval",
            truncated_positions,
            mentions=("positions.npy",),
            strict_mentions=True,
        ),
        Case("retrieval/read-only index folder searches", "retrieval", read_only_folder, expect=bool),
    ]
    return cases


def index_cli_cases(work: Path) -> list[Case]:
    work.mkdir(parents=True, exist_ok=True)
    files = [
        ("bom+header.tsv", "\ufeffid\ttext\nd1\tred fox\nd2\tblue hen\n".encode(), "ok"),
        ("latin1.tsv", b"a\tfine\nb\tcaf\xe9\n", "error"),
        ("nul.txt", b"one\ntwo\x00three\n", "error"),
        ("docs.csv", b"id,text\na,b\n", "error"),
        ("empty-id.tsv", b"a\tone\n\ttwo\n", "error"),
        ("dup-id.tsv", b"a\tone\nb\ttwo\na\tthree\n", "error"),
        ("float-id.jsonl", b'{"id": 1.5, "text": "x"}\n', "error"),
        ("bad.jsonl", b'{"id": "a", "text": "x"}\n\xff\n', "error"),
    ]
    cases = []
    for index, (name, content, expect) in enumerate(files):
        path = work / name
        path.write_bytes(content)
        argv = ["index", "build", str(path), str(work / f"ix{index}")]
        case = _cli_case(f"index_cli/build {name}", "index_cli", argv)
        case.expect = expect
        cases.append(case)
    docs = work / "good.tsv"
    docs.write_text("d1\tred fox\nd2\tblue hen\n")
    good = work / "good-ix"
    for pair in ("mu=abc", "mu=nan", "k1=-1", "weights=1,2", "depth=0", "exact=maybe", "nope=1", "mu"):
        ranker = (
            "bm25"
            if pair.startswith(("k1", "exact"))
            else ("sdm" if pair.startswith(("weights", "depth")) else "ql")
        )
        argv = ["index", "search", str(good), "red fox", "--ranker", ranker, "--param", pair]
        cases.append(_cli_case(f"index_cli/search --param {pair}", "index_cli", argv, check=None))
    cases.insert(
        0,
        Case(
            "index_cli/setup build",
            "index_cli",
            lambda: _run_cli(["index", "build", str(docs), str(good)]),
            expect="ok",
            extra={"cli": True},
        ),
    )
    cases.append(
        _cli_case(
            "index_cli/search a missing index", "index_cli", ["index", "search", str(work / "none"), "x"]
        )
    )
    cases.append(
        _cli_case(
            "index_cli/search -k 10**12 (capped)",
            "index_cli",
            ["index", "search", str(good), "red", "-k", str(10**12)],
        )
    )
    cases[-1].expect = "ok"
    return cases


def cli_path_cases(work: Path) -> list[Case]:
    work.mkdir(parents=True, exist_ok=True)
    a_file = work / "a-file"
    a_file.write_text("x")
    rows = [
        ["train", "--preset", "liu2018-seq2seq", "--corpus", "nl2kw", "--output-dir", str(a_file)],
        ["train", "--preset", "liu2018-seq2seq", "--corpus", "nl2kw", "--output-dir", str(a_file / "sub")],
        ["evaluate", "--model", str(work / "nowhere"), "--predictions", str(work)],
        ["evaluate", "--model", str(work / "nowhere"), "--predictions", str(a_file / "p.jsonl")],
        ["reproduce", "lin2017", "--quick", "--out-dir", str(a_file)],
        ["reproduce", "lin2017", "--quick", "--save-models", str(a_file)],
        ["synthesize", "--out-dir", str(a_file), "--no-filters"],
        ["corpus", "build", "nl2kw", "--out-dir", str(a_file)],
        ["corpus", "stats", "nl2kw", "--config", "en", "--json", str(work)],
        [
            "train",
            "--preset",
            "liu2018-seq2seq",
            "--corpus",
            "nl2kw",
            "--output-dir",
            str(work / "m"),
            "--set",
            "no_such_field=3",
        ],
        [
            "train",
            "--preset",
            "liu2018-seq2seq",
            "--corpus",
            "nl2kw",
            "--output-dir",
            str(work / "m"),
            "--set",
            "hiden_size=8",
        ],
    ]
    cases = []
    for argv in rows:
        name = " ".join(a if not a.startswith(str(work)) else Path(a).name for a in argv)
        cases.append(_cli_case(f"cli_paths/{name}", "cli_paths", argv))
    return cases


def model_folder_cases(work: Path) -> list[Case]:
    import json as json_module
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from hf_querygen.model_folder import load_trained
    from hf_querygen.tokenization import train_word_tokenizer
    from hf_querygen.training import check_resumable_checkpoint, save_model_folder

    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    tokenizer = train_word_tokenizer(["where should i go in beijing", "graffiti fonts alphabet"])
    good = save_model_folder(_tiny_seq2seq(tokenizer), tokenizer, work / "good", {"task": "text2text"})
    counter = [0]

    def damaged(change: Callable[[Path], None]) -> Callable[[], Any]:
        def call():
            counter[0] += 1
            folder = work / f"m{counter[0]}"
            shutil.copytree(good, folder)
            change(folder)
            return load_trained(folder)

        return call

    def weights(edit):
        def change(folder):
            tensors = load_file(str(folder / "model.safetensors"))
            edit(tensors)
            save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})

        return change

    def generation(field, value):
        def change(folder):
            path = folder / "generation_config.json"
            config = json_module.loads(path.read_text())
            config[field] = value
            path.write_text(json_module.dumps(config))

        return change

    def saved_decoding(value):
        def change(folder):
            path = folder / "config.json"
            config = json_module.loads(path.read_text())
            config["task_decoding"] = value
            path.write_text(json_module.dumps(config))

        return change

    def checkpoint(with_optimizer: bool, hidden: int):
        from hf_querygen.models.rnn_seq2seq import RNNSeq2SeqConfig

        def call():
            counter[0] += 1
            folder = work / f"c{counter[0]}" / "checkpoint-5"
            folder.mkdir(parents=True)
            RNNSeq2SeqConfig(vocab_size=20, output_vocab_size=10, hidden_size=8).save_pretrained(folder)
            if with_optimizer:
                (folder / "optimizer.pt").write_bytes(b"x")
            return check_resumable_checkpoint(
                folder, RNNSeq2SeqConfig(vocab_size=20, output_vocab_size=10, hidden_size=hidden)
            )

        return call

    other = train_word_tokenizer(["zebra yak quokka", "completely different words"])
    rows = [
        ("tokenizer of another model", damaged(lambda f: other.save_pretrained(f)), ("tokenizer",)),
        ("missing tensor", damaged(weights(lambda t: t.pop(sorted(t)[0]))), ("model.safetensors",)),
        (
            "unexpected tensor",
            damaged(weights(lambda t: t.__setitem__("extra.weight", torch.zeros(2)))),
            ("extra.weight",),
        ),
        (
            "NaN tensor",
            damaged(weights(lambda t: t[sorted(t)[0]].view(-1).__setitem__(0, float("nan")))),
            ("NaN",),
        ),
        (
            "int64 tensor",
            damaged(weights(lambda t: t.__setitem__(sorted(t)[0], t[sorted(t)[0]].to(torch.int64)))),
            ("I64",),
        ),
        ("generation num_beams='4'", damaged(generation("num_beams", "4")), ("num_beams",)),
        ("generation max_length=2.5", damaged(generation("max_length", 2.5)), ("max_length",)),
        ("generation eos_token_id=-1", damaged(generation("eos_token_id", -1)), ("eos_token_id",)),
        ("generation do_sample='yes'", damaged(generation("do_sample", "yes")), ("do_sample",)),
        (
            "saved decoding num_beams='4'",
            damaged(saved_decoding({"num_beams": "4"})),
            ("config.json", "task_decoding", "num_beams"),
        ),
        ("saved decoding a list", damaged(saved_decoding([4])), ("config.json", "task_decoding")),
        ("resume without optimizer.pt", checkpoint(False, 8), ("optimizer.pt",)),
        ("resume with a changed config", checkpoint(True, 16), ("hidden_size",)),
    ]
    cases = [
        Case(f"model_folder/{n}", "model_folder", call, mentions=m, strict_mentions=True)
        for n, call, m in rows
    ]
    cases.append(
        Case("model_folder/the good folder loads", "model_folder", lambda: load_trained(good), expect=bool)
    )

    def umask_modes():
        import stat

        old = os.umask(0o022)
        try:
            folder = save_model_folder(_tiny_seq2seq(tokenizer), tokenizer, work / "modes", {})
        finally:
            os.umask(old)
        modes = {stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*") if p.is_file()}
        return modes == {0o644} and stat.S_IMODE(folder.stat().st_mode) == 0o755

    cases.append(
        Case("model_folder/written files follow the umask 022", "model_folder", umask_modes, expect=bool)
    )
    return cases


def metric_module_cases() -> list[Case]:
    metrics = ROOT / "hf_querygen" / "metrics"
    cases = []
    for path in sorted(metrics.glob("*.py")):
        if "(evaluate.Metric)" not in path.read_text(encoding="utf-8"):
            continue  # the package's own helpers (the pure scores, the classifier), not evaluate modules
        code = f"import evaluate; m = evaluate.load({str(path)!r}); print(type(m).__name__)"
        cases.append(
            Case(
                f"metric_module/evaluate.load {path.name} (child)",
                "metric_module",
                lambda c=code: _child(c, 300),
                expect=bool,
                timeout=300,
            )
        )

    def load(name):
        import evaluate

        return evaluate.load(str(metrics / name))

    rows = [
        (
            "retrieval doc_ids/relevance lengths differ",
            lambda: load("retrieval.py").compute(
                predictions=[["d1"]], references=[{"doc_ids": ["d1", "d2"], "relevance": [1]}]
            ),
            ("doc_ids",),
        ),
        (
            "retrieval empty judgments",
            lambda: load("retrieval.py").compute(
                predictions=[["d1"]], references=[{"doc_ids": [], "relevance": []}]
            ),
            ("references[0]",),
        ),
        (
            "rouge no predictions",
            lambda: load("rouge.py").compute(predictions=[], references=[]),
            ("predictions",),
        ),
        (
            "sacrebleu no predictions",
            lambda: load("sacrebleu_metric.py").compute(predictions=[], references=[]),
            ("predictions",),
        ),
        (
            "exact_match no predictions",
            lambda: load("exact_match.py").compute(predictions=[], references=[]),
            ("predictions",),
        ),
        (
            "keyword_prf empty reference",
            lambda: load("keyword_prf.py").compute(predictions=["a"], references=[" "]),
            ("references[0]",),
        ),
        (
            "keyword_prf lengths differ",
            lambda: load("keyword_prf.py").compute(predictions=["a", "b"], references=["a"]),
            ("Mismatch",),
        ),
    ]
    cases += [
        Case(f"metric_module/{n}", "metric_module", call, mentions=m, strict_mentions=True, timeout=120)
        for n, call, m in rows
    ]
    return cases


def corpus_nul_cases(work: Path) -> list[Case]:
    from hf_querygen.corpora._base import ParseLog, iter_lines, read_json, read_xml

    work.mkdir(parents=True, exist_ok=True)
    rows = [
        (
            "lines.txt",
            b"first\nsecond\x00line\nthird\n",
            "2",
            lambda p, n: list(iter_lines(p, ParseLog(), n)),
        ),
        (
            "doc.json",
            b'[\n  {"q": "fine"},\n  {"q": "bad\\u0000"}\n]\n',
            "3",
            lambda p, n: read_json(p, n, ParseLog(), list),
        ),
        ("raw.json", b'[\n  "fine",\n  "bad\x00"\n]\n', "3", lambda p, n: read_json(p, n, ParseLog(), list)),
        (
            "doc.xml",
            b"<docs>\n<doc>fine</doc>\n<doc>bad&#0;</doc>\n</docs>\n",
            "3",
            lambda p, n: read_xml(p, n, ParseLog(), "doc"),
        ),
    ]
    cases = []
    for name, content, line, read in rows:
        path = work / name
        path.write_bytes(content)
        cases.append(
            Case(
                f"corpus_nul/{name}",
                "corpus_nul",
                lambda p=path, n=name, r=read: r(p, n),
                mentions=(f"{name}:{line}:", "NUL"),
                strict_mentions=True,
            )
        )
    return cases


# ---------------------------------------------------------------- writers, integrity, edges, error locations
# Eight classes: writers that ignore the overwrite policy, index integrity, ties across segments, numbers
# at the edges of the ranker parameters, generation arguments, the demo's arguments, remote code folders,
# and where an error points. Every row goes through a public entry point (the CLI, Index, pipeline,
# load_trained, export_model, run_reproduction), so the same catalogue can measure another checkout.
# The groups share one set of tiny saved models.
SHARED_MODEL_GROUPS = (
    "writers",
    "index_integrity",
    "ties",
    "edges",
    "generation",
    "demo_args",
    "remote_code",
    "error_location",
)
_SHARED_MODELS: dict[str, Any] = {}


def _shared_models(work: Path) -> dict[str, Path]:
    if "models" not in _SHARED_MODELS:
        _SHARED_MODELS["models"] = _tiny_models(work / "shared_models")
    return _SHARED_MODELS["models"]


def _copy_model(work: Path, name: str, tag: str) -> Path:
    import shutil

    folder = work / f"{name}-{tag}"
    shutil.copytree(_shared_models(work)[name], folder)
    return folder


def _unchanged(folder: Path, before: dict[str, bytes]) -> Callable[[], None]:
    def check():
        if _snapshot(folder) != before:
            raise DataLoss(f"files in {folder} were deleted or changed")

    return check


def _finite(values: Any) -> bool:
    import numpy as np

    return bool(np.isfinite(np.asarray(values, dtype=float)).all())


def _flip_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))


def shared_model_cases(work: Path, group: str) -> list[Case]:
    builders = {
        "writers": _writer_cases,
        "index_integrity": _integrity_cases,
        "ties": _tie_cases,
        "edges": _edge_cases,
        "generation": _generation_cases,
        "demo_args": _demo_cases,
        "remote_code": _remote_code_cases,
        "error_location": _location_cases,
    }
    (work / group).mkdir(parents=True, exist_ok=True)
    return builders[group](work, work / group)


def _writer_cases(root: Path, work: Path) -> list[Case]:
    import json

    cases: list[Case] = []
    model = lambda tag: _copy_model(root, "dual", tag)  # noqa: E731
    missing_data = str(work / "no-data")

    # export --overwrite into a user's folder
    user = _user_folder(work / "export-user")
    source = model("export-user")
    cases.append(
        _cli_case(
            "writers/export --overwrite into a user folder",
            "writers",
            ["export", str(source), str(user), "--overwrite"],
            _unchanged(user, _snapshot(user)),
        )
    )
    # export --overwrite into the folder that holds the model, and into one inside it
    holder = work / "holder"
    holder.mkdir()
    inner = _copy_model(root, "dual", "held")
    inner.rename(holder / "model")
    cases.append(
        _cli_case(
            "writers/export --overwrite into the folder holding the model",
            "writers",
            ["export", str(holder / "model"), str(holder), "--overwrite"],
            _unchanged(holder, _snapshot(holder)),
        )
    )
    inside_source = model("inside")
    cases.append(
        _cli_case(
            "writers/export into a folder inside the model",
            "writers",
            ["export", str(inside_source), str(inside_source / "hub"), "--overwrite"],
            _unchanged(inside_source, _snapshot(inside_source)),
        )
    )

    def api_export_over_user_folder():
        from hf_querygen.hub_export import export_model

        folder = _user_folder(work / "export-api")
        return _keeps(folder, lambda: export_model(model("api"), folder, overwrite=True))

    cases.append(
        Case("writers/export_model overwrite=True over a user folder", "writers", api_export_over_user_folder)
    )

    # reproduce --resume into another paper's (or budget's) reproduction folder
    for tag, argv_extra, mention in (
        ("another paper", [], "liu2018"),
        ("another budget", ["--quick"], "budget"),
    ):
        folder = work / f"repro-{tag.replace(' ', '-')}"
        (folder / "runs").mkdir(parents=True)
        (folder / "runs" / "dual_decoder-seed0.json").write_text('{"system": "dual_decoder"}')
        (folder / "results.json").write_text(json.dumps({"paper": "liu2018", "systems": {"x": 1}}))
        marker = {"kind": "reproduction", "format_version": 1, "build_id": "x", "entries": []}
        if tag == "another budget":
            marker["identity"] = {"paper": "liu2018", "budget": "full"}
        (folder / ".hf_querygen").write_text(json.dumps(marker))
        paper = "lin2017" if tag == "another paper" else "liu2018"
        cases.append(
            _cli_case(
                f"writers/reproduce --resume into {tag}'s folder",
                "writers",
                [
                    "reproduce",
                    paper,
                    "--resume",
                    "--out-dir",
                    str(folder),
                    "--data-dir",
                    missing_data,
                    *argv_extra,
                ],
                _unchanged(folder, _snapshot(folder)),
                mentions=(mention,),
            )
        )
    # corpus build --out-dir over a user's data/ folder
    corpus_user = work / "corpus-user"
    (corpus_user / "data").mkdir(parents=True)
    (corpus_user / "data" / "mine.parquet").write_bytes(b"my data")
    (corpus_user / "README.md").write_text("my card")
    cases.append(
        _cli_case(
            "writers/corpus build --out-dir over a user's data/",
            "writers",
            ["corpus", "build", "nl2kw", "--out-dir", str(corpus_user), "--data-dir", missing_data],
            _unchanged(corpus_user / "data", _snapshot(corpus_user / "data")),
            mentions=("data",),
        )
    )

    # a model folder with evaluate's record beside it is the library's own: replaced with --overwrite
    def overwrite_model_with_evaluations():
        from hf_querygen.tokenization import train_word_tokenizer
        from hf_querygen.training import save_model_folder

        tokenizer = train_word_tokenizer(["a b c"])
        folder = work / "evaluated"
        save_model_folder(_tiny_seq2seq(tokenizer), tokenizer, folder, {})
        (folder / "hf_querygen_evaluations.json").write_text("[]")
        return save_model_folder(_tiny_seq2seq(tokenizer), tokenizer, folder, {}, overwrite=True)

    cases.append(
        Case(
            "writers/train --overwrite of a model folder with its evaluations file",
            "writers",
            overwrite_model_with_evaluations,
            expect=lambda path: Path(path).is_dir(),
        )
    )

    # a damaged marker: refused, nothing touched
    def damaged_marker():
        from hf_querygen.retrieval import Index

        folder = work / "damaged-marker"
        Index.from_texts(["alpha"], path=folder, **SMALL_INDEX)
        (folder / ".hf_querygen").write_text('{"kind": "index", "format_version": 1, "entries": 5}')
        return _keeps(folder, lambda: Index.from_texts(["b"], path=folder, overwrite=True, **SMALL_INDEX))

    cases.append(
        Case("writers/overwrite with a damaged marker", "writers", damaged_marker, mentions=("marker",))
    )

    # evaluate with a damaged evaluations file: named, no predictions file left behind
    evaluated = model("garbled-evaluations")
    (evaluated / "hf_querygen_training.json").write_text(json.dumps({"task": "nl2kw", "corpus": "nl2kw"}))
    (evaluated / "hf_querygen_evaluations.json").write_text("{not json")
    predictions = work / "predictions.jsonl"

    def no_predictions_left():
        if predictions.exists():
            raise DataLoss(f"a half-done evaluate left {predictions}")

    cases.append(
        _cli_case(
            "writers/evaluate with a damaged evaluations file",
            "writers",
            [
                "evaluate",
                "--model",
                str(evaluated),
                "--data-dir",
                missing_data,
                "--predictions",
                str(predictions),
            ],
            no_predictions_left,
            mentions=("hf_querygen_evaluations.json",),
        )
    )
    return cases


def _integrity_cases(root: Path, work: Path) -> list[Case]:
    import json
    import random
    import shutil

    from hf_querygen.retrieval import Index

    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    large = work / "large"
    Index.from_texts([" ".join(rng.choices(words, k=6000)) for _ in range(200)], path=large, **SMALL_INDEX)

    def damaged(target: str):
        def call():
            folder = work / f"copy-{len(list(work.iterdir()))}"
            shutil.copytree(large, folder)
            if target == "tantivy":
                path = max((folder / "tantivy").iterdir(), key=lambda p: p.stat().st_size)
            else:
                path = folder / target
            _flip_middle(path)
            index = Index.open(folder)
            return [h.row for h in index.search("w1 w2", k=5)]

        return call

    def older_format(version: int):
        def call():
            folder = work / f"v{version}"
            Index.from_texts(["alpha beta"], path=folder, **SMALL_INDEX)
            meta = json.loads((folder / "index.json").read_text())
            meta["format_version"] = version
            meta.pop("files", None) if version == 1 else None
            meta.pop("fingerprint", None) if version == 1 else None
            (folder / "index.json").write_text(json.dumps(meta))
            # statistics of another index of the same shape, which a format without hashes cannot tell
            other = work / f"v{version}-other"
            Index.from_texts(["gamma delta"], path=other, **SMALL_INDEX)
            shutil.rmtree(folder / "stats")
            shutil.copytree(other / "stats", folder / "stats")
            return Index.open(folder).search("alpha")

        return call

    return [
        Case(
            "index_integrity/a byte flipped mid positions.npy (> 4 MiB)",
            "index_integrity",
            damaged("stats/positions.npy"),
            mentions=("positions.npy",),
            strict_mentions=True,
        ),
        Case(
            "index_integrity/a byte flipped mid postings",
            "index_integrity",
            damaged("stats/postings.npy"),
            mentions=("postings",),
            strict_mentions=True,
        ),
        Case(
            "index_integrity/a byte flipped mid the largest tantivy file",
            "index_integrity",
            damaged("tantivy"),
            mentions=("tantivy",),
            strict_mentions=True,
        ),
        Case(
            "index_integrity/format 1 with another index's statistics",
            "index_integrity",
            older_format(1),
            mentions=("format", "overwrite"),
            strict_mentions=True,
        ),
        Case(
            "index_integrity/format 2 with another index's statistics",
            "index_integrity",
            older_format(2),
            mentions=("format", "overwrite"),
            strict_mentions=True,
        ),
    ]


def _tie_cases(root: Path, work: Path) -> list[Case]:
    from hf_querygen.retrieval import Index

    texts = [["alpha beta", "alpha", "beta gamma alpha", "delta"][i % 4] for i in range(4000)]
    indexes: dict[int, Any] = {}

    def index(threads: int):
        if threads not in indexes:
            path = work / f"t{threads}"
            Index.from_texts(
                texts, path=path, show_progress=False, num_threads=threads, heap_size=15_000_000 * threads
            )
            indexes[threads] = Index.open(path)
        return indexes[threads]

    def same_as_one_segment(threads: int, query: str, ranker: str, **params: Any):
        def call():
            rows = {
                t: [h.row for h in index(t).search(query, k=7, ranker=ranker, **params)] for t in (1, threads)
            }
            return rows

        return Case(
            f"ties/{ranker}{'-' + '-'.join(f'{k}{v}' for k, v in params.items()) if params else ''} "
            f"{query!r} at {threads} segments",
            "ties",
            call,
            expect=lambda rows: rows[1] == rows[threads],
        )

    return [
        same_as_one_segment(threads, query, ranker, **params)
        for threads in (2, 4)
        for query, ranker, params in (
            ("gamma alpha delta", "bm25", {}),
            ("gamma alpha delta", "sdm", {"depth": 5}),
            ("alpha", "ql", {}),
        )
    ]


def _edge_cases(root: Path, work: Path) -> list[Case]:
    import numpy as np

    from hf_querygen.retrieval import Index

    docs = Index.from_texts(DOCS + [""], **SMALL_INDEX)
    empty = Index.from_texts([], **SMALL_INDEX)
    blanks = Index.from_texts(["", "  ", "?!"], **SMALL_INDEX)

    def scaled_weights(scale: float):
        def call():
            scaled = docs.score(
                "alpha beta gamma", ranker="sdm", weights=(0.85 * scale, 0.10 * scale, 0.05 * scale)
            )
            base = docs.score("alpha beta gamma", ranker="sdm")
            return _finite(scaled) and np.allclose(scaled, base, rtol=1e-9)

        return call

    def equal_denormal_weights():
        tiny = docs.score("alpha beta gamma", ranker="sdm", weights=(5e-324, 5e-324, 5e-324))
        ones = docs.score("alpha beta gamma", ranker="sdm", weights=(1, 1, 1))
        return _finite(tiny) and np.allclose(tiny, ones, rtol=1e-9)

    rows: list[tuple[str, Callable[[], Any], Any]] = [
        ("ql mu=5e-324 (denormal)", lambda: docs.score("alpha zzz", ranker="ql", mu=5e-324), _finite),
        ("sdm mu=5e-324", lambda: docs.score("alpha zzz", ranker="sdm", mu=5e-324), _finite),
        ("sdm mu=1e-300", lambda: docs.score("alpha beta", ranker="sdm", mu=1e-300), _finite),
        (
            "bm25 k1=5e-324 b=1",
            lambda: docs.score("alpha zzz beta", ranker="bm25", k1=5e-324, b=1.0),
            _finite,
        ),
        ("bm25 b=1 on an empty document", lambda: docs.score("alpha", ranker="bm25", b=1.0), _finite),
        ("sdm weights x 1e308", scaled_weights(1e308 / 0.85), bool),
        ("sdm weights x 1e-300", scaled_weights(1e-300), bool),
        ("sdm weights all 5e-324", equal_denormal_weights, bool),
        ("score in an empty collection (ql)", lambda: empty.score("alpha", ranker="ql"), _finite),
        ("score in an empty collection (sdm)", lambda: empty.score("alpha beta", ranker="sdm"), _finite),
        ("score over only empty documents (ql)", lambda: blanks.score("alpha", ranker="ql"), _finite),
        ("score over only empty documents (sdm)", lambda: blanks.score("alpha beta", ranker="sdm"), _finite),
        (
            "score over only empty documents (bm25 exact)",
            lambda: blanks.score("alpha", ranker="bm25"),
            _finite,
        ),
        (
            "search over only empty documents (sdm)",
            lambda: blanks.search("alpha beta", ranker="sdm"),
            lambda h: h == [],
        ),
    ]
    return [Case(f"edges/{name}", "edges", call, expect=expect) for name, call, expect in rows]


def _generation_cases(root: Path, work: Path) -> list[Case]:
    import json

    from transformers import pipeline

    models = _shared_models(root)
    text = "where should i go in beijing"

    def keywords(**kwargs: Any):
        return lambda: pipeline("keyword-query-generation", model=str(models["dual"]))(text, **kwargs)

    def segment(**kwargs: Any):
        return lambda: pipeline("query-segmentation", model=str(models["tagger"]))(text, **kwargs)

    def predict_tagger(**kwargs: Any):
        def call():
            from hf_querygen.model_folder import load_trained
            from hf_querygen.tasks.base import get_task

            model, tokenizer, _ = load_trained(models["tagger"])
            return get_task("segmentation").predict(model, tokenizer, [text], **kwargs)

        return call

    rows = [
        ("pipeline max_new_tokens=-1", keywords(max_new_tokens=-1), ("max_new_tokens",)),
        ("pipeline max_new_tokens='7'", keywords(max_new_tokens="7"), ("max_new_tokens",)),
        ("pipeline max_new_tokens=2.5", keywords(max_new_tokens=2.5), ("max_new_tokens",)),
        ("pipeline num_beams=True", keywords(num_beams=True), ("num_beams",)),
        (
            "pipeline num_return_sequences=3 without beams",
            keywords(num_return_sequences=3),
            ("num_return_sequences",),
        ),
        ("pipeline top_p=1.5 sampling", keywords(top_p=1.5, do_sample=True), ("top_p",)),
        (
            "pipeline temperature=nan sampling",
            keywords(temperature=float("nan"), do_sample=True),
            ("temperature",),
        ),
        ("tagger pipeline num_beams=2", segment(num_beams=2), ("num_beams",)),
        (
            "tagger predict num_return_sequences=2",
            predict_tagger(num_return_sequences=2),
            ("num_return_sequences",),
        ),
        ("tagger predict max_new_tokens=3", predict_tagger(max_new_tokens=3), ("max_new_tokens",)),
    ]
    cases = [
        Case(f"generation/{name}", "generation", call, mentions=m, strict_mentions=True)
        for name, call, m in rows
    ]
    tagger = _copy_model(root, "tagger", "cli")
    (tagger / "hf_querygen_training.json").write_text(json.dumps({"task": "segmentation"}))
    cases.append(
        _cli_case(
            "generation/cli generate --num-return-sequences 2 on a tagger",
            "generation",
            ["generate", "--model", str(tagger), "--num-return-sequences", "2", text],
            mentions=("num-return-sequences",),
        )
    )
    cases.append(
        _cli_case(
            "generation/cli generate --max-new-tokens 3 on a tagger",
            "generation",
            ["generate", "--model", str(tagger), "--max-new-tokens", "3", text],
            mentions=("max-new-tokens",),
        )
    )
    return cases


def _demo_cases(root: Path, work: Path) -> list[Case]:
    base = ["demo", "--models-dir", str(work / "models"), "--data-dir", str(work / "no-data")]
    rows = [
        ("--port 70000", ["--port", "70000"], ("port",)),
        ("--port 0", ["--port", "0"], ("port",)),
        ("--port -1", ["--port", "-1"], ("port",)),
        ("--max-seconds -5", ["--max-seconds", "-5"], ("max_seconds",)),
        ("--max-seconds nan", ["--max-seconds", "nan"], ("max_seconds",)),
        ("--max-seconds inf", ["--max-seconds", "inf"], ("max_seconds",)),
        ("--host no-such-host.invalid", ["--host", "no-such-host.invalid"], ("no-such-host.invalid",)),
        ("--host 192.0.2.1 (not this machine)", ["--host", "192.0.2.1"], ("192.0.2.1",)),
        ("--host ''", ["--host", ""], ("host",)),
    ]
    return [_cli_case(f"demo_args/{name}", "demo_args", base + argv, mentions=m) for name, argv, m in rows]


def _remote_code_cases(root: Path, work: Path) -> list[Case]:
    import json

    from hf_querygen import load_pipeline
    from hf_querygen.model_folder import load_trained

    def damaged(tag: str, damage: Callable[[Path], str]):
        folder = _copy_model(root, "dual", f"code-{tag}")
        name = damage(folder)

        def call():
            load_trained(folder)
            return load_pipeline("keyword-query-generation", folder)

        return Case(f"remote_code/{tag}", "remote_code", call, mentions=(name,), strict_mentions=True)

    def garbage(folder: Path) -> str:
        path = next(folder.glob("modeling_*.py"))
        path.write_bytes(b"\x00\xff not python (")
        return path.name

    def truncated(folder: Path) -> str:
        path = next(folder.glob("modeling_*.py"))
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return path.name

    def swapped(folder: Path) -> str:
        path = next(folder.glob("modeling_*.py"))
        path.write_bytes(next(folder.glob("configuration_*.py")).read_bytes())
        return path.name

    def missing(folder: Path) -> str:
        path = next(folder.glob("pipeline_*.py"))
        path.unlink()
        return path.name

    def reference(value: str) -> Callable[[Path], str]:
        def edit(folder: Path) -> str:
            config = json.loads((folder / "config.json").read_text())
            config["auto_map"]["AutoConfig"] = value
            (folder / "config.json").write_text(json.dumps(config))
            return "auto_map"

        return edit

    return [
        damaged("garbage modeling file", garbage),
        damaged("truncated modeling file", truncated),
        damaged("modeling file swapped with the configuration", swapped),
        damaged("missing pipeline file", missing),
        damaged("auto_map ../outside.Evil", reference("../outside.Evil")),
        damaged("auto_map other/repo--module.Class", reference("other/repo--modeling_dual_decoder.X")),
        damaged("auto_map without a class", reference("modeling_dual_decoder")),
    ]


def _location_cases(root: Path, work: Path) -> list[Case]:
    from hf_querygen.retrieval import Index

    docs = Index.from_texts(DOCS, **SMALL_INDEX)
    texts = [f"document {i}" for i in range(9000)]
    bad_row = 8200  # in the second chunk of 8192
    rows = [
        (
            "a non-string text in the second chunk",
            lambda: Index.from_texts([*texts[:bad_row], 5, *texts[bad_row:]], **SMALL_INDEX),
            (f"text {bad_row}",),
        ),
        (
            "a lone surrogate in a text of the second chunk",
            lambda: Index.from_texts([*texts[:bad_row], "a \ud800 b", *texts[bad_row:]], **SMALL_INDEX),
            (f"text {bad_row}",),
        ),
        ("a lone surrogate in a search query", lambda: docs.search("alpha \udc80"), ("surrogate",)),
        (
            "a lone surrogate in an sdm query",
            lambda: docs.search("alpha \udc80", ranker="sdm"),
            ("surrogate",),
        ),
        ("a lone surrogate in score", lambda: docs.score("\ud800 beta"), ("surrogate",)),
        (
            "a lone surrogate in search_batch",
            lambda: docs.search_batch(["alpha", "\ud800"], threads=2),
            ("surrogate",),
        ),
    ]
    return [
        Case(f"error_location/{name}", "error_location", call, mentions=m, strict_mentions=True)
        for name, call, m in rows
    ]


# ---------------------------------------------------------------- main
GROUPS = (
    "corpus",
    "load_corpus",
    "config",
    "metric",
    "tokenizer",
    "model",
    "cli",
    # outputs, indexes, folders, NUL characters
    "overwrite",
    "retrieval",
    "index_cli",
    "cli_paths",
    "model_folder",
    "metric_module",
    "corpus_nul",
    # writers, integrity, edges, error locations (shared models)
    "writers",
    "index_integrity",
    "ties",
    "edges",
    "generation",
    "demo_args",
    "remote_code",
    "error_location",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("bad_inputs_results.json"))
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
            "overwrite": lambda: overwrite_cases(work / "overwrite"),
            "retrieval": lambda: retrieval_cases(work / "retrieval"),
            "index_cli": lambda: index_cli_cases(work / "index_cli"),
            "cli_paths": lambda: cli_path_cases(work / "cli_paths"),
            "model_folder": lambda: model_folder_cases(work / "model_folder"),
            "metric_module": metric_module_cases,
            "corpus_nul": lambda: corpus_nul_cases(work / "corpus_nul"),
            **{
                group: (lambda g=group: shared_model_cases(work / "shared_models_cases", g))
                for group in SHARED_MODEL_GROUPS
            },
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
            if case.group == "cli" or case.extra.get("cli"):
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
