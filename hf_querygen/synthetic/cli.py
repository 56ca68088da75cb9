"""``hf-querygen synthesize``: synthetic keyword-question pairs from the wikianswers corpora (Ding & Balog).

Builds Q and C_q (:func:`~hf_querygen.synthetic.corpus.build_question_corpus`), estimates P(s) on
T_0 train, and runs :func:`~hf_querygen.synthetic.pipeline.synthesize` into ``--out-dir`` (resumable:
rerun the same command after an interruption). KQF/TDF need the retrieval index of Q
(``hf_querygen.retrieval``): ``--index PATH`` opens one (built on first use), ``--no-filters`` skips
both filters.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .._fs import check_writable_dir
from .._ray import LOCAL
from ..cli import non_negative_int, positive_int, unit_float
from ..errors import InvalidInputError


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synthesize", help="synthetic keyword-question pairs (KQGM + KQF + TDF) as a Hub-ready dataset folder"
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="dataset folder (resumed if it exists)")
    parser.add_argument("--data-dir", type=Path, default=None, help="raw corpora (default ../shared/data)")
    parser.add_argument(
        "--strategy", choices=("popular", "discriminative", "combination"), default="combination"
    )
    parser.add_argument("--baseline", action="store_true", help="baseline model Eq. (1) instead of Eq. (6)")
    parser.add_argument("--no-phrases", action="store_true", help="no phrase detection (Sec. 3.1.4)")
    parser.add_argument("--lam", type=unit_float, default=0.5, help="lambda of Eq. (1)")
    parser.add_argument("--alpha", type=unit_float, default=0.5, help="alpha of Eq. (6)")
    parser.add_argument("--beta", type=unit_float, default=0.3, help="beta of Eq. (6)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--num-candidates", type=positive_int, default=20, help="m (Sec. 5: 20)")
    parser.add_argument(
        "--top-n", type=positive_int, default=100, help="N retrieved per keyword query (Sec. 5: 100)"
    )
    parser.add_argument("--top-l", type=positive_int, default=None, help="also write config top_l with T_L")
    parser.add_argument("--shard-size", type=positive_int, default=10_000)
    parser.add_argument(
        "--num-proc", type=positive_int, default=None, help="processes for KQGM (datasets.map)"
    )
    parser.add_argument("--threads", type=positive_int, default=None, help="retrieval threads")
    parser.add_argument("--index", type=Path, default=None, help="retrieval index of Q (built if absent)")
    parser.add_argument("--no-filters", action="store_true", help="skip KQF and TDF (no index needed)")
    parser.add_argument(
        "--limit", type=positive_int, default=None, help="only the first N questions (smoke runs)"
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help="run the shards as Ray tasks (pip install 'hf-querygen[ray]'): on the cluster at ADDRESS (e.g. "
        "ray://head:10001; --out-dir and --index on a file system every node sees), or without ADDRESS on a "
        "Ray started on this machine, else a local one; same output as without --ray",
    )
    parser.set_defaults(func=_synthesize)


def _synthesize(args: argparse.Namespace) -> int:
    from .corpus import build_question_corpus, seed_length_prior
    from .kqgm import KQGMConfig
    from .pipeline import SynthesisConfig, synthesize

    check_writable_dir(args.out_dir, "--out-dir")  # before the corpus is built
    if args.index is not None and not args.index.exists():
        check_writable_dir(args.index.parent, "--index")
    corpus = build_question_corpus(args.data_dir)
    questions = corpus.questions
    if args.limit is not None:
        questions = questions.select(range(min(args.limit, len(questions))))
    index = None
    if not args.no_filters:
        if args.index is None:
            raise InvalidInputError("synthesize: KQF/TDF need --index PATH (or pass --no-filters)")
        try:
            from ..retrieval import Index
        except ImportError as err:
            raise InvalidInputError(
                "synthesize: hf_querygen.retrieval is not available; pass --no-filters"
            ) from err
        if args.index.exists():
            index = Index.open(args.index)
        else:
            index = Index.from_texts(corpus.questions["text"], ids=corpus.questions["id"], path=args.index)
    config = SynthesisConfig(
        kqgm=KQGMConfig(
            strategy=args.strategy,
            paraphrase=not args.baseline,
            phrases=not args.no_phrases,
            lam=args.lam,
            alpha=args.alpha,
            beta=args.beta,
        ),
        seed=args.seed,
        num_candidates=args.num_candidates,
        top_n=args.top_n,
        shard_size=args.shard_size,
        num_proc=args.num_proc,
        threads=args.threads,
    )
    out = synthesize(
        questions,
        args.out_dir,
        config,
        seed_length_prior(args.data_dir),
        index,
        top_l=args.top_l,
        ray_address=args.ray,
    )
    print(f"{len(out):,} synthetic pairs in {args.out_dir} ({corpus.stats['questions']:,} questions in Q)")
    return 0
