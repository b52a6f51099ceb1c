"""Checkpoints: safetensors + config round trips exactly; anything else (pickles above all) is
refused with a ValueError before a byte of it is interpreted as code."""
import json
import pickle
import random
import struct

import pytest
import torch
from safetensors.torch import load_file, save, save_file

import engine

TEXT = "the quick brown fox jumps over the lazy dog. " * 4

CASES = {
    "lstm": (dict(arch="lstm"), "adding", dict(seq_len=7)),
    "gru": (dict(arch="gru"), "parity", dict(seq_len=7, running=True)),
    "rnn-relu": (dict(arch="rnn", activation="relu"), "adding", dict(seq_len=7)),
    "rnn-sigmoid": (dict(arch="rnn", activation="sigmoid"), "recall", dict(lag=5)),
    "lstm-peephole": (dict(arch="lstm", peephole=True), "adding", dict(seq_len=7)),
    "lstm-bi-2layer": (dict(arch="lstm", num_layers=2, bidirectional=True), "adding", dict(seq_len=7)),
    "gru-bi-2layer-dropout": (dict(arch="gru", num_layers=2, bidirectional=True, dropout=0.3), "sine", dict(seq_len=9)),
    "lstm-forget-bias-orthogonal": (dict(arch="lstm", init="orthogonal", forget_bias=1.0), "sine",
                                    dict(seq_len=9, mode="generate")),
    "charlm-tokens": (dict(arch="lstm", embedding_dim=5), "charlm", dict(seq_len=12, text=TEXT)),
    "sentiment-tokens": (dict(arch="gru", embedding_dim=4, num_layers=2), "sentiment", dict(seq_len=10, max_vocab=50)),
    "sentiment-transformer": (dict(arch="transformer", bidirectional=True), "sentiment",
                              dict(seq_len=10, max_vocab=50)),
    "dates-attention": (dict(arch="lstm", embedding_dim=4, attention="general"), "dates", {}),
}


def trained_looking(case: str, seed: int = 0):
    """A model whose weights are nowhere near any initialisation, and a batch for it."""
    model_kw, task_name, task_kw = CASES[case]
    task = engine.make_task(task_name, seed=seed, **task_kw)
    torch.manual_seed(seed)
    model = engine.build_model(engine.ModelConfig(hidden_size=5, **model_kw), task)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model.eval(), task.batch(6)[0]


def assert_same_model(loaded, model, x):
    assert loaded.cfg == model.cfg
    assert loaded.spec.to_dict() == model.spec.to_dict()  # pad_id too, which == leaves out
    original, restored = model.state_dict(), loaded.state_dict()
    assert list(restored) == list(original)
    for name in original:
        assert torch.equal(restored[name], original[name]), name
    loaded.eval()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))


@pytest.mark.parametrize("case", CASES)
def test_save_load_round_trip(case, tmp_path):
    model, x = trained_looking(case)
    path = engine.save(model, tmp_path / "model.safetensors")
    assert path.exists()
    loaded = engine.load(path)
    assert_same_model(loaded, model, x)
    # The file is plain safetensors: any reader sees the same weights.
    assert set(load_file(path)) == set(model.state_dict())
    # ...and the test can tell models apart: a fresh model of the same config differs.
    torch.manual_seed(123)
    fresh = engine.build_model(model.cfg, model.spec).eval()
    with torch.no_grad():
        assert not torch.equal(fresh(x), model(x))


def test_a_checkpoint_saved_before_pad_id_loads_unmasked_and_still_fits_its_task():
    model, x = trained_looking("dates-attention")
    spec = model.spec.to_dict()
    del spec["pad_id"]
    older = engine.from_bytes(reheader(engine.to_bytes(model), task_spec=spec))
    task = engine.make_task("dates")
    assert older.spec.pad_id is None and older.spec == task.spec
    engine.Trainer(older, task, engine.TrainConfig())  # fits the task as it is now
    y = task.batch(6)[1]
    alpha = engine.record(older, x, y, jacobians=False).attention["alignment"][0]  # [11, 18]
    assert alpha[:, x[0] == task.spec.pad_id].sum() > 0  # attends as it was trained to, padding and all


