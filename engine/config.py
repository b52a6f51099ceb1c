"""ModelConfig: what network to build, validated on construction.

Every check raises a ValueError that says which field to change and to what, because a student
typing into a form (or a teacher editing a link) should learn what went wrong, not read a traceback.
"""
from __future__ import annotations

import math
from dataclasses import Field, asdict, dataclass, field, fields

ARCHS = ("rnn", "lstm", "gru")  # the recurrent cells
MODEL_ARCHS = ARCHS + ("transformer",)
ACTIVATIONS = ("tanh", "relu", "sigmoid", "linear")
INITS = ("default", "orthogonal", "identity", "scaled")
# Attention score functions of a recurrent encoder-decoder (engine/attention.py has the equations).
SCORES = ("dot", "general", "additive", "scaled_dot", "cosine", "location")
# Location-based attention scores positions, not states: W_a has one row per source position, so a
# source may be at most this long (copy's 20 and dates' 18 fit, with room for a longer reversal).
LOCATION_POSITIONS = 64
POSITION_ENCODINGS = ("sinusoidal", "learned", "none")

# Which models a setting means something for (a field's metadata, read by `applies`): a recurrent
# network's or a transformer's, or one cell's (an Elman RNN's activation; an LSTM's peepholes and
# forget bias); and of those, only a model with a decoder (an encoder-decoder's or a pointer
# network's task), or only a recurrent one (a transformer's decoder always attends, and reading the
# source backwards means nothing to it).
RECURRENT = "recurrent"
TRANSFORMER = "transformer"
ELMAN = "rnn"
LSTM = "lstm"
ANY_DECODER = "any decoder"
RECURRENT_DECODER = "recurrent decoder"
# What part of a recurrent network a setting describes (a field's metadata, read by `fields_of`):
# the cell's kind, a variant of one cell written out (its own loop), the network's shape, how its
# weights start, its regularisation between layers, its decoder. A comparison that swaps the cell
# keeps the shape, start and decoder, and leaves the variants at their defaults (the textbook cells).
CELL, VARIANT, SHAPE, START, REGULARISATION, DECODER = "cell", "variant", "shape", "start", "regularisation", "decoder"


def setting(default, applies_to: str | None = None, part: str | None = None):
    """A config field with the models it applies to (None: every model) and, for a recurrent
    network's, the part of it it describes, in its metadata."""
    return field(default=default, metadata={"applies_to": applies_to, "part": part})


def applies(config_field: Field, arch: str, decodes: bool) -> bool:
    """Whether a ModelConfig or TrainConfig field means something for a model of `arch` on a task
    that decodes or not (a link names it, a form shows it; otherwise it keeps its default)."""
    family = TRANSFORMER if arch == TRANSFORMER else RECURRENT
    return {
        None: True,
        RECURRENT: family == RECURRENT,
        TRANSFORMER: family == TRANSFORMER,
        ELMAN: arch == ELMAN,
        LSTM: arch == LSTM,
        ANY_DECODER: decodes,
        RECURRENT_DECODER: decodes and family == RECURRENT,
    }[config_field.metadata.get("applies_to")]


def fields_of(*parts: str, every_cell: bool = False) -> tuple[str, ...]:
    """The ModelConfig fields that describe these parts of a recurrent network, in the config's
    order; with every_cell, only those that every recurrent cell has (not an LSTM's forget bias)."""
    return tuple(f.name for f in fields(ModelConfig) if f.metadata.get("part") in parts
                 and not (every_cell and f.metadata.get("applies_to") in (ELMAN, LSTM)))


MAX_HIDDEN = 1024
MAX_LAYERS = 8
MAX_EMBEDDING = 512


def check_int(name: str, value, low: int, high: int) -> None:
    """A whole number in [low, high], with a message naming the field and the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")


def check_float(name: str, value, low: float, high: float, *, low_open: bool = False) -> None:
    """A finite number in [low, high] (or (low, high] with low_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    too_low = value <= low if low_open else value < low
    if too_low or value > high:
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must be in {bracket}{low}, {high}], got {value}")


