"""Label conventions shared by every model and task: the ignored label id, teacher-forcing shift-right
and the probability floor that keeps ``log`` finite in mixed (copy / pointer) distributions."""

import torch

#: label id that the losses ignore (padding, positions without a target); ``DataCollatorForSeq2Seq`` pads
#: labels with it and ``torch.nn.functional.cross_entropy`` skips it by default
IGNORE_INDEX = -100

#: smallest probability a mixture distribution may take before ``log`` (1e-30 is far below any real
#: probability in float32 and far above its underflow, so ``log`` stays finite and exact elsewhere)
PROBABILITY_FLOOR = 1e-30


def shift_labels_right(
    labels: torch.LongTensor, decoder_start_token_id: int, pad_token_id: int
) -> torch.LongTensor:
    """labels (B, T) -> teacher-forcing decoder inputs (B, T): ``[start, y_1 .. y_{T-1}]``, ignored -> pad."""
    start = labels.new_full((labels.shape[0], 1), decoder_start_token_id)
    shifted = torch.cat([start, labels[:, :-1]], dim=1)
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)


def mask_labels(labels: torch.LongTensor, pad_token_id: int) -> torch.LongTensor:
    """labels (B, T) with ``pad_token_id`` -> the same, :data:`IGNORE_INDEX` there (no loss on padding)."""
    return labels.masked_fill(labels == pad_token_id, IGNORE_INDEX)


def floored_log(probs: torch.Tensor) -> torch.Tensor:
    """probs (...) -> log(max(probs, PROBABILITY_FLOOR)): finite log-probabilities of a mixture."""
    return probs.clamp_min(PROBABILITY_FLOOR).log()