@pytest.mark.parametrize("case", CASES)
def test_bytes_round_trip(case):
    model, x = trained_looking(case, seed=1)
    data = engine.to_bytes(model)
    assert isinstance(data, bytes)
    assert_same_model(engine.from_bytes(data), model, x)
    # The same weights, the same bytes: safetensors writes its metadata in a random order (#584),
    # which to_bytes sorts; twenty saves give one file.
    assert {engine.to_bytes(model) for _ in range(20)} == {data}


@pytest.mark.parametrize("case", CASES)
def test_weights_stored_in_float16_load_as_float32_rounded_once(case):
    """to_bytes(model, torch.float16): half the weights' bytes; from_bytes gives a float32 model whose every
    weight is the saved one rounded to float16 (the translator's card scores exactly that model)."""
    model, _ = trained_looking(case, seed=1)
    half, full = engine.to_bytes(model, torch.float16), engine.to_bytes(model)
    weights = sum(p.numel() for p in model.parameters())
    assert len(full) - len(half) >= 2 * weights - 64  # the header's dtypes differ by a few bytes
    loaded = engine.from_bytes(half)
    for (name, original), (_, read) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert read.dtype == torch.float32, name
        assert torch.equal(read, original.half().float()), name


def test_round_trip_whatever_the_header_length():
    # The first byte of a safetensors file is the low byte of its header length; for some models
    # it is 0x80, the first byte of a pickle. Those must load like any other. The task's name
    # travels in the header, so names 0 to 255 characters longer take the header length through
    # a whole cycle of its low byte, whatever fields the configs gain.
    task = engine.make_task("adding", seq_len=5)
    x = task.batch(2)[0]
    looks_like_pickle = 0
    for extra in range(256):
        spec = engine.TaskSpec(**{**task.spec.to_dict(), "name": "adding" + "_" * extra})
        torch.manual_seed(extra)
        arch = ("rnn", "lstm", "gru")[extra % 3]
        model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=3), spec).eval()
        data = engine.to_bytes(model)
        if data[:1] == b"\x80" or data[:2] == b"PK":
            looks_like_pickle += 1
            assert_same_model(engine.from_bytes(data), model, x)
    assert looks_like_pickle >= 3  # the sweep did cover the case


# ---------------------------------------------------------------- pickles are never read


def small_model():
    task = engine.make_task("adding", seq_len=5)
    torch.manual_seed(0)
    return engine.build_model(engine.ModelConfig(arch="gru", hidden_size=3), task)


@pytest.mark.parametrize("how", ["state_dict", "module", "legacy"])
def test_torch_save_file_is_refused_as_pickle(how, tmp_path):
    model = small_model()
    path = tmp_path / "model.pt"
    if how == "state_dict":
        torch.save(model.state_dict(), path)
    elif how == "module":
        torch.save(model, path)
    else:
        torch.save(model.state_dict(), path, _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="pickle") as info:
        engine.load(path)
    assert ".safetensors" in str(info.value)


