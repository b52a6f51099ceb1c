"""A plain PyTorch state_dict, saved with safetensors, opened as an Unrolled model: one nn.RNN,
nn.LSTM or nn.GRU (any layers, either direction), an optional nn.Embedding before it and an
optional nn.Linear head after it.

The tensors' names and shapes say what the network is (W_hh has H rows in an RNN, 3H in a GRU,
4H in an LSTM); what they cannot say is asked: the RNN's activation, the mapping (does the head
read every step's state or the last one's) and which token each embedding row stands for. All of
it is decided from the file's JSON header before a tensor is read, so a few forged bytes cannot
make us allocate; a pickle or a torch.save zip is refused unread.

    from engine.torch_import import open_state_dict, recognise
    found = recognise(data)                                   # what the file holds, for a page to show
    found, model = open_state_dict(data, "seq2vec", activation="relu", task=engine.make_task("adding"))
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from torch import nn

from .build import build_model
from .cells import GATE_COUNT, GATE_NAMES
from .checkpoint import FORMAT, MAX_HEADER, check_safetensors, expected_shapes
from .checkpoint_header import MAX_TOKEN_CHARS
from .config import ModelConfig
from .tasks.base import Task, TaskSpec
from .vocab import vocab_mismatch

# The app's largest network (5M parameters, app/session/budget.py) is 40 MB in float64.
MAX_BYTES = 64 * 2**20
MAX_VOCAB_BYTES = 10 * 2**20
DTYPE_BYTES = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}  # the floating-point types a state_dict may hold
MODULES = {"rnn": "nn.RNN", "lstm": "nn.LSTM", "gru": "nn.GRU"}
ARCH_OF_ROWS = {rows: arch for arch, rows in GATE_COUNT.items()}  # W_hh has one H-row block per gate
MAPPINGS = {"seq2seq": "every step's state", "seq2vec": "the last step's state"}  # what the head reads
NEEDS = {"seq2seq": "an output at every step", "seq2vec": "one output after the last step"}  # what a task needs
# nn.LSTM's names, behind whatever prefix the student's module gave it: lstm.weight_ih_l0_reverse
RECURRENT = re.compile(r"(?P<prefix>(?:.*\.)?)(?:weight|bias)_(?:ih|hh)_l(?P<layer>\d+)(?:_reverse)?")
SAVE_SAFETENSORS = (
    "save the weights with safetensors instead: from safetensors.torch import save_file; "
    "save_file(model.state_dict(), 'model.safetensors')"
)
ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\"}  # tokens a line cannot hold as they are


@dataclass(frozen=True)
class Recognised:
    """What a state_dict's shapes say, and where each part sits in the file."""

    arch: str  # "rnn", "lstm" or "gru"
    hidden_size: int
    num_layers: int
    bidirectional: bool
    input_size: int  # what layer 0 reads per step: the embedding's width, or the values' count
    recurrent: str  # the prefix of the recurrent module's names: "" or "lstm."
    embedding: str | None  # the embedding's weight ("embed.weight"), or None: the inputs are values
    vocab_size: int | None  # its rows, one per token id
    head: str | None  # the prefix of the head's weight and bias ("fc."), or None: no head
    output_size: int  # the head's rows, or without one the top layer's states (directions x H)

    @property
    def input_kind(self) -> str:
        return "values" if self.embedding is None else "tokens"

    @property
    def inputs(self) -> int:
        """A task's input_size for it: the token ids' count, or the values per step."""
        return self.input_size if self.embedding is None else self.vocab_size

    @property
    def width(self) -> int:
        """What the top layer hands the head per step: both directions' states."""
        return self.hidden_size * (2 if self.bidirectional else 1)

    def config(self, activation: str = "tanh") -> ModelConfig:
        return ModelConfig(arch=self.arch, hidden_size=self.hidden_size, num_layers=self.num_layers,
                           bidirectional=self.bidirectional, activation=activation,
                           embedding_dim=self.input_size if self.embedding else ModelConfig.embedding_dim)

    def spec(self, mapping: str, name: str = "pytorch", loss: str = "ce") -> TaskSpec:
        """A task shape of its own, for a model that runs on no task of Unrolled's."""
        return TaskSpec(name, mapping, self.input_kind, self.inputs, self.output_size, loss)

    def misfit(self, spec: TaskSpec, mapping: str) -> str | None:
        """Why a task shaped `spec` cannot run this network with its head reading as `mapping`, or None."""
        if mapping not in MAPPINGS:
            return f"the head reads every step (seq2seq) or the last step (seq2vec), not {mapping!r}"
        if spec.mapping not in NEEDS:
            return f"the {spec.name} task needs an encoder and a decoder (two recurrent stacks); this network has one"
        if spec.mapping != mapping:
            return f"the {spec.name} task needs {NEEDS[spec.mapping]}, and this head reads {MAPPINGS[mapping]}"
        if (spec.input_kind, spec.input_size) != (self.input_kind, self.inputs):
            given = reads(spec.input_kind, spec.input_size)
            return f"the {spec.name} task gives {given}, and this network reads {self.reads()}"
        if spec.output_size != self.output_size:
            return f"the {spec.name} task needs {spec.output_size} outputs, and this network gives {self.output_size}"
        return None

    def reads(self) -> str:
        return reads(self.input_kind, self.inputs)

    def title(self) -> str:
        """In words: a 2-layer bidirectional nn.LSTM of 32 units, an nn.GRU of 8 units."""
        layers = f"{self.num_layers}-layer " if self.num_layers > 1 else ""
        both = "bidirectional " if self.bidirectional else ""
        words = f"{layers}{both}{MODULES[self.arch]} of {self.hidden_size} units"
        return f"{'an' if words.startswith('nn.') else 'a'} {words}"

    def lines(self) -> list[str]:
        """What was recognised, part by part, as a page lists it (Markdown)."""
        first = (f"`{self.embedding}`: an nn.Embedding of {self.vocab_size} token ids, each read as "
                 f"{self.input_size} numbers" if self.embedding else f"no embedding: it reads {self.reads()}")
        rows, gates = GATE_COUNT[self.arch], GATE_NAMES[self.arch]
        named = f": the {', '.join(gates[:-1])} and {gates[-1]} gates" if gates else ""
        where = f"`{self.recurrent}weight_ih_l0`, `{self.recurrent}weight_hh_l0`, …"
        size = f"{rows if rows > 1 else ''}H = {rows * self.hidden_size}"
        middle = f"{where}: {self.title()} (W_hh has {size} rows{named})"
        last = (f"`{self.head}weight` and `{self.head}bias`: an nn.Linear head, {self.width} → {self.output_size}"
                if self.head is not None else
                f"no head: its outputs are the top layer's states ({self.width} numbers), read as they are")
        return [first, middle, last]

    def parts(self) -> dict[str, tuple[str, list[int]]]:
        """The Unrolled model's parameter names -> (the file's name for it, the shape it must have);
        the head's only when the file has one. Raises ValueError for a size beyond the config's limits."""
        parts = {}
        for ours, shape in expected_shapes(self.config(), self.spec("seq2seq")).items():
            module, _, leaf = ours.partition(".")
            if module == "rnn":
                parts[ours] = self.recurrent + leaf, shape
            elif module == "embedding":
                parts[ours] = self.embedding, shape
            elif self.head is not None:
                parts[ours] = self.head + leaf, shape
        return parts


