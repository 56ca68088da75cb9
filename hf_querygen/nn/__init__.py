"""Building blocks shared by every model: embeddings, (bi)RNN encoders with packing and the encoder
output the RNN encoder-decoders share, attention (Bahdanau additive, Luong dot / general / concat, Luong
local-p), copy distributions in the extended output space (CopyNet), a recurrent-state cache that beam
search can reorder, the token NLL with Trainer's normalisation, and the uniform weight initialisation.
Training-only, not imported here (a saved model's remote code carries this package): :mod:`.dropout`,
dropout whose CPU masks are cheap to draw, for training transformers models there."""

from .attention import (
    ATTENTION_KINDS,
    AdditiveAttention,
    AttentionOutput,
    LocalPredictiveAttention,
    LuongAttention,
    build_attention,
    masked_softmax,
)
from .cache import CACHE_NAME, RecurrentStateCache, cache_of, pick_cache, with_cache
from .copy import (
    CopyNet,
    CopyNetOutput,
    extended_target_index,
    extended_to_input_ids,
    first_occurrence_positions,
    live_copy_slots,
    positions_matching_ids,
    positions_to_extended,
)
from .encoder import (
    RNN_CELLS,
    RecurrentEncoderOutput,
    RecurrentSourceEncoder,
    RNNEncoder,
    RNNEncoderOutput,
    WordEmbeddings,
    build_rnn,
    check_rnn_hyper_parameters,
    recurrent_encoder_output,
)
from .initialization import init_uniform_weights
from .labels import IGNORE_INDEX, PROBABILITY_FLOOR, floored_log, mask_labels, shift_labels_right
from .loss import token_nll

__all__ = [
    "ATTENTION_KINDS",
    "CACHE_NAME",
    "IGNORE_INDEX",
    "PROBABILITY_FLOOR",
    "AdditiveAttention",
    "AttentionOutput",
    "CopyNet",
    "CopyNetOutput",
    "LocalPredictiveAttention",
    "LuongAttention",
    "RNN_CELLS",
    "RNNEncoder",
    "RNNEncoderOutput",
    "RecurrentEncoderOutput",
    "RecurrentSourceEncoder",
    "RecurrentStateCache",
    "WordEmbeddings",
    "build_attention",
    "build_rnn",
    "cache_of",
    "check_rnn_hyper_parameters",
    "extended_target_index",
    "extended_to_input_ids",
    "first_occurrence_positions",
    "floored_log",
    "init_uniform_weights",
    "live_copy_slots",
    "mask_labels",
    "masked_softmax",
    "pick_cache",
    "positions_matching_ids",
    "positions_to_extended",
    "recurrent_encoder_output",
    "shift_labels_right",
    "token_nll",
    "with_cache",
]