class CreatesFile:
    """Unpickling this opens (and so creates) `path`: a stand-in for arbitrary code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_the_malicious_pickle_does_run_when_unpickled(tmp_path):
    marker = tmp_path / "control"
    handle = pickle.loads(pickle.dumps(CreatesFile(marker)))  # noqa: S301 - proving the payload is live
    handle.close()
    assert marker.exists()


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_malicious_pickle_is_refused_without_running(protocol, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.safetensors"
    path.write_bytes(pickle.dumps(CreatesFile(marker), protocol=protocol))
    with pytest.raises(ValueError) as info:
        engine.load(path)
    message = str(info.value)
    assert "pickle" in message if protocol >= 2 else ".safetensors" in message
    with pytest.raises(ValueError):
        engine.from_bytes(path.read_bytes())
    assert not marker.exists()


def test_malicious_torch_save_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pth"
    torch.save({"state": CreatesFile(marker)}, path)
    with pytest.raises(ValueError, match="pickle"):
        engine.load(path)
    assert not marker.exists()


# ---------------------------------------------------------------- other files that are not checkpoints


def test_random_bytes_are_refused(tmp_path):
    data = random.Random(0).randbytes(4096)
    assert data[:1] != b"\x80" and data[:2] != b"PK"
    path = tmp_path / "noise.safetensors"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"not a \.safetensors checkpoint"):
        engine.load(path)


@pytest.mark.parametrize("data", [b"", b"{}", b"\x00" * 9])
def test_empty_or_tiny_file_is_refused(data, tmp_path):
    path = tmp_path / "empty.safetensors"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="too short"):
        engine.load(path)


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_foreign_safetensors_file_is_refused(metadata, tmp_path):
    path = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.zeros(3, 4), "bias": torch.ones(3)}, path, metadata=metadata)
    with pytest.raises(ValueError, match="not saved by Unrolled"):
        engine.load(path)


def raw_safetensors(header: dict) -> bytes:
    body = json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body


def test_metadata_that_is_not_a_dict_is_refused():
    with pytest.raises(ValueError, match="not saved by Unrolled"):
        engine.from_bytes(raw_safetensors({"__metadata__": "unrolled-checkpoint-1"}))


def reheader(data: bytes, **changes) -> bytes:
    """The same weights under changed metadata (model_config / task_spec as dicts)."""
    tensors = engine.from_bytes(data).state_dict()
    meta = {k: v for k, v in json.loads(data[8 : 8 + struct.unpack("<Q", data[:8])[0]])["__metadata__"].items()}
    for key, value in changes.items():
        meta[key] = value if isinstance(value, str) else json.dumps(value)
    return save(tensors, metadata=meta)


def test_weights_that_do_not_match_the_config_are_refused():
    model = small_model()
    data = engine.to_bytes(model)
    cfg = model.cfg.to_dict()
    for wrong in ({**cfg, "hidden_size": 4}, {**cfg, "arch": "lstm"}, {**cfg, "num_layers": 2},
                  {**cfg, "bidirectional": True}):
        with pytest.raises(ValueError, match="do not match its config"):
            engine.from_bytes(reheader(data, model_config=wrong))
    spec = model.spec.to_dict()
    with pytest.raises(ValueError, match="do not match its config"):
        engine.from_bytes(reheader(data, task_spec={**spec, "input_size": 3}))


@pytest.mark.parametrize("change", ["missing", "extra", "reshaped"])
def test_tensor_set_that_does_not_match_is_refused(change):
    model = small_model()
    tensors = {k: v.clone() for k, v in model.state_dict().items()}
    if change == "missing":
        del tensors["head.bias"]
    elif change == "extra":
        tensors["head.extra"] = torch.zeros(2)
    else:
        tensors["head.weight"] = tensors["head.weight"].reshape(-1).contiguous()
    meta = {"format": "unrolled-checkpoint-1", "model_config": json.dumps(model.cfg.to_dict()),
            "task_spec": json.dumps(model.spec.to_dict())}
    engine.from_bytes(save(model.state_dict(), metadata=meta))  # the untouched set loads
    with pytest.raises(ValueError, match="do not match its config"):
        engine.from_bytes(save(tensors, metadata=meta))


@pytest.mark.parametrize("changes, fragments", [
    (dict(model_config="{not json"), ["config is damaged"]),
    (dict(task_spec='{"name": "adding"}'), ["config is damaged"]),
    (dict(model_config={"arch": "lstm", "size": 3}), ["unknown ModelConfig fields", "'size'"]),
    (dict(model_config={"arch": "lstm", "hidden_size": 0}), ["hidden_size", "between 1 and"]),
])
def test_damaged_config_is_refused(changes, fragments):
    data = reheader(engine.to_bytes(small_model()), **changes)
    with pytest.raises(ValueError) as info:
        engine.from_bytes(data)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.999])
def test_truncated_checkpoint_is_refused(keep):
    data = engine.to_bytes(small_model())
    with pytest.raises(ValueError, match="cut short"):
        engine.from_bytes(data[: int(len(data) * keep)])


# ---------------------------------------------------------------- weights no model should hold


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused_naming_the_parameter(bad, tmp_path):
    model = small_model()
    with torch.no_grad():
        model.rnn.weight_hh_l0[1, 2] = bad
    path = engine.save(model, tmp_path / "diverged.safetensors")
    for load in (lambda: engine.load(path), lambda: engine.from_bytes(path.read_bytes())):
        with pytest.raises(ValueError, match=r"rnn\.weight_hh_l0 holds 1 NaN or infinite values"):
            load()


def test_a_float64_weight_beyond_float32_range_is_refused_as_it_would_load():
    model = small_model()
    tensors = {k: v.double() for k, v in model.state_dict().items()}
    tensors["head.weight"][0, 0] = 1e300  # finite in the file, inf once the model holds it
    assert torch.isfinite(tensors["head.weight"]).all()
    data = forge(engine.to_bytes(model), {})  # the header, as Unrolled writes it
    meta = header_of(data)["__metadata__"]
    with pytest.raises(ValueError, match=r"head\.weight holds 1 NaN or infinite"):
        engine.from_bytes(save(tensors, metadata=meta))


# ---------------------------------------------------------------- forged headers


def header_of(data: bytes) -> dict:
    return json.loads(data[8 : 8 + struct.unpack("<Q", data[:8])[0]])


def forge(data: bytes, metadata_changes: dict, **tensor_changes) -> bytes:
    """The same tensor bytes under a rewritten header: metadata values may be any JSON (a
    forger is not bound to safetensors' str -> str), and tensor entries may be changed."""
    header = header_of(data)
    body = data[8 + struct.unpack("<Q", data[:8])[0] :]
    header["__metadata__"] = {**header["__metadata__"], **metadata_changes}
    for name, entry in tensor_changes.items():
        header[name] = {**header[name], **entry}
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


FORGERIES = {"list": [1, "a"], "dict": {"a": 1}, "huge int": 10**400, "string": "forged", "null": None}


def sentiment_model():
    task = engine.make_task("sentiment", seq_len=6, max_vocab=20)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=3, embedding_dim=2), task)
    model.vocab = task.vocab  # as build_model sets it (for the file to carry one)
    return model


