"""The model contract (tests/model_contract.py) run over every registered model and variant."""

from __future__ import annotations

import pytest
import torch
import transformers
from model_contract import (
    CASES,
    GENERATING_CASES,
    build_case,
    content,
    load_realigned,
    real_length,
    sequence_log_probs,
)
from safetensors.torch import load_file

import hf_querygen
from hf_querygen.errors import InvalidInputError
from hf_querygen.models import MODELS, ModelSpec
from hf_querygen.nn.cache import CACHE_NAME
from hf_querygen.specs import family_of, model_packages

torch.set_num_threads(1)

ids = [f"{name}/{variant}" for name, variant in CASES]
generating_ids = [f"{name}/{variant}" for name, variant in GENERATING_CASES]
COPY_CASES = [
    (name, variant)
    for name, variant in GENERATING_CASES
    if build_case(name, variant, sharpen=1.0).model.logits_are_log_probs
]


def test_registry_lists_every_model_package_with_a_working_spec():
    # every folder under hf_querygen/models is a model package that registered itself, under its model type
    packages = {spec.module for _, spec in MODELS.items()}
    assert set(model_packages()) <= packages
    assert len(MODELS) >= 6 and {"rnn_seq2seq", "dual_decoder", "ctrsgen"} <= set(MODELS.names())
    for name, spec in MODELS.items():
        assert isinstance(spec, ModelSpec) and spec.variants, name
        assert spec.model_type == name, (name, spec.model_type)
        assert hasattr(transformers, spec.auto_class), spec.auto_class
        # the Auto classes resolve it, and the family / card paper come from the spec
        config = spec.tiny_config()
        assert type(transformers.AutoConfig.for_model(name)) is spec.config_class
        auto = getattr(transformers, spec.auto_class)
        assert type(auto.from_config(config)) is spec.model_class
        assert family_of(config) == spec.family_of(config)
        assert getattr(hf_querygen, spec.config_class.__name__) is spec.config_class
        assert getattr(hf_querygen, spec.model_class.__name__) is spec.model_class
    assert {("rnn_seq2seq", "gru-copynet"), ("dual_decoder", "dual")} <= set(COPY_CASES)


# ----------------------------------------------------------------------------------------- save / load
@pytest.mark.parametrize(("name", "variant"), CASES, ids=ids)
def test_save_load_gives_bit_identical_outputs(name, variant, tmp_path):
    case = build_case(name, variant)
    case.model.save_pretrained(tmp_path)
    auto = getattr(transformers, case.spec.auto_class)
    loaded, info = auto.from_pretrained(tmp_path, output_loading_info=True)
    loaded.eval()
    assert type(loaded) is case.spec.model_class
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    saved_state, loaded_state = case.model.state_dict(), loaded.state_dict()
    assert saved_state.keys() == loaded_state.keys()
    assert all(torch.equal(saved_state[key], loaded_state[key]) for key in saved_state)
    with torch.no_grad():
        before, after = case.model(**case.inputs), loaded(**case.inputs)
        assert torch.allclose(before.logits, after.logits, atol=1e-6, rtol=0, equal_nan=True)
        # safetensors maps the weights at arbitrary memory alignment and CPU kernels vectorise by alignment,
        # which can move the last bit; in freshly allocated memory the outputs are bit-identical
        for parameter in loaded.parameters():
            parameter.data = parameter.data.clone()
        after = loaded(**case.inputs)
    assert torch.equal(before.logits, after.logits) and torch.equal(before.loss, after.loss)
    if case.spec.generates:
        for beams in (1, 3):
            settings = case.source
            first = case.model.generate(**settings, num_beams=beams, max_new_tokens=6)
            assert torch.equal(first, loaded.generate(**settings, num_beams=beams, max_new_tokens=6))


@pytest.mark.parametrize(("name", "variant"), CASES, ids=ids)
def test_saved_weight_names_are_the_module_names(name, variant, tmp_path):
    """Trainer reloads checkpoints (resume, load_best_model_at_end) with a plain ``load_state_dict`` of the
    saved file: the file's keys must be exactly the module's, or weights are silently not restored."""
    case = build_case(name, variant)
    case.model.save_pretrained(tmp_path / "model")
    saved = load_file(tmp_path / "model" / "model.safetensors")
    fresh = build_case(name, variant).model
    result = fresh.load_state_dict(saved, strict=False)
    tied = {key for key in result.missing_keys if key in getattr(fresh, "all_tied_weights_keys", {})}
    assert set(result.missing_keys) - tied == set() and result.unexpected_keys == []


