"""Query segmentation representations and conversions (Lin et al. 2017; Hagen et al. 2011/2012).

A query of ``k`` words has ``k - 1`` break positions. One segmentation is written in four
interchangeable ways:

* ``|`` notation (the Webis-QSeC-10 files): ``"graffiti fonts|alphabet"``;
* a segment list: ``["graffiti fonts", "alphabet"]``;
* a break vector of length ``k - 1``: ``[0, 1]`` (1 = a break between word i and word i+1);
* BIO tags, one per word (paper Table 1): ``["B", "I", "B"]``. Every word belongs to a segment,
  so "O" never occurs; ``B`` starts a segment, ``I`` continues it.

Plus the seq2seq target of the encoder-decoder segmenter (paper Sec. 3.4): the query words with
a ``|`` token between segments, ``"graffiti fonts | alphabet"`` (Vocab_target = Vocab_source +
{"|"}).

Break fusion (paper Sec. 2, after Hagen et al. CIKM 2012) turns crowd votes into one reference.

The neural segmenters' data preparation and decoding are in :mod:`.neural` (loads torch), the registered
:class:`~hf_querygen.tasks.segmentation.task.SegmentationTask` in :mod:`.task`.
"""

from __future__ import annotations

# the notation lives in hf_querygen.text (corpora, tasks and metrics all import it); re-exported here
from ...text import (  # noqa: F401
    BIO_LABELS,
    BREAK_TOKEN,
    SegmentationError,
    bio_to_breaks,
    break_fusion,
    break_vote_counts,
    break_vote_shares,
    breaks_to_bio,
    breaks_to_segments,
    breaks_to_string,
    parse_segmentation,
    query_words,
    segmentation_to_target,
    segments_to_breaks,
    target_tokens_to_breaks,
)