@pytest.mark.parametrize("forged", FORGERIES, ids=list(FORGERIES))
@pytest.mark.parametrize("key", ["model_config", "task_spec"])
def test_every_forged_config_field_gets_a_value_error_or_loads_as_written(key, forged):
    """A field holding a value of the wrong type gets a ValueError, never a TypeError or an
    AttributeError; a forgery that happens to be a legal value (null for an optional field,
    any text for the task's name) loads with that value."""
    model = sentiment_model()
    data = engine.to_bytes(model)
    fields = model.cfg.to_dict() if key == "model_config" else model.spec.to_dict()
    value = FORGERIES[forged]
    for field in fields:
        forgery = forge(data, {key: json.dumps({**fields, field: value})})
        try:
            loaded = engine.from_bytes(forgery)
        except ValueError as err:
            assert str(err), field
            continue
        assert forged in ("string", "null"), f"{field}={value!r} loaded"
        restored = loaded.cfg.to_dict() if key == "model_config" else loaded.spec.to_dict()
        assert restored[field] == value, field


@pytest.mark.parametrize("forged", [*FORGERIES.values(), [1, 2], ["a"] * 3, "[1", "x" * 2000],
                         ids=[*FORGERIES, "ints", "too few", "not json", "long entries"])
def test_a_forged_vocabulary_gets_a_value_error(forged):
    model = sentiment_model()
    data = engine.to_bytes(model)
    vocab = json.dumps(forged) if not isinstance(forged, str) or forged == "forged" else forged
    if forged is None:
        assert engine.from_bytes(forge(data, {"vocab": vocab})).vocab is None  # as if saved without one
        return
    if forged == "x" * 2000:
        vocab = json.dumps(["x" * 2000] * len(model.vocab))  # entries no vocabulary has
    with pytest.raises(ValueError, match="vocabulary"):
        engine.from_bytes(forge(data, {"vocab": vocab}))


@pytest.mark.parametrize("key", ["format", "model_config", "task_spec"])
@pytest.mark.parametrize("forged", [*FORGERIES.values(), "[" * 100_000 + "]" * 100_000], ids=[*FORGERIES, "nested"])
def test_metadata_entries_of_any_json_type_get_a_value_error(key, forged):
    data = forge(engine.to_bytes(small_model()), {key: forged})
    with pytest.raises(ValueError):
        engine.from_bytes(data)


@pytest.mark.parametrize("forged", FORGERIES.values(), ids=list(FORGERIES))
@pytest.mark.parametrize("entry", ["dtype", "shape", "data_offsets"])
def test_forged_tensor_entries_get_a_value_error(entry, forged):
    data = forge(engine.to_bytes(small_model()), {}, **{"head.weight": {entry: forged}})
    with pytest.raises(ValueError):
        engine.from_bytes(data)


def test_a_deeply_nested_header_gets_a_value_error():
    body = ('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}").encode()
    with pytest.raises(ValueError, match="damaged header"):
        engine.from_bytes(struct.pack("<Q", len(body)) + body)