# ----------------------------------------------------------------------------------------- batch = single
@pytest.mark.parametrize(("name", "variant"), CASES, ids=ids)
def test_padded_batch_equals_each_example_alone(name, variant):
    case = build_case(name, variant)
    inputs, tagger = case.inputs, not case.spec.generates
    with torch.no_grad():
        batch = case.model(**inputs).logits
        for row in range(inputs["input_ids"].shape[0]):
            length = int(inputs["attention_mask"][row].sum())
            labels = inputs["labels"][row : row + 1]
            steps = length if tagger else int((labels != -100).sum())
            labels = labels[:, :steps]
            alone = case.model(**case.row(row), labels=labels).logits
            if batch.dim() == 2:  # one score row per example (a sequence classifier): no steps
                assert torch.allclose(alone[0], batch[row], atol=1e-5), row
                continue
            columns = alone.shape[-1]  # a copy model's extended space is V + this row's source length
            assert torch.allclose(alone[0], batch[row, :steps, :columns], atol=1e-5, equal_nan=True), row
            # the batch's extra columns are the padded source positions: impossible outputs
            assert torch.all(torch.isneginf(batch[row, :steps, columns:]))
    if case.spec.generates:
        for beams in (1, 3):
            generated = case.generate(num_beams=beams).sequences
            for row in range(inputs["input_ids"].shape[0]):
                alone = case.model.generate(**case.row(row), num_beams=beams, max_new_tokens=7)
                eos = case.config.eos_token_id
                assert content(alone[0], eos) == content(generated[row], eos), (beams, row)


# ----------------------------------------------------------------------------------------- cache
@pytest.mark.parametrize(("name", "variant"), GENERATING_CASES, ids=generating_ids)
def test_generation_with_the_cache_equals_without_and_feeds_one_token_per_step(name, variant):
    case = build_case(name, variant)
    fed = []
    hook = case.model.register_forward_pre_hook(
        lambda module, args, kwargs: fed.append(kwargs["decoder_input_ids"].shape[1]), with_kwargs=True
    )
    try:
        for beams in (1, 3):
            fed.clear()
            cached = case.generate(num_beams=beams, use_cache=True, min_new_tokens=5)
            assert fed[0] == 1 and set(fed[1:]) == {1}, f"the cache was not used ({CACHE_NAME}): {fed}"
            uncached = case.generate(num_beams=beams, use_cache=False, min_new_tokens=5)
            assert torch.equal(cached.sequences, uncached.sequences), beams
            for step_cached, step_uncached in zip(cached.scores, uncached.scores, strict=True):
                assert torch.allclose(step_cached, step_uncached, atol=1e-5, equal_nan=True)
    finally:
        hook.remove()


@pytest.mark.parametrize(("name", "variant"), GENERATING_CASES, ids=generating_ids)
def test_teacher_forcing_equals_incremental_decoding_with_the_cache(name, variant):
    case = build_case(name, variant)
    inputs = case.inputs
    decoder_input_ids = case.model.prepare_decoder_input_ids_from_labels(inputs["labels"])
    with torch.no_grad():
        full = case.model(**inputs).logits
        encoder_outputs = case.model.get_encoder()(**case.source)
        cache = None
        for t in range(decoder_input_ids.shape[1]):
            step = case.model(
                attention_mask=inputs["attention_mask"],
                encoder_outputs=encoder_outputs,
                decoder_input_ids=decoder_input_ids[:, t : t + 1],
                use_cache=True,
                **{CACHE_NAME: cache},
            )
            cache = getattr(step, CACHE_NAME)
            assert torch.equal(torch.isneginf(step.logits[:, 0]), torch.isneginf(full[:, t])), t
            assert torch.allclose(step.logits[:, 0], full[:, t], atol=1e-5, equal_nan=True), t
    assert cache.get_seq_length() == decoder_input_ids.shape[1]


