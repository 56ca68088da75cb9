"""Lean references for the speed benchmarks: minimal greedy loops and the step-by-step training loop.

They live here, not in the library: each is the least code that computes the same tokens (or the same
loss) from a library model's weights, so a benchmark can report the library as a ratio against them,
measured in the same process. Nothing here is used by ``hf_querygen``.

* :func:`dual_decoder_greedy`, :func:`rnn_seq2seq_greedy`: greedy decoding with plain tensor ops (fused
  LSTM / GRU cells, keys projected once, only the phase a batch is in computed, argmax without the
  log-softmax the ``logits`` contract needs), returning the same ids as ``generate(num_beams=1)`` with
  ``min_new_tokens = max_new_tokens`` (every row decodes exactly that many tokens).
* :func:`stepwise_rnn_scores`: the RNN decoder's teacher-forcing loop as the library ran it before its
  output layer and CopyNet's joint softmax moved after the loop (the training-step "before").
"""

from __future__ import annotations

import torch

from hf_querygen.nn.copy import extended_target_index, extended_to_input_ids, live_copy_slots


def _cell(rnn: torch.nn.RNNBase, cell: str, inputs, state):
    weights = (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
    if cell == "lstm":
        return torch._VF.lstm_cell(inputs, state, *weights)
    return torch._VF.gru_cell(inputs, state, *weights)


def _additive(attention, query, keys, projected, mask):
    """(context (B, Hk), weights (B, S)) of Bahdanau attention with projected keys."""
    hidden = torch.tanh(projected + attention.query_projection(query).unsqueeze(1))
    scores = attention.energy(hidden).squeeze(-1).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights.unsqueeze(1), keys).squeeze(1), weights


@torch.no_grad()
def dual_decoder_greedy(
    model, input_ids, attention_mask, new_tokens: int, source_word_ids=None
) -> torch.Tensor:
    """Liu'18 dual decoder, greedy, exactly ``new_tokens`` steps (no [EOS]) -> (B, 1 + new_tokens)."""
    config = model.config
    vocab = config.output_vocab_size
    encoded = model.encoder(input_ids, attention_mask, source_word_ids=source_word_ids)
    keys, mask = encoded.last_hidden_state, attention_mask.bool()
    batch, length = input_ids.shape
    summary_hidden, summary_cell = encoded.final_hidden[:, -1], encoded.final_cell[:, -1]
    pointer = (model.pointer_init_hidden(summary_hidden), model.pointer_init_cell(summary_cell))
    generator = (model.generator_init_hidden(summary_hidden), model.generator_init_cell(summary_cell))
    pointer_keys = model.pointer_attention.key_projection(keys)
    source_keys = model.source_attention.key_projection(keys)
    first = encoded.first_positions
    dead = ~(mask & (first == torch.arange(length)))
    sentinel = vocab + mask.sum(dim=1) - 1
    states = keys.new_zeros(batch, new_tokens, config.hidden_size)
    state_keys = keys.new_zeros(batch, new_tokens, config.attention_size)
    state_mask = torch.zeros(batch, new_tokens, dtype=torch.bool)
    never = torch.tensor([config.pad_token_id, config.decoder_start_token_id, config.eos_token_id])
    token = torch.full((batch,), config.decoder_start_token_id)
    in_generator = torch.zeros(batch, dtype=torch.bool)
    out = [token]
    for t in range(new_tokens):
        words = torch.where(
            token >= vocab, input_ids.gather(1, (token - vocab).clamp(0, length - 1)[:, None])[:, 0], token
        )
        embedded = model.embeddings.embedding(words)
        in_generator = in_generator | (token == sentinel)
        keep = in_generator[:, None]
        n_generating = int(in_generator.sum())
        pointed = generated = None
        if n_generating < batch:
            hidden, cell = _cell(model.pointer_rnn, "lstm", embedded, pointer)
            _, weights = _additive(model.pointer_attention, hidden, keys, pointer_keys, mask)
            probs = torch.zeros_like(weights).scatter_add_(1, first, weights).masked_fill_(dead, -1.0)
            pointed = probs.argmax(dim=-1) + vocab
            states[:, t], state_mask[:, t] = hidden, ~in_generator
            state_keys[:, t] = model.pointer_state_attention.key_projection(hidden)
            pointer = (torch.where(keep, pointer[0], hidden), torch.where(keep, pointer[1], cell))
        if n_generating:
            hidden, cell = _cell(model.generator_rnn, "lstm", embedded, generator)
            source_context, _ = _additive(model.source_attention, hidden, keys, source_keys, mask)
            pointer_context, _ = _additive(
                model.pointer_state_attention,
                hidden,
                states[:, : t + 1],
                state_keys[:, : t + 1],
                state_mask[:, : t + 1],
            )
            scores = model.output_projection(torch.cat([hidden, source_context, pointer_context], dim=-1))
            scores[:, never] = float("-inf")  # min_new_tokens = max_new_tokens: never [EOS]
            generated = scores.argmax(dim=-1)
            generator = (torch.where(keep, hidden, generator[0]), torch.where(keep, cell, generator[1]))
        if pointed is None:
            token = generated
        elif generated is None:
            token = pointed
        else:
            token = torch.where(in_generator, generated, pointed)
        out.append(token)
    return torch.stack(out, dim=1)


