"""What every task is: a batch maker that knows its loss, its metric, the model shape it needs,
and the settings (its lesson preset) under which it teaches what it is there to teach."""
from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor

from ..config import ModelConfig, check_choice, check_int
from ..losses import LOSSES, METRIC_NAMES, compute_loss, compute_metric
from ..train_config import TrainConfig
from ..vocab import vocab_mismatch
from .features import symbol_features, value_features

MAPPINGS = ("seq2vec", "seq2seq", "vec2seq", "encdec", "pointer")
# The mappings whose model writes its output one step at a time, reading back what it wrote
# (engine.contract.Decoder: start/step, greedy decoding, scheduled sampling, beam search).
DECODERS = ("encdec", "pointer")
INPUT_KINDS = ("values", "tokens")
MAX_SEQ_LEN = 2000
# One batch's x and y, in bytes, found from the task's sizes before anything is drawn. In range,
# recall at lag 1999 over 128 symbols is 1 MB a sample, so batch(100_000) asked for 102.4 GB of x
# and y, and 204.8 GB more for the int64 one-hot it is drawn through; 256 MB keeps a batch's peak
# (at most three times its x and y) under 1 GB.
MAX_BATCH_BYTES = 2**28
BYTES = {"values": 4, "tokens": 8, "mse": 4, "ce": 8}  # float32 values, int64 token ids and classes


@dataclass(frozen=True)
class TaskSpec:
    """The shape of model a task needs. Saved with every checkpoint so the model can be rebuilt.

    mapping      "seq2vec" (one output after the last step), "seq2seq" (one output per step,
                 aligned with the input), "vec2seq" (one input vector, a sequence out) or
                 "encdec" (encoder-decoder: a token sequence in, another of its own length out)
                 or "pointer" (a sequence in, a sequence of its own positions out: a pointer
                 network's, Vinyals et al. 2015. Its classes are <sos>, <eos> and one per input
                 position, class 2+j pointing at input j, so output_size = positions + 2)
    input_kind   "values" (x is float [B, T, input_size]) or "tokens" (x is int [B, T])
    input_size   features per step, or the vocabulary size for tokens
    output_size  values per output, or classes
    loss         "mse" or "ce"
    out_len      vec2seq, encdec and pointer: how many steps the output has (encdec and pointer:
                 at most)
    pad_id       tokens only: the input token that pads a sequence to its length, which no
                 attention looks at; None = the inputs are never padded. Left out of equality
                 (and so of the check that a model fits its task): a checkpoint saved before the
                 field existed loads with None and still fits, its attention unmasked as trained.
    """

    name: str
    mapping: str
    input_kind: str
    input_size: int
    output_size: int
    loss: str
    out_len: int = 0
    pad_id: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_choice("mapping", self.mapping, MAPPINGS)
        check_choice("input_kind", self.input_kind, INPUT_KINDS)
        check_int("input_size", self.input_size, 1, 100_000)
        check_int("output_size", self.output_size, 1, 100_000)
        check_choice("loss", self.loss, LOSSES)
        if self.mapping in ("vec2seq", *DECODERS):
            check_int("out_len", self.out_len, 2, MAX_SEQ_LEN)
        if self.mapping == "encdec" and (self.input_kind != "tokens" or self.loss != "ce"):
            raise ValueError("an encdec task reads tokens and predicts tokens: use input_kind='tokens', loss='ce'")
        if self.mapping == "pointer" and (self.loss != "ce" or self.output_size < 3):
            raise ValueError(
                "a pointer task predicts input positions: use loss='ce' and output_size = positions + 2 "
                "(<sos>, <eos>, then one class per position), at least 3"
            )
        if self.pad_id is not None:
            if self.input_kind != "tokens":
                raise ValueError("pad_id names a padding token, and this task's inputs are values; leave pad_id=None")
            check_int("pad_id", self.pad_id, 0, self.input_size - 1)

    def padded(self, x: Tensor) -> Tensor | None:
        """[B, T] True where the token ids x [B, T] are padding; None when the task never pads."""
        return None if self.pad_id is None else x == self.pad_id

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Preset:
    """The settings under which a task shows its lesson, measured on a 2-core CPU."""

    model: ModelConfig
    train: TrainConfig
    steps: int
    lesson: str


def check_seq_len(seq_len) -> None:
    check_int("seq_len", seq_len, 2, MAX_SEQ_LEN)


def held_bytes(values) -> int:
    """Bytes of the texts (characters) and of the arrays and parsed files (their `nbytes`) among
    `values`, each object counted once (a task keeps its upload under two names)."""
    unique = {id(value): value for value in values}.values()
    return sum(len(v) if isinstance(v, (str, bytes)) else getattr(v, "nbytes", 0) for v in unique)