def reads(kind: str, size: int) -> str:
    return f"{size} value{'s' if size > 1 else ''} per step" if kind == "values" else f"token ids 0-{size - 1}"


def megabytes(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def header_of(data: bytes, max_bytes: int = MAX_BYTES) -> dict:
    """The safetensors header of `data`, its size checked first; else a ValueError saying what the
    file is instead."""
    if not data:
        raise ValueError("the file is empty (0 bytes); save the state_dict again")
    if len(data) > max_bytes:
        raise ValueError(
            f"the file is {megabytes(len(data))}, over the {megabytes(max_bytes)} this app opens (its largest "
            "network is a few MB); save the state_dict of a smaller network"
        )
    # The safetensors framing comes first, as checkpoint.py explains: a good header's length can
    # begin with the bytes a pickle (0x80) or a zip (PK) begins with.
    header_len = struct.unpack("<Q", data[:8])[0] if len(data) >= 10 else 0
    if not (0 < header_len <= MAX_HEADER and data[8:9] == b"{"):
        if data[:1] == b"\x80" or data[:2] == b"PK":
            raise ValueError(
                "this file is a pickle (torch.save writes a zip of pickles: .pt, .pth, .bin); the app refuses "
                f"it unread, because loading a pickle can run any code. {SAVE_SAFETENSORS.capitalize()}"
            )
        raise ValueError(f"this file is not safetensors; {SAVE_SAFETENSORS}")
    return check_safetensors(data)


def saved_by_unrolled(data: bytes, max_bytes: int = MAX_BYTES) -> bool:
    """Whether `data` is an Unrolled checkpoint (engine.from_bytes opens it) rather than a plain state_dict."""
    metadata = header_of(data, max_bytes).get("__metadata__")
    return isinstance(metadata, dict) and metadata.get("format") == FORMAT


def recognise(data: bytes, max_bytes: int = MAX_BYTES) -> Recognised:
    """What the state_dict in `data` holds, read from its header alone; a ValueError naming the
    tensor that belongs to no network this app opens, is missing, or has the wrong shape."""
    header = header_of(data, max_bytes)
    shapes = shapes_of(header)
    prefix = recurrent_prefix(shapes)
    embedding, head = around_the_recurrent(shapes, prefix)
    w_hh, w_ih = (shapes.get(f"{prefix}{w}_l0") for w in ("weight_hh", "weight_ih"))
    if w_hh is None or w_ih is None:
        missing = f"{prefix}weight_hh_l0" if w_hh is None else f"{prefix}weight_ih_l0"
        raise ValueError(f"{missing} is missing; every nn.RNN, nn.LSTM and nn.GRU has it")
    rows, hidden = w_hh if len(w_hh) == 2 else (0, 0)
    if len(w_ih) != 2 or hidden == 0 or rows % hidden or rows // hidden not in ARCH_OF_ROWS:
        raise ValueError(
            f"{prefix}weight_hh_l0 has shape {list(w_hh)} and {prefix}weight_ih_l0 {list(w_ih)}: W_hh is [H, H] in "
            "an nn.RNN, [3H, H] in an nn.GRU, [4H, H] in an nn.LSTM, and W_ih has as many rows"
        )
    layers = [int(m["layer"]) for name in shapes if (m := RECURRENT.fullmatch(name)) and m["prefix"] == prefix]
    bidirectional = f"{prefix}weight_hh_l0_reverse" in shapes
    found = Recognised(
        arch=ARCH_OF_ROWS[rows // hidden], hidden_size=hidden, num_layers=max(layers) + 1, bidirectional=bidirectional,
        input_size=w_ih[1], recurrent=prefix, embedding=embedding,
        vocab_size=shapes[embedding][0] if embedding else None, head=head,
        output_size=shapes[f"{head}weight"][0] if head is not None else hidden * (2 if bidirectional else 1),
    )
    check_shapes(found, shapes)
    bad = next((name for name in shapes if header[name].get("dtype") not in DTYPE_BYTES), None)
    if bad is not None:
        raise ValueError(f"{bad} holds {header[bad].get('dtype')} numbers; a network's weights are floating point")
    # What the header declares must be what the file holds, before safetensors reads a byte of it.
    declared = sum(math.prod(shape) * DTYPE_BYTES[header[name]["dtype"]] for name, shape in shapes.items())
    held = len(data) - 8 - struct.unpack("<Q", data[:8])[0]
    if declared != held:
        raise ValueError(
            f"the file's header declares {megabytes(declared)} of weights, and {megabytes(held)} follow it: "
            "the file is cut short or damaged; save it again"
        )
    return found


def shapes_of(header: dict) -> dict[str, tuple[int, ...]]:
    """Every tensor's name and shape, once each is a list of sizes."""
    shapes = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
            raise ValueError(f"the file's header describes {name} as {short(entry)}, not a tensor; save it again")
        shapes[name] = tuple(shape)
    if not shapes:
        raise ValueError("the file holds no tensors; save the model's state_dict()")
    return shapes


def recurrent_prefix(shapes: dict[str, tuple[int, ...]]) -> str:
    """Where the one nn.RNN / nn.LSTM / nn.GRU sits: the prefix of its names."""
    prefixes = sorted({m["prefix"] for name in shapes if (m := RECURRENT.fullmatch(name))})
    if not prefixes:
        raise ValueError(
            f"this file holds no nn.RNN, nn.LSTM or nn.GRU (whose weights are named weight_ih_l0, weight_hh_l0, ...): "
            f"it holds {listed(shaped(shapes))}"
        )
    if len(prefixes) > 1:
        raise ValueError(
            f"this file holds {len(prefixes)} recurrent modules ({', '.join(repr(p) for p in prefixes)}); "
            "the app opens a network with one"
        )
    return prefixes[0]


def around_the_recurrent(shapes: dict[str, tuple[int, ...]], prefix: str) -> tuple[str | None, str | None]:
    """The embedding's weight name and the head's prefix (each None when absent): a lone 2-D
    `weight` is an nn.Embedding, a 2-D `weight` with a `bias` an nn.Linear. Anything else there
    is a module this app cannot open, and is named."""
    parts: dict[str, dict[str, tuple[int, ...]]] = {}  # module prefix -> its tensors' leaf names -> shapes
    for name, shape in shapes.items():
        m = RECURRENT.fullmatch(name)
        if m is None or m["prefix"] != prefix:
            leaf = name.rpartition(".")[2]
            parts.setdefault(name.removesuffix(leaf), {})[leaf] = shape
    embeddings = [p for p, leaves in parts.items() if set(leaves) == {"weight"} and len(leaves["weight"]) == 2]
    heads = [p for p, leaves in parts.items() if set(leaves) == {"weight", "bias"} and len(leaves["weight"]) == 2]
    embedding = embeddings[0] if len(embeddings) == 1 else None
    head = heads[0] if len(heads) == 1 else None
    unknown = [f"{p}{leaf}" for p, leaves in parts.items() if p not in (embedding, head) for leaf in leaves]
    if unknown:
        raise ValueError(
            f"{listed(shaped(shapes, unknown))} {'is' if len(unknown) == 1 else 'are'} in no part this app opens: "
            "one nn.RNN, nn.LSTM or nn.GRU, an optional nn.Embedding before it (one weight) and an optional "
            "nn.Linear head after it (a weight and a bias). Save the state_dict of a network made of those alone"
        )
    return (None if embedding is None else f"{embedding}weight"), head


def check_shapes(found: Recognised, shapes: dict[str, tuple[int, ...]]) -> None:
    """ValueError naming the first tensor missing or shaped otherwise than `found` implies."""
    try:
        parts = found.parts()
    except ValueError as err:  # a size beyond the config's limits: hidden_size 4096, 20 layers
        raise ValueError(f"this file holds {found.title()}, which this app cannot build: {err}") from None
    missing = [name for name, _ in parts.values() if name not in shapes]
    if missing:
        verb, them = ("is", "it") if len(missing) == 1 else ("are", "them")
        raise ValueError(f"{listed(missing)} {verb} missing: {found.title()} has {them}")
    for name, shape in parts.values():
        if list(shapes[name]) != shape:
            head = f" and a head of {found.output_size} outputs" if found.head is not None else ""
            raise ValueError(
                f"{name} has shape {list(shapes[name])}, and {found.title()} reading {found.input_size} numbers per "
                f"step{head} needs {shape} there"
            )


def listed(names: list[str]) -> str:
    """A few names for a message, and how many more: "a.weight, b.bias and 5 more"."""
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def shaped(shapes: dict[str, tuple[int, ...]], names: list[str] | None = None) -> list[str]:
    """Names with their shapes: "fc1.weight [8, 64]"."""
    return [f"{name} {list(shapes[name])}" for name in (shapes if names is None else names)]


def short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def open_state_dict(data: bytes, mapping: str = "seq2seq", *, activation: str = "tanh",
                    vocab: tuple[str, ...] | None = None, task: Task | TaskSpec | None = None,
                    max_bytes: int = MAX_BYTES) -> tuple[Recognised, nn.Module]:
    """What `data` holds, and an Unrolled model with its weights.

    mapping     "seq2seq": the head reads every step's state; "seq2vec": the last step's (both
                directions': the forward state after the last step and the backward one after the
                first, torch.cat((h_n[-2], h_n[-1]), 1) in PyTorch's terms)
    activation  an nn.RNN's nonlinearity, "tanh" or "relu"
    vocab       with an embedding: the token of every id, as many as the embedding has rows
    task        the task (or its TaskSpec) the model is to run on: its shape must be the network's;
                None makes one of its own ("pytorch", cross-entropy)
    """
    found = recognise(data, max_bytes)
    check_vocab_size(found, vocab)
    spec = found.spec(mapping) if task is None else task if isinstance(task, TaskSpec) else task.spec
    problem = found.misfit(spec, mapping) or (vocab_mismatch(vocab, task.vocab) if isinstance(task, Task) else None)
    if problem:
        raise ValueError(problem)
    try:
        tensors = load_bytes(data)
    except SafetensorError as err:
        raise ValueError(f"the file's tensors are damaged or cut short ({err}); save it again") from None
    model = build_model(found.config(activation), spec, seed=0)  # seeded: torch's global generator is left alone
    names = {ours: name for ours, (name, _) in found.parts().items()}
    weights = {ours: tensors[name] for ours, name in names.items()}
    if found.head is None:  # the states pass through as they are
        weights["head.weight"] = torch.eye(found.width)  # [width, width]
        weights["head.bias"] = torch.zeros(found.width)  # [width]
    model.load_state_dict(weights)
    held = model.state_dict()
    for ours, name in names.items():  # as float32: a float64 1e300 is finite in the file and inf here
        if not torch.isfinite(held[ours]).all():
            raise ValueError(f"{name} holds NaN or infinite values (as float32): save it from before training diverged")
    model.vocab = None if vocab is None else tuple(vocab)
    return found, model


def check_vocab_size(found: Recognised, vocab: tuple[str, ...] | None) -> None:
    if vocab is None:
        return
    if found.embedding is None:
        raise ValueError(f"this network has no embedding (it reads {found.reads()}), so it takes no vocabulary")
    if len(vocab) != found.vocab_size:
        raise ValueError(
            f"the vocabulary has {len(vocab)} tokens, and the embedding {found.embedding} has {found.vocab_size} "
            "rows, one per token id; give the vocabulary the model was trained with (one token per line, in id order)"
        )


def read_vocab(data: bytes, max_bytes: int = MAX_VOCAB_BYTES) -> tuple[str, ...]:
    """A vocabulary file: one token per line, line 1 being id 0. A token that is a line break, a
    tab or a backslash is written \\n, \\t, \\r or \\\\ (a character model's vocabulary holds them)."""
    if not data:
        raise ValueError("the vocabulary file is empty (0 bytes): write one token per line, in id order")
    if len(data) > max_bytes:
        raise ValueError(f"the vocabulary file is {megabytes(len(data))}, over the {megabytes(max_bytes)} allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the vocabulary file is not UTF-8 text; save it as UTF-8, one token per line") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the file's last line break ends the last token
        lines.pop()
    tokens = tuple(re.sub(r"\\[ntr\\]", lambda m: ESCAPES[m.group()], line.removesuffix("\r")) for line in lines)
    long = next((i for i, token in enumerate(tokens) if len(token) > MAX_TOKEN_CHARS), None)
    if long is not None:
        raise ValueError(f"line {long + 1} of the vocabulary is over {MAX_TOKEN_CHARS} characters: one token per line")
    return tokens