@torch.no_grad()
def rnn_seq2seq_greedy(
    model, input_ids, attention_mask, new_tokens: int, source_word_ids=None
) -> torch.Tensor:
    """The attentional seq2seq (Bahdanau, attention read with s_{t-1}) and CopyNet (+ joint softmax, copy
    scatter and Gu's selective read), single-layer decoder, greedy, exactly ``new_tokens`` steps."""
    config, decoder = model.config, model.decoder
    vocab = config.output_vocab_size
    encoded = model.encoder(input_ids, attention_mask, source_word_ids)
    keys, mask = encoded.last_hidden_state, attention_mask.bool()
    batch, length = input_ids.shape
    lstm = config.cell == "lstm"
    initial = decoder.initial_state(encoded)
    state = (initial["hidden"][:, 0], initial["cell"][:, 0]) if lstm else initial["hidden"][:, 0]
    projected = decoder.attention.key_projection(keys)
    copynet = decoder.copynet
    if copynet is not None:
        copy_keys = torch.tanh(copynet.copy_projection(keys))
        first = encoded.first_positions
        targets = extended_target_index(input_ids, first, vocab, config.unk_token_id)
        live = live_copy_slots(input_ids, first, mask, vocab, config.unk_token_id)
        dead = torch.cat([torch.zeros(batch, vocab, dtype=torch.bool), ~live], dim=-1)
        copy_probs = keys.new_zeros(batch, length)
    never = [config.pad_token_id, config.decoder_start_token_id, config.eos_token_id]
    token = torch.full((batch,), config.decoder_start_token_id)
    out = [token]
    for _ in range(new_tokens):
        words = torch.where(
            token >= vocab, input_ids.gather(1, (token - vocab).clamp(0, length - 1)[:, None])[:, 0], token
        )
        pieces = [decoder.embed_tokens.embedding(words)]
        query = state[0] if lstm else state
        context, _ = _additive(decoder.attention, query, keys, projected, mask)
        pieces.append(context)
        if copynet is not None:  # selective read, Gu Eq. (9)
            rho = copy_probs * ((targets == token[:, None]) & mask)
            rho = rho / rho.sum(dim=1, keepdim=True).clamp_min(1e-30)
            pieces.append(torch.bmm(rho.unsqueeze(1), keys).squeeze(1))
        state = _cell(decoder.rnn, config.cell, torch.cat(pieces, dim=-1), state)
        hidden = state[0] if lstm else state
        scores = decoder.output_projection(torch.cat([hidden, context], dim=-1))
        scores[:, never] = float("-inf")  # min_new_tokens = max_new_tokens: never [EOS]
        if copynet is None:
            token = scores.argmax(dim=-1)
        else:
            copy_scores = torch.bmm(hidden.unsqueeze(1), copy_keys.transpose(1, 2)).squeeze(1)
            joint = torch.softmax(
                torch.cat([scores, copy_scores.masked_fill(~mask, float("-inf"))], dim=-1), -1
            )
            copy_probs = joint[:, vocab:]
            extended = torch.zeros(batch, vocab + length).scatter_add_(1, targets, copy_probs)
            extended[:, :vocab] += joint[:, :vocab]
            extended[:, never] = -1.0  # after the fold: a copied [EOS] is masked too
            token = extended.masked_fill_(dead, -1.0).argmax(dim=-1)
        out.append(token)
    return torch.stack(out, dim=1)


def stepwise_rnn_scores(model, input_ids, attention_mask, labels) -> torch.Tensor:
    """Teacher forcing as the RNN decoder ran it before (every piece of every step inside the loop:
    attention, selective read from the joint copy probabilities, RNN module call, output layer, CopyNet's
    joint softmax and scatter) -> scores (B, T, C). For decoders that cannot run in parallel."""
    decoder, config = model.decoder, model.config
    encoded = model.encoder(input_ids, attention_mask)
    keys, mask = encoded.last_hidden_state, encoded.attention_mask.bool()
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    embedded = decoder.embed_tokens(
        extended_to_input_ids(
            decoder_input_ids, encoded.source_input_ids, config.output_vocab_size, config.unk_token_id
        )
    )
    state = decoder.initial_state(encoded)
    projected_keys = decoder.attention.project_keys(keys)
    steps = []
    for t in range(embedded.shape[1]):
        pieces, context = [embedded[:, t]], None
        if decoder.attend_before_rnn:
            context = decoder.attention(state["hidden"][:, -1], keys, mask, projected_keys).context
            pieces.append(context)
        if decoder.input_feeding:
            pieces.append(state["feed"])
        if decoder.selective_read:
            pieces.append(
                decoder.copynet.selective_read(
                    decoder_input_ids[:, t],
                    state["copy_probs"],
                    keys,
                    mask,
                    encoded.source_input_ids,
                    encoded.first_positions,
                )
            )
        output, rnn_state = decoder._run_rnn(torch.cat(pieces, dim=-1).unsqueeze(1), state)
        output = output.squeeze(1)
        if not decoder.attend_before_rnn:
            context = decoder.attention(output, keys, mask, projected_keys).context
        if decoder.attend_before_rnn:
            features, attentional = torch.cat([output, context], dim=-1), None
        else:
            attentional = torch.tanh(decoder.attentional_projection(torch.cat([context, output], dim=-1)))
            features = attentional
        scores = decoder.output_projection(decoder.feature_dropout(features))
        state = dict(state, **rnn_state)
        if decoder.copynet is not None:
            copied = decoder.copynet(
                scores, output, keys, mask, encoded.source_input_ids, encoded.first_positions
            )
            scores = copied.log_probs
            state["copy_probs"] = copied.copy_probs
        if decoder.input_feeding:
            state["feed"] = attentional
        steps.append(scores)
    return torch.stack(steps, dim=1)