@dataclass
class Task(ABC):
    """Base class. Subclasses set `spec` in __post_init__, implement `sample`, and declare
    `preset`: the model and training settings under which the task (with its default
    parameters) teaches its lesson, and `help`: what the task asks, in one line. A parameter
    that takes one of a few named values lists them in `choices` (parameter -> values), so a
    form can offer exactly those.

    What the task knows about its samples (how one reads as symbols, what its classes stand
    for, which input features units may follow) is asked of the task, so that a page showing
    a task never has to know which task it shows."""

    preset: ClassVar[Preset]
    help: ClassVar[str]
    symbol_separator: ClassVar[str] = " "  # between symbols written as text: "" for characters
    choices: ClassVar[dict[str, tuple[str, ...]]] = {}  # parameter -> the values it takes; read, never written
    decodes: ClassVar[bool] = False  # its model writes its answer a step at a time (spec.mapping in DECODERS)
    writes_text: ClassVar[bool] = False  # it predicts the next character of a text, so a model of it can write more
    # Its target at every position is the next input: a model reading the whole window (bidirectional) would read
    # each answer (engine.build.check_reads_ahead refuses one).
    predicts_next: ClassVar[bool] = False
    # Its loss and metric read few of a sample's positions (y is IGNORE at the rest): a model that can
    # (TransformerModel.at_targets) computes its output at those only (engine.training.scored).
    scores_targets_only: ClassVar[bool] = False
    typed_example: ClassVar[str | None] = None  # a source a student might type, where the task encodes typed text
    # What the task makes of a public corpus (engine.datasets) it reads: a text as ids, a split's tensors. A
    # task made from a checkpoint's header (from_header) has none of them until it reads its corpus.
    corpus_made: ClassVar[tuple[str, ...]] = ()
    seed: int = 0
    spec: TaskSpec = field(init=False)
    vocab: tuple[str, ...] | None = field(init=False, default=None)  # token -> text, for tokens

    def __post_init__(self) -> None:
        check_int("seed", self.seed, 0, 2**31 - 1)
        self._generator = torch.Generator().manual_seed(self.seed)

    def batch(self, batch_size: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """A fresh batch (x, y), batch first. Uses the task's own seeded generator unless given one."""
        self.check_batch(batch_size)
        return self.sample(batch_size, generator or self._generator)

    def held_bytes(self, beside: tuple = ()) -> int:
        """Bytes of the data this task holds (an uploaded corpus as token ids, a parsed review CSV),
        and of what a caller keeps `beside` it (the upload it was built from), each object once:
        what a server keeping many tasks must count (a review CSV's task held 300 MB)."""
        return held_bytes([*vars(self).values(), *beside])

    def check_batch(self, batch_size: int) -> None:
        """ValueError naming the limit when a batch of this many samples would not fit in
        MAX_BATCH_BYTES; draws nothing, so seeded batches are the same whether it ran or not."""
        check_int("batch_size", batch_size, 1, 100_000)
        size = self.sample_bytes
        if batch_size * size > MAX_BATCH_BYTES:
            raise ValueError(
                f"a batch of {batch_size:,} {self.spec.name} samples would hold {batch_size * size / 1e9:.1f} GB "
                f"({size:,} bytes a sample), over the limit of {MAX_BATCH_BYTES // 2**20} MB a batch; ask for at "
                f"most {MAX_BATCH_BYTES // size:,} samples, or make each smaller (a shorter sequence, fewer symbols)"
            )

    @property
    def source_len(self) -> int:
        """Steps of one sample's input (vec2seq's one vector aside); tasks without a seq_len say theirs."""
        return self.seq_len

    @property
    def sample_bytes(self) -> int:
        """The bytes of one sample's x and y, from the spec and source_len alone (no sample drawn)."""
        spec, steps = self.spec, self.source_len
        width = {"values": spec.input_size, "tokens": 1}[spec.input_kind]  # a token is one id
        x = width if spec.mapping == "vec2seq" else steps * width
        classes_or_values = spec.output_size if spec.loss == "mse" else 1  # a class is one id
        y = {"seq2vec": 1, "seq2seq": steps}.get(spec.mapping, spec.out_len)  # decoders and vec2seq: out_len
        return x * BYTES[spec.input_kind] + y * classes_or_values * BYTES[spec.loss]

    @abstractmethod
    def sample(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """Draw a batch from `generator`; the task's data lives here."""

    def cut(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """A batch as a training step computes it: as drawn, or (a task whose samples are padded to its
        longest, TranslateTask) cut to the batch's own longest, which changes no loss or gradient."""
        return x, y

    def loss(self, y_hat: Tensor, y: Tensor) -> Tensor:
        return compute_loss(self.spec.loss, y_hat, y)

    def metric(self, y_hat: Tensor, y: Tensor) -> float:
        return compute_metric(self.spec.loss, y_hat, y)

    @property
    def baseline_loss(self) -> float | None:
        """The loss of the best guess that ignores the input, where it has a closed form: the
        line a model must get below to have learned anything."""
        return None

    @property
    def baseline_metric(self) -> tuple[str, float] | None:
        """(what, value): the held-out metric of a simpler model on the same split, the mark a
        sequence model must beat to show what order adds; None where the task has none."""
        return None

    @property
    def metric_name(self) -> str:
        return METRIC_NAMES[self.spec.loss]

    # ------------------------------------------------------------ how a sample reads

    def symbols_of(self, x: Tensor) -> list[str] | None:
        """One sample's input x (one row of a batch: [T] token ids) as the task's own symbols,
        one per step; None when the inputs are values, which have no symbols."""
        if self.spec.input_kind != "tokens" or self.vocab is None:
            return None
        return [self.vocab[i] for i in x.tolist()]  # [T]

    @property
    def pad_symbol(self) -> str | None:
        """The symbol that pads a sequence to its length (a step that is no data), or None."""
        return None if self.spec.pad_id is None else self.vocab[self.spec.pad_id]

    @property
    def class_names(self) -> tuple[str, ...] | None:
        """What each output class stands for (spec.output_size of them), or None where the
        classes have no names (and for values)."""
        return None

    def unit_features(self, symbols: list[str] | None, x: Tensor) -> dict[str, np.ndarray]:
        """Features of one sample worth correlating hidden units with, each [T], and the
        position t. `symbols` is symbols_of(x), in the order the network reads them (an encoder
        that reverses its source reads them backwards)."""
        features = self.input_features(symbols, x)
        steps = len(symbols) if symbols is not None else self.steps_of(x)
        return {**features, "position t": np.arange(steps, dtype=float)}

    def input_features(self, symbols: list[str] | None, x: Tensor) -> dict[str, np.ndarray]:
        """unit_features without the position: one indicator per symbol, or the value channels
        and their running sums. Tasks override it with what a reader of their input counts."""
        return value_features(x) if symbols is None else symbol_features(symbols)

    def steps_of(self, x: Tensor) -> int:
        """How many steps the network runs on one sample x: its length, or for vec2seq (one
        vector in) the output's length."""
        return self.spec.out_len if self.spec.mapping == "vec2seq" else len(x)

    @property
    def public_corpus(self) -> str | None:
        """The name of the public corpus (engine.datasets) this task reads as its parameters stand, whose
        source, licence and attribution a page using it names; None for a task of its own data."""
        return None

    # ------------------------------------------------------------ made from a checkpoint's header

    @classmethod
    def from_header(cls, spec: TaskSpec, vocab: tuple[str, ...], target_vocab: tuple[str, ...] | None = None,
                    seed: int = 0, **params) -> Task:
        """The task as a checkpoint's header knows it (its spec and vocabularies) with these parameters,
        before the public corpus it reads is on this machine: a model of it opens, reads what a student
        types and writes, while everything made of the corpus (`corpus_made`: batches, the held-out split,
        a text's ids) is read the first time it is asked for, and until the corpus is here raises
        engine.datasets.CorpusMissing, which names what to download. Only the tasks that read a corpus
        can be made so (they set `corpus_made`)."""
        if not cls.corpus_made:
            raise ValueError(f"the {spec.name} task reads no public corpus: make it with make_task")
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
        unknown = set(params) - set(fields)
        if unknown:
            raise ValueError(f"task {spec.name!r} has no parameter {', '.join(sorted(unknown))}; it takes "
                             f"{', '.join(fields)}")
        task = cls.__new__(cls)
        for name, f in fields.items():
            setattr(task, name, params.get(name, f.default))
        task.seed = seed
        Task.__post_init__(task)  # the seed's checks and generator; the subclass's would read the corpus
        task.spec, task.vocab, task.made_from_header = spec, tuple(vocab), True
        task.known_from_header(target_vocab)
        return task

    def known_from_header(self, target_vocab: tuple[str, ...] | None) -> None:  # noqa: B027 - most work out none
        """What a subclass works out of its vocabularies alone (a word index, the output vocabulary)."""

    def __getattr__(self, name: str):
        # Reached only for an attribute the task does not have: in a task made from a header, what its
        # corpus makes is read now, once (CorpusMissing while the corpus is not on this machine).
        if name in type(self).corpus_made and self.__dict__.get("made_from_header"):
            self.read_corpus()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def read_corpus(self) -> None:
        """Make this header's task whole from its corpus: the task its parameters make, which must have the
        header's spec and vocabularies (a checkpoint is never read with other words than it was trained on)."""
        whole = type(self)(**{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init})
        problem = (vocab_mismatch(self.vocab, whole.vocab)
                   or vocab_mismatch(getattr(self, "target_vocab", None), getattr(whole, "target_vocab", None)))
        if whole.spec != self.spec:
            problem = f"its corpus makes a task shaped {whole.spec}, not the checkpoint's {self.spec}"
        if problem:
            raise ValueError(f"this checkpoint does not fit the {self.spec.name} task its corpus makes: {problem}")
        self.__dict__.update(whole.__dict__, made_from_header=False)