@pytest.mark.parametrize(("name", "variant"), GENERATING_CASES, ids=generating_ids)
def test_sampling_with_the_cache_equals_without(name, variant):
    case = build_case(name, variant)
    sampled = {}
    for use_cache in (True, False):
        torch.manual_seed(5)
        sampled[use_cache] = case.generate(
            do_sample=True, top_k=5, num_return_sequences=2, use_cache=use_cache
        ).sequences
    assert torch.equal(sampled[True], sampled[False])
    assert sampled[True].shape[0] == 2 * case.inputs["input_ids"].shape[0]
    assert int(sampled[True].min()) >= 0 and int(sampled[True].max()) < case.output_space


# ----------------------------------------------------------------------------------------- beam >= greedy
@pytest.mark.parametrize(("name", "variant"), GENERATING_CASES, ids=generating_ids)
def test_beam_search_finds_a_sequence_at_least_as_likely_as_greedy(name, variant):
    case = build_case(name, variant)
    greedy = case.generate(num_beams=1).sequences
    beam = case.generate(num_beams=4, length_penalty=0.0, early_stopping="never").sequences
    greedy_scores, beam_scores = sequence_log_probs(case, greedy), sequence_log_probs(case, beam)
    assert torch.all(torch.isfinite(greedy_scores)) and torch.all(torch.isfinite(beam_scores))
    assert torch.all(beam_scores >= greedy_scores - 1e-4), (greedy_scores, beam_scores)


# ----------------------------------------------------------------------------------------- training
def _four_rows(inputs: dict) -> dict:
    """The tiny batch plus a copy of its first row: 4 rows of different lengths."""
    return {key: torch.cat([value, value[:1]]) for key, value in inputs.items()}


def _train_one_step(case, rows: dict, batch_size: int, accumulation: int, output_dir) -> None:
    from torch.utils.data import Dataset

    class Rows(Dataset):
        def __len__(self) -> int:
            return rows["input_ids"].shape[0]

        def __getitem__(self, index: int) -> dict:
            return {key: value[index] for key, value in rows.items()}

    def collate(examples: list[dict]) -> dict:
        return {key: torch.stack([example[key] for example in examples]) for key in examples[0]}

    args = transformers.TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation,
        max_steps=1,
        learning_rate=1e-2,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        seed=0,
        optim="sgd",  # the update is proportional to the gradient: what accumulation must reproduce
        disable_tqdm=True,
    )
    transformers.Trainer(model=case.model, args=args, train_dataset=Rows(), data_collator=collate).train()


@pytest.mark.parametrize(("name", "variant"), CASES, ids=ids)
def test_one_trainer_step_lowers_the_loss_and_accumulation_equals_one_big_batch(name, variant, tmp_path):
    big, small = build_case(name, variant), build_case(name, variant)
    rows = _four_rows(big.inputs)
    with torch.no_grad():
        before = big.model.eval()(**rows).loss
    _train_one_step(big, rows, batch_size=4, accumulation=1, output_dir=tmp_path / "big")
    _train_one_step(small, rows, batch_size=2, accumulation=2, output_dir=tmp_path / "small")
    with torch.no_grad():
        after = big.model.eval()(**rows).loss
    assert torch.isfinite(after) and after < before, (float(before), float(after))
    small_state, start = small.model.state_dict(), build_case(name, variant).model.state_dict()
    for key, value in big.model.state_dict().items():
        if big.spec.exact_accumulation:
            assert torch.allclose(value, small_state[key], atol=1e-6), key
        else:
            # the update agrees to 30% on this tiny batch whose rows have very different tag / decoder token
            # ratios (summing k micro-batch means instead, as before the share weighting, is ~40% off)
            update, small_update = value - start[key], small_state[key] - start[key]
            assert (update - small_update).norm() <= 0.3 * update.norm() + 1e-7, key


