"""Checkpoints: safetensors weights with the model's config, its task's shape and its vocabulary
in the file's own JSON header.

Never pickle: a pickle (or torch.save's zip of pickles) can run any code when loaded, so such a
file is recognised by its first bytes and refused before anything in it is read as data.
"""
from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from safetensors.torch import save as save_bytes
from torch import nn

from .arguments import check_kind
from .build import build_model
from .checkpoint_header import read_header, read_vocab
from .config import ModelConfig
from .tasks.base import TaskSpec

FORMAT = "unrolled-checkpoint-1"
MAX_HEADER = 10_000_000


def to_bytes(model: nn.Module, dtype: torch.dtype | None = None) -> bytes:
    """The model as safetensors bytes; its ModelConfig, TaskSpec and vocabulary (`model.vocab`,
    one text per input id, when it has one) travel in the metadata, and so does its output
    vocabulary where it has one of its own (`model.target_vocab`: a translator's French words), so
    that the model reads and writes words without the data it was trained on. `dtype`: the weights
    stored as, say, float16 (half the file; from_bytes reads them back into the model's float32)."""
    tensors = {name: t.detach().to(dtype if dtype is not None and t.is_floating_point() else t.dtype).contiguous()
               for name, t in model.state_dict().items()}
    metadata = {
        "format": FORMAT,
        "model_config": json.dumps(model.cfg.to_dict()),
        "task_spec": json.dumps(model.spec.to_dict()),
    }
    vocab = getattr(model, "vocab", None)
    if vocab is not None:
        metadata["vocab"] = json.dumps(list(vocab))
    target_vocab = getattr(model, "target_vocab", None)
    if target_vocab is not None:
        metadata["target_vocab"] = json.dumps(list(target_vocab))
    return canonical(save_bytes(tensors, metadata=metadata))


def canonical(data: bytes) -> bytes:
    """The same safetensors file with its metadata's keys in sorted order. safetensors writes the
    metadata from a Rust HashMap, in an order that changes from one save to the next
    (safetensors/safetensors#584), so the same weights would not give the same bytes."""
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + length])
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)  # safetensors pads its header to a multiple of 8 bytes
    return struct.pack("<Q", len(text)) + text + data[8 + length :]


def save(model: nn.Module, path) -> Path:
    path = Path(path)
    path.write_bytes(to_bytes(model))
    return path


def check_safetensors(data: bytes) -> dict:
    """The header of a safetensors file, or a ValueError saying what the file is instead."""
    # The safetensors framing (8-byte header length, then "{") is checked before the pickle
    # signatures: its first byte is the low byte of the header length, which is 0x80 (or b"PK"
    # for two bytes) for some perfectly good checkpoints.
    header_len = struct.unpack("<Q", data[:8])[0] if len(data) >= 10 else 0
    if not (0 < header_len <= MAX_HEADER and data[8:9] == b"{"):
        if data[:1] == b"\x80" or data[:2] == b"PK":
            raise ValueError(
                "this file is a pickle (a torch.save / .pt / .pth / .bin file); Unrolled refuses pickles "
                "because loading one can run any code. Save the model as .safetensors (engine.save)."
            )
        if len(data) < 10:
            raise ValueError("this file is too short to be a .safetensors checkpoint")
        raise ValueError("this file is not a .safetensors checkpoint; upload a file saved by Unrolled")
    if header_len > len(data) - 8:
        raise ValueError("this .safetensors file is cut short (incomplete download?); save or download it again")
    try:
        return json.loads(data[8 : 8 + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # RecursionError: forged [[[[...]]]]
        raise ValueError("this .safetensors file has a damaged header; save it again") from None


def config_of(data: bytes) -> tuple[ModelConfig, TaskSpec, tuple[str, ...] | None]:
    """The config, task spec and vocabulary a checkpoint's header gives, checked against the tensors it
    describes, reading no tensor: what a caller prices before from_bytes allocates anything."""
    return header_of(data)[:3]


def target_vocab_of(data: bytes) -> tuple[str, ...] | None:
    """The output vocabulary a checkpoint's header gives, where its model has one of its own (a translator's
    French words; None otherwise, and for a checkpoint saved before they travelled), reading no tensor."""
    return header_of(data)[3]


def header_of(data: bytes) -> tuple[ModelConfig, TaskSpec, tuple[str, ...] | None, tuple[str, ...] | None]:
    """config_of's config, spec and vocabulary, and the output vocabulary (target_vocab_of)."""
    check_kind("data", data, (bytes, bytearray, memoryview), "a checkpoint's bytes, e.g. Path('model.safetensors')"
               ".read_bytes() (engine.load takes a path)")
    header = check_safetensors(bytes(data))
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise ValueError(
            "this .safetensors file was not saved by Unrolled (it has no model config); "
            "upload a model downloaded from Unrolled"
        )
    cfg, spec, vocab = read_header(metadata)
    # The header must describe exactly the tensors the config implies, before anything is
    # allocated: a few hundred forged bytes must not make us build (or read) a huge model.
    described = {k: v for k, v in header.items() if k != "__metadata__"}
    expected = expected_shapes(cfg, spec)
    if set(described) != set(expected) or any(
        not isinstance(v, dict) or v.get("shape") != expected[k] or v.get("dtype") not in FLOAT_DTYPES
        for k, v in described.items()
    ):
        raise ValueError("this checkpoint's weights do not match its config; save it again")
    return cfg, spec, vocab, read_vocab(metadata, spec, "target_vocab")


def from_bytes(data: bytes) -> nn.Module:
    """The model a checkpoint holds, with `model.vocab` its vocabulary (None if it has none) and
    `model.target_vocab` its output vocabulary where it has one of its own, or a ValueError saying
    what is wrong with the file."""
    cfg, spec, vocab, target_vocab = header_of(data)
    try:
        tensors = load_bytes(data)
    except SafetensorError as err:
        raise ValueError(f"this checkpoint's weights are damaged or cut short ({err}); save it again") from None
    model = build_model(cfg, spec)
    model.load_state_dict(tensors)
    check_finite(model)
    model.vocab, model.target_vocab = vocab, target_vocab
    return model


def check_finite(model: nn.Module) -> None:
    """ValueError naming the first weight holding NaN or inf. Checked as the model holds them,
    after any conversion to its dtype: a float64 1e300 is finite in the file and inf in float32.
    Such weights are refused because linear algebra on them (eigvals of W_hh) can crash the
    process, and a model that diverged teaches nothing."""
    for name, t in model.state_dict().items():
        if t.is_floating_point() and not torch.isfinite(t).all():
            bad = (~torch.isfinite(t)).sum().item()
            raise ValueError(
                f"this checkpoint's {name} holds {bad} NaN or infinite values (of {t.numel()}): it was saved "
                "from a model whose training diverged; save one from before it diverged"
            )


FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")


def expected_shapes(cfg: ModelConfig, spec: TaskSpec) -> dict[str, list[int]]:
    """Every tensor name and shape a model of this config has, found without allocating it
    (the meta device; the shapes do not depend on the initialisation)."""
    with torch.device("meta"):
        model = build_model(dataclasses.replace(cfg, init="default", spectral_radius=None), spec)
    return {name: list(t.shape) for name, t in model.state_dict().items()}


def load(path) -> nn.Module:
    return from_bytes(Path(path).read_bytes())
