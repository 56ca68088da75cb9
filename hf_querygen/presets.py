"""The papers' hyper-parameters by name.

``PRESETS`` maps a name to config kwargs (with the ``model_type`` that selects the config class);
``TRAINING_PRESETS`` maps the same names to training hyper-parameters named as in
``transformers.TrainingArguments`` (``optim="adamw_torch_fused"`` with ``weight_decay=0`` is plain Adam).
Values the paper does not state are marked "not stated" beside them and follow the nearest source
named there; vocabulary sizes come from the tokenizer at training time, not from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._registration import register_all
from .errors import InvalidInputError, UnknownNameError
from .models._warm_start import (
    POINTER_MODEL_TYPE,
    PRESET_FIELDS,
    WARM_START_MODEL_TYPE,
    bert2bert_config,
    is_warm_start_preset,
)
from .models.dual_decoder.configuration_dual_decoder import LIU2018_DUAL_DECODER
from .pretrained import DEFAULT_BACKBONE, MINILM_ID, backbone_config
from .registry import Registry

if TYPE_CHECKING:
    from transformers import PretrainedConfig

# Liu et al. CIKM'18 Sec. 5.1: embeddings 60, BiLSTM encoder and LSTM decoders of 128, dropout 0.4,
# encoder and decoders share the word embeddings; the same settings for every baseline they run.
_LIU2018 = {
    "model_type": "rnn_seq2seq",
    "cell": "lstm",
    "embedding_size": 60,
    "hidden_size": 128,
    "decoder_hidden_size": 128,
    "bidirectional_encoder": True,
    "dropout": 0.4,
    "tie_word_embeddings": True,
    "bridge": "linear",  # Eq. (1)
}

# Ding & Balog ICTIR'18 Sec. 4.1: embeddings 100 (uniform in [-0.1, 0.1]), one-layer BiGRU of 200, GRU
# decoder of 400, dropout 0.5. EDNet: no attention; AttNet: Bahdanau attention [3]; CopyNet: + copying [10].
_DING2018 = {
    "model_type": "rnn_seq2seq",
    "cell": "gru",
    "embedding_size": 100,
    "hidden_size": 200,
    "decoder_hidden_size": 400,
    "bidirectional_encoder": True,
    "dropout": 0.5,
    "init_range": 0.1,
    "bridge": "tanh",  # not stated; Bahdanau et al. 2015 initialise the GRU decoder with tanh(W h_1)
}

# Zhang et al. CIKM'20 Sec. 5.1: one-layer BiGRU encoders and a GRU decoder of 256, embeddings 300,
# uniform init in [-0.1, 0.1], lambda = 0.5. Table 3's ablations are switches of the same model.
_ZHANG2020 = {
    "model_type": "ctrsgen",
    "embedding_size": 300,
    "hidden_size": 256,
    "decoder_hidden_size": 256,
    "init_range": 0.1,
    "contrast_lambda": 0.5,
    "dropout": 0.0,  # not stated
}
ZHANG2020_ABLATIONS: dict[str, dict[str, Any]] = {
    "zhang2020-ctrsgen-i": {"use_irrelevant": False},  # CtrsGen_-I
    "zhang2020-ctrsgen-i-con": {"use_irrelevant": False, "decoder_attention": "concat"},  # CtrsGen_-I+Con
    "zhang2020-ctrsgen-q": {"use_query": False},  # CtrsGen_-Q
    "zhang2020-ctrsgen-q-i": {"use_query": False, "use_irrelevant": False},  # CtrsGen_-Q-I
    "zhang2020-ctrsgen-ircon": {"irrelevant_encoding": "concatenated"},  # CtrsGen_IrCon
    "zhang2020-ctrsgen-reircon": {"irrelevant_as_relevant": True},  # CtrsGen_ReIrCon
}

_PRESETS: dict[str, dict[str, Any]] = {
    # Rothe et al. TACL 2020: BERT2BERT, encoder and decoder warm-started from one pretrained BERT (here the
    # 6-layer 384-d all-MiniLM-L6-v2, offline from its PyPI package); the tasks encode its word pieces
    "bert2bert": {"model_type": WARM_START_MODEL_TYPE, "backbone": DEFAULT_BACKBONE},
    # the same with See et al.'s (ACL 2017) pointer over the source pieces
    "bert2bert-pointer": {"model_type": POINTER_MODEL_TYPE, "backbone": DEFAULT_BACKBONE},
    "zhang2020": dict(_ZHANG2020),
    **{name: {**_ZHANG2020, **switches} for name, switches in ZHANG2020_ABLATIONS.items()},
    # beyond the paper: CtrsGen with a pointer-generator switch over the query and relevant-document words
    "zhang2020-ctrsgen-copy": {**_ZHANG2020, "copy": True},
    # Table 4's query-dependent abstractive baselines: PG (Hasselqvist et al. 2017 = See et al. 2017's
    # pointer-generator with coverage + a query encoder) and RSA-style relevance-scaled attention (Baumel
    # et al. 2018) on the same model; sizes are not stated, See et al.'s (embeddings 128, GRU 256) are used
    "zhang2020-pg": {
        "model_type": "query_pointer_generator",
        "embedding_size": 128,
        "hidden_size": 256,
        "coverage": True,
        "coverage_loss_weight": 1.0,
    },
    "zhang2020-rsa": {
        "model_type": "query_pointer_generator",
        "embedding_size": 128,
        "hidden_size": 256,
        "coverage": True,
        "relevance_scaled_attention": True,
    },
    # SD2-style diversity (Nema et al. 2017): the PG with gated orthogonalised context vectors
    "zhang2020-sd2": {
        "model_type": "query_pointer_generator",
        "embedding_size": 128,
        "hidden_size": 256,
        "coverage": True,
        "diversity_attention": True,
    },
    "liu2018-seq2seq": {**_LIU2018, "attention": "none"},
    # Liu'18 cite Luong et al. [20] for the attentional baseline but give no score function; the
    # Bahdanau-style additive attention matches their own Eq. (6)-(8) and (12)
    "liu2018-attn-seq2seq": {**_LIU2018, "attention": "bahdanau"},
    # Liu'18 Sec. 3 / 5.1: the dual decoder, and its pointer decoder alone (the Pointer Network row)
    "liu2018-dual-decoder": {"model_type": "dual_decoder", **LIU2018_DUAL_DECODER},
    "liu2018-pointer-network": {"model_type": "dual_decoder", **LIU2018_DUAL_DECODER, "pointer_only": True},
    "liu2018-sequence-labeling": {
        "model_type": "rnn_tagger",
        "cell": "lstm",
        "embedding_size": 60,
        "hidden_size": 128,
        "bidirectional": True,
        "dropout": 0.4,
    },
    # Liu'18 Table 2 row 8: the attentional seq2seq and a keyword tagger on one shared encoder
    "liu2018-joint": {**_LIU2018, "model_type": "joint_seq2seq_tagger", "attention": "bahdanau"},
    # Song et al. SIGIR'17 Sec. 3: BiLSTM encoder, LSTM decoder, Luong local attention scored from
    # z_{t-1} with c_t fed into z_t = f(z_{t-1}, e(y_{t-1}), c_t); sizes are not stated (Liu'18's are used)
    "song2017": {
        **_LIU2018,
        "attention": "luong-local",
        "attention_query": "previous",
        "local_attention_window": 2,  # not stated; Luong et al. 2015 use D = 10 for sentences of ~25 words
        "local_attention_score": "general",
        "dropout": 0.0,  # not stated
    },
    "ding2018-ednet": {**_DING2018, "attention": "none"},
    "ding2018-attnet": {**_DING2018, "attention": "bahdanau"},
    "ding2018-copynet": {
        **_DING2018,
        "attention": "bahdanau",
        "copy": "copynet",
        "copy_selective_read": True,
    },
    # not in Ding & Balog: which question frame to put a keyword query in (tasks.k2q, models.question_frames);
    # 40 frames of the training pairs, 32-unit embeddings and query representation
    "ding2018-question-frames": {
        "model_type": "question_frames",
        "num_frames": 40,
        "embedding_size": 32,
        "hidden_size": 32,
        "dropout": 0.1,
    },
    # Lin et al. eCOM'17 Sec. 4.1: one-hot input, 2-layer tanh RNN of 1024, dropout 0.05, no attention.
    # A one-hot input times the first-layer matrix equals an embedding lookup, so embeddings of 1024 and
    # an untied (separate) source / target table stand in for it; the encoder is unidirectional (Fig. 2).
    "lin2017-segmenter": {
        "model_type": "rnn_seq2seq",
        "cell": "rnn",
        "embedding_size": 1024,
        "hidden_size": 1024,
        "decoder_hidden_size": 1024,
        "num_encoder_layers": 2,
        "num_decoder_layers": 2,
        "bidirectional_encoder": False,
        "attention": "none",
        "dropout": 0.05,
        "tie_word_embeddings": False,
        "bridge": "linear",
    },
    # not in Lin'17: a BIO token classifier warm-started from a pretrained encoder (the backbone's own
    # sizes; its WordPiece tokenizer; a new linear head over the first piece of each word)
    "lin2017-warm-start": {"model_type": "bert", "backbone": MINILM_ID, "classifier_dropout": 0.1},
    # not in Liu'18: a KEYWORD/O token classifier over the question's words, warm-started the same way
    "liu2018-warm-start-tagger": {"model_type": "bert", "backbone": MINILM_ID, "classifier_dropout": 0.1},
    # not in Lin'17: our BiLSTM BIO tagger, the neural counterpart of its CRF (lin2017's extra row)
    "lin2017-tagger": {
        "model_type": "rnn_tagger",
        "cell": "lstm",
        "embedding_size": 64,
        "hidden_size": 128,
        "bidirectional": True,
        "dropout": 0.2,
    },
}

#: the fused kernel (transformers' own default from torch 2.8): the same update, while ``adamw_torch``
#: runs a Python loop over the parameters on CPU (CtrsGen's 37K-row embedding: 21.7 -> 4.2 ms per step)
_ADAM = {"optim": "adamw_torch_fused", "weight_decay": 0.0}
_LIU2018_TRAINING = {**_ADAM, "learning_rate": 1e-3, "per_device_train_batch_size": 64, "max_grad_norm": 5.0}
_DING2018_TRAINING = {
    **_ADAM,
    "learning_rate": 1e-4,
    "max_grad_norm": 0.1,
    "per_device_train_batch_size": 64,  # not stated
}

# Zhang'20 Sec. 5.1: Adam, learning rate 0.0005, batch 16, gradient norm clipped at 5
_ZHANG2020_TRAINING = {
    **_ADAM,
    "learning_rate": 5e-4,
    "per_device_train_batch_size": 16,
    "max_grad_norm": 5.0,
}

# fine-tuning a pretrained encoder: AdamW with decoupled weight decay 0.01 and a linear decay after a
# short warm-up (Devlin et al. 2019's recipe); the rate is the row's (lin2017.py, liu2018.py)
_ENCODER_FINE_TUNING = {
    "optim": "adamw_torch_fused",
    "weight_decay": 0.01,
    "per_device_train_batch_size": 32,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0.06,
    "max_grad_norm": 1.0,
}

_TRAINING_PRESETS: dict[str, dict[str, Any]] = {
    # fine-tuning a pretrained network: AdamW with a short warm-up and a linear decay, the rate of
    # Rothe et al.'s BERT2BERT fine-tuning range; batch 32 fits 2 CPU cores (step ~1-2 s)
    **{
        name: {
            "optim": "adamw_torch_fused",
            "learning_rate": 1e-4,
            "weight_decay": 0.01,
            "warmup_steps": 100,
            "per_device_train_batch_size": 32,
            "max_grad_norm": 1.0,
        }
        for name in ("bert2bert", "bert2bert-pointer")
    },
    # the baselines' optimiser settings are not stated: CtrsGen's, for a like-for-like comparison
    **{
        name: dict(_ZHANG2020_TRAINING)
        for name in (
            "zhang2020",
            *ZHANG2020_ABLATIONS,
            "zhang2020-ctrsgen-copy",
            "zhang2020-pg",
            "zhang2020-rsa",
            "zhang2020-sd2",
        )
    },
    "liu2018-seq2seq": dict(_LIU2018_TRAINING),
    "liu2018-attn-seq2seq": dict(_LIU2018_TRAINING),
    "liu2018-dual-decoder": dict(_LIU2018_TRAINING),
    "liu2018-pointer-network": dict(_LIU2018_TRAINING),
    "liu2018-sequence-labeling": dict(_LIU2018_TRAINING),
    "liu2018-joint": dict(_LIU2018_TRAINING),
    # Song'17: "stochastic gradient descent"; rate, batch and clipping not stated: Luong et al. 2015's
    "song2017": {
        "optim": "sgd",
        "learning_rate": 1.0,
        "per_device_train_batch_size": 128,
        "max_grad_norm": 5.0,
    },
    "ding2018-ednet": dict(_DING2018_TRAINING),
    "ding2018-attnet": dict(_DING2018_TRAINING),
    "ding2018-copynet": dict(_DING2018_TRAINING),
    # ~6.6K pairs and a few thousand weights: a higher rate, epochs decide (the row sets how many)
    "ding2018-question-frames": {**_ADAM, "learning_rate": 5e-3, "per_device_train_batch_size": 64},
    # Lin'17: Adam, learning rate 1e-4, 50,000 epochs; batch size and clipping not stated
    "lin2017-segmenter": {
        **_ADAM,
        "learning_rate": 1e-4,
        "per_device_train_batch_size": 64,
        "max_grad_norm": 0.0,
    },
    "lin2017-warm-start": dict(_ENCODER_FINE_TUNING),
    "liu2018-warm-start-tagger": dict(_ENCODER_FINE_TUNING),
    "lin2017-tagger": {
        **_ADAM,
        "learning_rate": 1e-3,
        "per_device_train_batch_size": 64,
        "max_grad_norm": 5.0,
    },
}


#: preset name -> config kwargs (with ``model_type``); a new preset is ``PRESETS.register(name, {...})``
PRESETS: Registry[dict[str, Any]] = Registry("preset")
#: preset name -> ``TrainingArguments`` kwargs
TRAINING_PRESETS: Registry[dict[str, Any]] = Registry("training preset")
for _name, _spec in _PRESETS.items():
    PRESETS.register(_name, _spec)
for _name, _spec in _TRAINING_PRESETS.items():
    TRAINING_PRESETS.register(_name, _spec)


def config_from_preset(name: str, **overrides: Any) -> PretrainedConfig:
    """The config of preset ``name`` with ``overrides`` (e.g. ``vocab_size``, ``output_vocab_size``)
    applied. A preset with a ``backbone`` (a Hub id or folder, :mod:`hf_querygen.pretrained`) starts from
    that checkpoint's config (:func:`~hf_querygen.pretrained.backbone_config`), and
    :func:`hf_querygen.training.model_for_config` then loads its weights."""
    if name not in PRESETS:
        raise UnknownNameError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
    from transformers import AutoConfig

    register_all()  # the model types must be known to AutoConfig

    kwargs = {**PRESETS.get(name), **overrides}
    if is_warm_start_preset(kwargs):
        raise InvalidInputError(
            f"preset {name!r} warm-starts from a backbone: its config comes with the backbone's tokenizer "
            "(warm_start_config(preset, tokenizer))"
        )
    model_type = kwargs.pop("model_type")
    backbone = kwargs.pop("backbone", None)
    if backbone is not None:  # an encoder with a new head: the backbone's own config (sizes) plus kwargs
        return backbone_config(backbone, model_type, **kwargs)
    return AutoConfig.for_model(model_type, **kwargs)


def warm_start_config(name: str, tokenizer: Any, **overrides: Any) -> PretrainedConfig:
    """The BERT2BERT config of warm-start preset ``name`` (:func:`hf_querygen.models._warm_start.
    bert2bert_config`) for the backbone's ``tokenizer``; ``overrides`` may change the preset's
    ``backbone`` / ``revision`` only."""
    if name not in PRESETS:
        raise UnknownNameError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
    kwargs = {**PRESETS.get(name), **overrides}
    if not is_warm_start_preset(kwargs):
        raise InvalidInputError(f"preset {name!r} is not a warm-start preset")
    return bert2bert_config(tokenizer=tokenizer, **kwargs)


def data_read_by_backbone(
    preset: str | None, preset_overrides: Mapping[str, Any], prepare_options: Mapping[str, Any]
) -> dict[str, Any]:
    """``prepare_options`` for the data of ``preset``: a warm start reads the word pieces of the backbone its
    model starts from, the preset's or the one ``preset_overrides`` chooses (``--set backbone=...``), so that
    backbone's tokenizer prepares the data. A chosen backbone replaces the options' own; without one, the
    options keep theirs. Other presets' options are returned as they are."""
    options = dict(prepare_options)
    if preset is None or not is_warm_start(preset):
        return options
    if "backbone" in preset_overrides or "backbone" not in options:
        options["backbone"] = {**PRESETS.get(preset), **preset_overrides}["backbone"]
    return options