# ----------------------------------------------------------------------------------------- embeddings
@pytest.mark.parametrize(("name", "variant"), CASES, ids=ids)
def test_resize_token_embeddings_keeps_old_ids_and_round_trips(name, variant, tmp_path):
    case = build_case(name, variant)
    if not case.spec.resizes_token_embeddings:
        with pytest.raises(InvalidInputError, match="resize_token_embeddings"):
            case.model.resize_token_embeddings(case.config.vocab_size + 5)
        return
    with torch.no_grad():
        before = case.model(**case.inputs).logits
    old = case.config.vocab_size

    def keeps_old_outputs(after: torch.Tensor) -> bool:
        """Old ids keep their outputs; a model whose output space is every token id (the pointer-generator
        copies any word) gains columns for the new ids, which get no probability from these inputs."""
        columns = before.shape[-1]
        extra = after[..., columns:]
        if extra.numel() and not (case.model.logits_are_log_probs and bool((extra.exp() < 1e-12).all())):
            return False
        return torch.equal(before, after[..., :columns])

    case.model.resize_token_embeddings(old + 5)
    assert case.model.get_input_embeddings().num_embeddings == old + 5 and case.config.vocab_size == old + 5
    decoder = getattr(case.model, "decoder", None)
    if getattr(case.config, "tie_word_embeddings", False) and hasattr(decoder, "embed_tokens"):
        assert decoder.embed_tokens.embedding.weight is case.model.get_input_embeddings().weight
    with torch.no_grad():
        assert keeps_old_outputs(case.model(**case.inputs).logits)
        new_ids = case.inputs["input_ids"].clone()
        new_ids[0, 0] = old + 4  # a new word is embeddable
        case.model(**{**case.inputs, "input_ids": new_ids})
    case.model.save_pretrained(tmp_path)
    loaded = load_realigned(case.spec.auto_class, tmp_path)
    with torch.no_grad():
        assert keeps_old_outputs(loaded(**case.inputs).logits)


# ----------------------------------------------------------------------------------------- processors
def _repeats(sequences: torch.Tensor, eos: int) -> int:
    return sum(len(row) - len(set(row)) for row in (content(sequence, eos) for sequence in sequences))


@pytest.mark.parametrize("beams", [1, 3])
@pytest.mark.parametrize(("name", "variant"), GENERATING_CASES, ids=generating_ids)
def test_logits_processors_are_obeyed_in_greedy_and_beam_search(name, variant, beams):
    case = build_case(name, variant)
    eos, pad = case.config.eos_token_id, case.config.pad_token_id
    plain = case.generate(num_beams=beams).sequences

    # repetition_penalty: fewer repeated tokens (when the unconstrained output repeats at all)
    penalised = case.generate(num_beams=beams, repetition_penalty=20.0).sequences
    if _repeats(plain, eos):
        assert _repeats(penalised, eos) < _repeats(plain, eos)

    # no_repeat_ngram_size=1: no token twice (one id per word in the copy space, so no word twice)
    no_repeat = case.generate(num_beams=beams, no_repeat_ngram_size=1).sequences
    assert _repeats(no_repeat, eos) == 0

    # bad_words_ids: a token the model produced never comes back
    banned = next(content(row, eos)[0] for row in plain if content(row, eos))
    without = case.generate(num_beams=beams, bad_words_ids=[[banned]]).sequences
    assert all(banned not in content(row, eos) for row in without)

    # min_length: [EOS] is suppressed until min_length tokens (when the model has another continuation)
    short = min(real_length(row, eos) for row in case.generate(num_beams=beams, max_new_tokens=12).sequences)
    min_length = min(short + 3, 12)  # lengths count the decoder start; 13 is the most 12 new tokens give
    longer = case.generate(num_beams=beams, min_length=min_length, max_new_tokens=12).sequences
    lengths = [real_length(row, eos) for row in longer]
    eos_forced = getattr(case.config, "pointer_only", False) and beams == 1  # see the next test
    if not eos_forced:
        assert min(lengths) >= min_length, lengths
    # whatever the processors do, no row emits [PAD] before it ended
    for sequences in (plain, penalised, no_repeat, without, longer):
        for row in sequences:
            assert pad not in row[1 : real_length(row, eos)].tolist(), row


