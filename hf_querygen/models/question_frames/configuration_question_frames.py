"""Configuration of the question-frame model: a keyword query -> the question frame to put it in."""

from __future__ import annotations

from collections.abc import Sequence

from transformers import PretrainedConfig

from ...errors import InvalidInputError
from ...text import FRAME_SLOT
from ...validation import check_float, check_int

#: the views of a keyword query's words that the model can read (``query_views``)
QUERY_VIEWS = ("mean", "first", "last")


class QuestionFramesConfig(PretrainedConfig):
    """Flat configuration of :class:`QuestionFramesForQuestionGeneration`.

    Args:
        vocab_size: rows of the word embedding table (the keyword-query words).
        frames: the question frames it chooses among, each with one ``X`` slot for the keyword query
            (``"what are the X"``; ``"X"`` is the keyword query unchanged). They are the labels
            (``id2label``): set from the training pairs by the k2q task (:func:`hf_querygen.tasks.k2q.
            frequent_question_frames`).
        num_frames: how many frames the task extracts from the training pairs (the most frequent).
        embedding_size: word embedding size.
        hidden_size: the query representation fed to the frame classifier.
        query_views: what the representation reads of the query's words, any of ``"mean"`` (their mean
            embedding), ``"first"`` and ``"last"`` (the first / last word's embedding).
        dropout: on the embeddings and the hidden layer.
        init_range: weights start uniform in [-init_range, init_range].
        pad_token_id: padding id of the inputs.
    """

    model_type = "question_frames"

    def __init__(
        self,
        vocab_size: int = 50,
        frames: Sequence[str] = (FRAME_SLOT,),
        num_frames: int = 40,
        embedding_size: int = 32,
        hidden_size: int = 32,
        query_views: Sequence[str] = QUERY_VIEWS,
        dropout: float = 0.0,
        init_range: float = 0.1,
        pad_token_id: int = 0,
        **kwargs,
    ):
        owner = type(self).__name__
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_frames", num_frames),
            ("embedding_size", embedding_size),
            ("hidden_size", hidden_size),
        ):
            check_int(owner, name, value, minimum=1)
        check_int(owner, "pad_token_id", pad_token_id, minimum=0)
        check_float(owner, "dropout", dropout, 0.0, 1.0, high_open=True)
        check_float(owner, "init_range", init_range, 0.0, None)
        if isinstance(frames, str) or not frames:
            raise InvalidInputError(f"{owner}: frames must be a non-empty list of frames, got {frames!r}")
        for frame in frames:
            if not isinstance(frame, str) or frame.split().count(FRAME_SLOT) != 1:
                raise InvalidInputError(
                    f"{owner}: every frame needs exactly one {FRAME_SLOT!r} slot, got {frame!r}"
                )
        if isinstance(query_views, str) or not query_views or not set(query_views) <= set(QUERY_VIEWS):
            raise InvalidInputError(
                f"{owner}: query_views must be a non-empty list of {QUERY_VIEWS}, got {query_views!r}"
            )
        if len(set(frames)) != len(frames):
            raise InvalidInputError(f"{owner}: frames must be distinct, got {list(frames)}")
        self.vocab_size = vocab_size
        self.frames = list(frames)
        self.num_frames = num_frames
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.query_views = [view for view in QUERY_VIEWS if view in query_views]
        self.dropout = dropout
        self.init_range = init_range
        # the frames are the labels: id2label is derived from them (a saved config round-trips)
        kwargs.pop("id2label", None)
        kwargs.pop("label2id", None)
        kwargs.pop("num_labels", None)
        labels = dict(enumerate(self.frames))
        super().__init__(
            pad_token_id=pad_token_id,
            id2label=labels,
            label2id={frame: i for i, frame in labels.items()},
            **kwargs,
        )