def check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def from_known_fields(cls, data: dict):
    """Build a config dataclass from a dict (a checkpoint, a link), naming any unknown field."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}.from_dict takes a dict of its fields, e.g. {cls.__name__}().to_dict(); "
                        f"got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}; known: {sorted(known)}")
    return cls(**data)


@dataclass(frozen=True)
class ModelConfig:
    """A recurrent network (cell, size, depth, direction, how its weights start) or a transformer.

    arch            "rnn" (Elman), "lstm", "gru", or "transformer"
    activation      RNN only: "tanh", "relu", "sigmoid" or "linear"
    peephole        LSTM only: gates also see the cell state (Gers & Schmidhuber 2000)
    layer_norm      recurrent cells: normalise each gate's input and recurrent pre-activations
                    separately, per sample over its H units, with learned gains (Ba, Kiros & Hinton
                    2016; the LSTM also normalises c_t inside tanh; cells.EQUATIONS["layer_norm"])
    zoneout         recurrent cells: in training each unit of h_t (and of the LSTM's c_t, at the
                    same rate) keeps its previous value with this probability; evaluation uses the
                    expectation (Krueger et al. 2017; cells.EQUATIONS["zoneout"]). 0 to 0.9
    embedding_dim   size of the token embedding, used when the task's inputs are tokens
    dropout         between stacked layers, as nn.LSTM applies it (training only)
    init            "default" (PyTorch's uniform), "orthogonal" W_hh, "identity" W_hh with zero
                    bias (IRNN, Le et al. 2015), or "scaled": W_hh rescaled to `spectral_radius`
    spectral_radius init="scaled" only, and required there: the largest |eigenvalue| of every
                    W_hh (or gate block)
    forget_bias     LSTM only: initial value of the forget-gate bias (b_if + b_hf); None keeps
                    PyTorch's default. 1.0 is the common choice (Jozefowicz et al. 2015).
    attention       recurrent encoder-decoder only: the score function of its attention over the
                    encoder's states, "dot", "general", "additive", "scaled_dot", "cosine" or
                    "location" (which reads no encoder state, and so scores at most
                    LOCATION_POSITIONS = 64 source positions); None = no attention, the context is
                    the encoder's final state alone. A pointer network (a pointer task) points
                    with this score, and needs one.
    reverse_source  encoder-decoder only: the encoder reads the source backwards (Sutskever et
                    al. 2014), which puts the first source tokens next to the first target tokens

    A transformer (Vaswani et al. 2017) reads hidden_size as d_model (as Hugging Face's configs
    do) and num_layers as its blocks per stack; tokens embed straight to d_model, so embedding_dim
    is not used. bidirectional=True lets every position attend to both sides (an encoder, BERT);
    False masks the future (a decoder, GPT). An encoder-decoder's encoder always sees both sides
    and its decoder never sees the future. dropout acts on every sublayer's output.
    num_heads       transformer only: attention heads per layer; must divide hidden_size
    dim_feedforward transformer only: width of the position-wise feed-forward layer; None = 4 x
                    hidden_size (Vaswani et al.'s 2048 for d_model=512)
    position_encoding transformer only: "sinusoidal" (fixed, engine.positional_encoding),
                    "learned" (one trained vector per position, up to 2000 positions), or "none"
                    (no position signal: self-attention then sees a bag of tokens, the
                    positional-encoding lesson's control)
    attention_scale transformer only: divide the attention logits by sqrt(d_k), as Vaswani et al.
                    do; False drops the division (the "why sqrt(d_k)" experiment: the logits'
                    spread grows like sqrt(d_k), the softmax saturates and its gradient dies)
    """

    arch: str = setting("lstm", part=CELL)
    hidden_size: int = setting(64, part=SHAPE)
    num_layers: int = setting(1, part=SHAPE)
    bidirectional: bool = setting(False, part=SHAPE)
    activation: str = setting("tanh", ELMAN, CELL)  # a GRU's and an LSTM's candidate is tanh
    peephole: bool = setting(False, LSTM, VARIANT)
    layer_norm: bool = setting(False, RECURRENT, VARIANT)
    zoneout: float = setting(0.0, RECURRENT, VARIANT)
    embedding_dim: int = setting(16, RECURRENT, SHAPE)
    dropout: float = setting(0.0, part=REGULARISATION)
    init: str = setting("default", RECURRENT, START)
    spectral_radius: float | None = setting(None, RECURRENT, START)
    forget_bias: float | None = setting(None, LSTM, START)
    attention: str | None = setting(None, RECURRENT_DECODER, DECODER)
    reverse_source: bool = setting(False, RECURRENT_DECODER, DECODER)
    num_heads: int = setting(1, TRANSFORMER)
    dim_feedforward: int | None = setting(None, TRANSFORMER)
    position_encoding: str = setting("sinusoidal", TRANSFORMER)
    attention_scale: bool = setting(True, TRANSFORMER)

    def __post_init__(self) -> None:
        check_choice("arch", self.arch, MODEL_ARCHS)
        check_int("hidden_size", self.hidden_size, 1, MAX_HIDDEN)
        check_int("num_layers", self.num_layers, 1, MAX_LAYERS)
        if not isinstance(self.bidirectional, bool):
            raise ValueError(f"bidirectional must be True or False, got {self.bidirectional!r}")
        check_choice("activation", self.activation, ACTIVATIONS)
        if self.activation != "tanh" and self.arch != "rnn":
            raise ValueError(
                f"activation={self.activation!r} applies to arch='rnn' only; "
                f"{self.arch.upper()} gates fix their own nonlinearities. Use activation='tanh'."
            )
        if self.peephole and self.arch != "lstm":
            raise ValueError("peephole connections exist only for arch='lstm'; set peephole=False")
        self.check_training_strategies()
        check_int("embedding_dim", self.embedding_dim, 1, MAX_EMBEDDING)
        check_float("dropout", self.dropout, 0.0, 0.9)
        if self.dropout > 0 and self.num_layers == 1 and self.arch != "transformer":
            raise ValueError("dropout acts between stacked layers; set num_layers >= 2 or dropout=0")
        check_choice("init", self.init, INITS)
        if (self.init == "scaled") != (self.spectral_radius is not None):
            raise ValueError(
                "spectral_radius goes with init='scaled' (and init='scaled' needs one): set both, "
                "e.g. init='scaled', spectral_radius=1.1, or neither"
            )
        if self.spectral_radius is not None:
            check_float("spectral_radius", self.spectral_radius, 0.0, 10.0, low_open=True)
        if self.forget_bias is not None:
            if self.arch != "lstm":
                raise ValueError("forget_bias applies to arch='lstm' only; leave it None")
            check_float("forget_bias", self.forget_bias, -10.0, 10.0)
        self.check_attention()

    def check_training_strategies(self) -> None:
        """layer_norm and zoneout: recurrent cells only."""
        if not isinstance(self.layer_norm, bool):
            raise ValueError(f"layer_norm must be True or False, got {self.layer_norm!r}")
        check_float("zoneout", self.zoneout, 0.0, 0.9)
        if self.arch == "transformer" and self.layer_norm:
            raise ValueError("layer_norm normalises a recurrent cell's pre-activations; a transformer already "
                             "normalises every sublayer; set layer_norm=False")
        if self.arch == "transformer" and self.zoneout:
            raise ValueError("zoneout keeps a recurrent state's previous values, and a transformer has no "
                             "recurrent state; set zoneout=0 (dropout regularises a transformer)")

    def check_attention(self) -> None:
        """The encoder-decoder's attention and the transformer's own fields."""
        if self.attention is not None:
            check_choice("attention", self.attention, SCORES)
        if not isinstance(self.reverse_source, bool):
            raise ValueError(f"reverse_source must be True or False, got {self.reverse_source!r}")
        check_int("num_heads", self.num_heads, 1, MAX_HIDDEN)
        if self.dim_feedforward is not None:
            check_int("dim_feedforward", self.dim_feedforward, 1, 4 * MAX_HIDDEN)
        check_choice("position_encoding", self.position_encoding, POSITION_ENCODINGS)
        if not isinstance(self.attention_scale, bool):
            raise ValueError(f"attention_scale must be True or False, got {self.attention_scale!r}")
        if self.arch != "transformer":
            for own in (f for f in fields(self) if f.metadata.get("applies_to") == TRANSFORMER):
                if getattr(self, own.name) != own.default:  # a recurrent network leaves it at its default
                    raise ValueError(f"{own.name} applies to arch='transformer' only; leave it {own.default!r}")
            return
        if self.hidden_size % self.num_heads:
            divisors = [n for n in range(1, min(self.hidden_size, 16) + 1) if self.hidden_size % n == 0]
            raise ValueError(
                f"num_heads={self.num_heads} does not divide hidden_size (d_model) = {self.hidden_size}: each "
                f"head gets d_model / num_heads dimensions. Use num_heads in {divisors}, or change hidden_size"
            )
        if self.attention is not None:
            raise ValueError(
                "a transformer's attention is always dot-product, softmax(QK^T/sqrt(d_k))V; leave attention=None "
                "(it picks the score of a recurrent encoder-decoder), and set attention_scale=False to drop the "
                "division by sqrt(d_k)"
            )
        if self.init != "default":
            raise ValueError(
                "init shapes the recurrent weights W_hh, which a transformer has none of; use init='default'"
            )

    @property
    def num_directions(self) -> int:
        """Recurrent passes per layer; a transformer's layer is one pass however far it looks."""
        return 2 if self.bidirectional and self.arch != "transformer" else 1

    @property
    def feedforward_size(self) -> int:
        """A transformer's d_ff."""
        return self.dim_feedforward or 4 * self.hidden_size

    @property
    def uses_fused_kernel(self) -> bool:
        """True when nn.RNN / nn.LSTM / nn.GRU compute this cell; False for our written-out loop."""
        if self.layer_norm or self.zoneout > 0:
            return False
        if self.arch == "lstm":
            return not self.peephole
        if self.arch == "rnn":
            return self.activation in ("tanh", "relu")
        return True

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        return from_known_fields(cls, data)