def test_pointer_only_greedy_min_length_waives_the_constraint_instead_of_emitting_pad():
    """After the pointer-only model's end sentinel its only continuation is [EOS]: min_length leaves that
    row with no legal token. Greedy search then takes the model's own [EOS] (dead-row fallback) rather
    than id 0 ([PAD]) from an all -inf row; beam search keeps pointing instead (asserted above)."""
    case = build_case("dual_decoder", "pointer_only")
    eos, pad = case.config.eos_token_id, case.config.pad_token_id
    out = case.generate(num_beams=1, min_length=8, max_new_tokens=10)
    lengths = [real_length(row, eos) for row in out.sequences]
    assert min(lengths) < 8  # a row reached its sentinel early: the constraint was waived, not broken
    for row, ended in zip(out.sequences, lengths, strict=True):
        assert pad not in row[1:ended].tolist(), row
    for step in out.scores:  # every processed row kept a finite choice
        assert torch.isfinite(step).any(dim=-1).all()


@pytest.mark.parametrize(("name", "variant"), COPY_CASES, ids=[f"{n}/{v}" for n, v in COPY_CASES])
def test_copy_models_hand_log_probabilities_to_the_processors(name, variant):
    """logits are normalised log-probabilities, so repetition_penalty theta maps p -> p**theta on the
    tokens already produced (log p * theta), the same in greedy search as in beam search."""
    case = build_case(name, variant)
    with torch.no_grad():
        logits = case.model(**case.inputs).logits
    finite = torch.isfinite(logits)
    assert torch.all(logits[finite] <= 0)
    assert torch.allclose(logits.exp().sum(-1), torch.ones(logits.shape[:-1]), atol=1e-5)
    theta = 3.0
    out = case.generate(num_beams=1, repetition_penalty=theta, output_logits=True, max_new_tokens=5)
    for step, (raw, processed) in enumerate(zip(out.logits, out.scores, strict=True)):
        seen = torch.zeros_like(raw, dtype=torch.bool)
        seen.scatter_(1, out.sequences[:, : step + 1], True)
        expected = torch.where(seen & torch.isfinite(raw), raw * theta, raw)
        expected[:, case.model.never_generated_ids()] = float("-inf")  # [PAD] / decoder start: never
        live = torch.isfinite(processed).any(dim=-1)  # rows the dead-row fallback did not restore
        assert torch.allclose(processed[live], expected[live], equal_nan=True)


def test_diverse_beam_groups_left_transformers_core_generate():
    """num_beam_groups + diversity_penalty now load Hub code (custom_generate): offline they fail loudly."""
    case = build_case("rnn_seq2seq", "gru-bahdanau")
    with pytest.raises((ValueError, OSError), match="group-beam-search|trust_remote_code"):
        case.generate(num_beams=4, num_beam_groups=2, diversity_penalty=1.0)


def test_repetition_penalty_and_min_length_change_what_every_kind_of_model_generates():
    """Guards the processor checks above against being vacuous: on the copy models (log-probabilities) and
    on the raw-score models alike there are outputs that repeat and that end early, and the penalty removes
    repeats while min_length pushes [EOS] back."""
    reduced, lengthened, wanted = set(), set(), {"log-probs", "raw"}
    for seed in range(3):  # a tiny random model ends early only for some seeds
        for name, variant in GENERATING_CASES:
            if reduced == wanted and lengthened == wanted:
                break
            case = build_case(name, variant, seed=seed)
            kind = "log-probs" if case.model.logits_are_log_probs else "raw"
            eos = case.config.eos_token_id
            for beams in (1, 3):
                plain = case.generate(num_beams=beams, max_new_tokens=12).sequences
                if _repeats(plain, eos):
                    penalised = case.generate(num_beams=beams, max_new_tokens=12, repetition_penalty=20.0)
                    assert _repeats(penalised.sequences, eos) < _repeats(plain, eos), (name, variant, beams)
                    reduced.add(kind)
                short = min(real_length(row, eos) for row in plain)
                if short < 8 and not (getattr(case.config, "pointer_only", False) and beams == 1):
                    longer = case.generate(num_beams=beams, max_new_tokens=12, min_length=short + 3).sequences
                    assert min(real_length(row, eos) for row in longer) >= short + 3, (name, variant, beams)
                    lengthened.add(kind)
    assert reduced == wanted and lengthened == wanted, (reduced, lengthened)