def is_warm_start(name: str) -> bool:
    """Whether preset ``name`` warm-starts from a pretrained backbone."""
    return name in PRESETS and is_warm_start_preset(PRESETS.get(name))


def config_fields(model_type: str) -> set[str]:
    """Every field a config of ``model_type`` takes: the ``__init__`` parameters along its class
    hierarchy (subclasses pass ``**kwargs`` up) and ``PretrainedConfig``'s own attributes."""
    import inspect

    from transformers import CONFIG_MAPPING, PretrainedConfig

    register_all()
    fields = set(PretrainedConfig().to_dict())
    for cls in CONFIG_MAPPING[model_type].__mro__:
        init = cls.__dict__.get("__init__")
        if init is not None and cls is not object:
            fields |= {
                name
                for name, param in inspect.signature(init).parameters.items()
                if name != "self" and param.kind not in (param.VAR_KEYWORD, param.VAR_POSITIONAL)
            }
    return fields


def check_config_overrides(preset: str, overrides: Mapping[str, Any], what: str = "--set") -> None:
    """Refuse override fields that preset ``preset``'s config does not have (a ``PretrainedConfig``
    would keep them as inert attributes, so a typo would train the unchanged model), suggesting the
    closest field names."""
    import difflib

    if preset not in PRESETS:
        raise UnknownNameError(f"unknown preset {preset!r}; known presets: {sorted(PRESETS)}")
    model_type = PRESETS.get(preset)["model_type"]
    if is_warm_start_preset(PRESETS.get(preset)):
        fields = set(PRESET_FIELDS)
    else:
        fields = config_fields(model_type) | ({"backbone"} if "backbone" in PRESETS.get(preset) else set())
    for name in overrides:
        if name not in fields:
            close = difflib.get_close_matches(str(name), sorted(fields), n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise InvalidInputError(
                f"{what} {name}: the {model_type} config of preset {preset!r} has no field {name!r}{hint} "
                f"(fields: {', '.join(sorted(f for f in fields if not f.startswith('_')))})"
            )


def training_arguments_from_preset(name: str, **overrides: Any) -> dict[str, Any]:
    """``TrainingArguments`` kwargs of preset ``name`` (a fresh dict) with ``overrides`` applied."""
    if name not in TRAINING_PRESETS:
        raise UnknownNameError(f"no training preset {name!r}; known: {sorted(TRAINING_PRESETS)}")
    return {**TRAINING_PRESETS.get(name), **overrides}


__all__ = [
    "PRESETS",
    "ZHANG2020_ABLATIONS",
    "TRAINING_PRESETS",
    "config_from_preset",
    "is_warm_start",
    "training_arguments_from_preset",
    "warm_start_config",
]
