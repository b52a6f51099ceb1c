"""A plain PyTorch state_dict opened as an Unrolled model, against the PyTorch modules it was
saved from: their outputs, and every layer's h_t (and c_t) replayed by engine.record. Files that
are not such a state_dict are refused with a message, before anything in them is read."""
import io
import json
import os
import pickle
import struct
import zipfile

import pytest
import torch
from safetensors.torch import save
from torch import nn

import engine
from engine import torch_import
from engine.torch_import import open_state_dict, read_vocab, recognise, saved_by_unrolled

MODULES = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


class Student(nn.Module):
    """The network a student trained in PyTorch: nn.Embedding? -> nn.RNN/LSTM/GRU -> nn.Linear?"""

    def __init__(self, arch, hidden=5, layers=1, bidirectional=False, inputs=3, vocab=None, outputs=None,
                 nonlinearity="tanh", mapping="seq2seq"):
        super().__init__()
        self.arch, self.mapping = arch, mapping
        self.embed = nn.Embedding(vocab, inputs) if vocab else None
        extra = dict(nonlinearity=nonlinearity) if arch == "rnn" else {}
        self.rnn = MODULES[arch](inputs, hidden, layers, bidirectional=bidirectional, batch_first=True, **extra)
        self.fc = nn.Linear(hidden * (2 if bidirectional else 1), outputs) if outputs else None

    def forward(self, x):
        out, state = self.rnn(self.embed(x) if self.embed is not None else x)  # [B, T, dirs*H]
        h_n = state[0] if self.arch == "lstm" else state  # [L*dirs, B, H]
        if self.mapping == "seq2vec":  # the usual recipe: both directions' final states
            out = torch.cat([h_n[-2], h_n[-1]], dim=1) if self.rnn.bidirectional else h_n[-1]  # [B, dirs*H]
        return self.fc(out) if self.fc is not None else out


def every_layer(rnn: nn.Module, x_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """h_t (and c_t, an LSTM's) of every layer and direction, [L, dirs, T, H] for sample 0, by
    running each layer as a one-layer PyTorch module of its own: the fused output shows only the
    top layer's. c_t comes from running the module one step at a time."""
    dirs = 2 if rnn.bidirectional else 1
    hs, cs = [], []
    layer_in = x_in[:1]  # [1, T, D]
    for layer in range(rnn.num_layers):
        one = type(rnn)(layer_in.shape[2], rnn.hidden_size, bidirectional=rnn.bidirectional, batch_first=True,
                        **({"nonlinearity": rnn.nonlinearity} if isinstance(rnn, nn.RNN) else {})).double()
        with torch.no_grad():
            for name, p in one.named_parameters():
                p.copy_(getattr(rnn, name.replace("_l0", f"_l{layer}")))
        out, _ = one(layer_in)  # [1, T, dirs*H]
        hs.append(out[0].unflatten(1, (dirs, -1)).transpose(0, 1))  # [dirs, T, H]
        if isinstance(rnn, nn.LSTM):
            cs.append(cell_states(one, layer_in, dirs))
        layer_in = out
    return torch.stack(hs), (torch.stack(cs) if cs else None)


def cell_states(one: nn.LSTM, layer_in: torch.Tensor, dirs: int) -> torch.Tensor:
    """c_t of a one-layer nn.LSTM at every step, each direction run on the prefix (or suffix) it has read."""
    T = layer_in.shape[1]
    rows = []
    for d in range(dirs):
        steps = []
        for t in range(T):
            part = layer_in[:, : t + 1] if d == 0 else layer_in[:, t:]
            steps.append(one(part)[1][1][d, 0])  # c_n of direction d: [H]
        rows.append(torch.stack(steps))  # [T, H]
    return torch.stack(rows)  # [dirs, T, H]


CASES = {
    "lstm-2-layer-bidirectional-embedding-head-seq2vec": dict(
        arch="lstm", layers=2, bidirectional=True, vocab=11, outputs=3, mapping="seq2vec"),
    "lstm-bare-module": dict(arch="lstm", hidden=4, inputs=2),
    "gru-3-layer-bidirectional-head": dict(arch="gru", layers=3, bidirectional=True, outputs=2),
    "gru-embedding-head": dict(arch="gru", vocab=7, outputs=7),
    "rnn-relu-2-layer-bidirectional-head-seq2vec": dict(
        arch="rnn", layers=2, bidirectional=True, outputs=4, nonlinearity="relu", mapping="seq2vec"),
    "rnn-tanh-embedding-no-head-seq2vec": dict(arch="rnn", vocab=6, mapping="seq2vec"),
}


def saved(case: str, seed: int = 0) -> tuple[Student, bytes]:
    """The student's network, and its state_dict as a safetensors file (the bare module's, for one case)."""
    torch.manual_seed(seed)
    student = Student(**CASES[case]).eval()
    weights = student.rnn.state_dict() if case == "lstm-bare-module" else student.state_dict()
    return student, save(weights)


def inputs(student: Student, batch: int = 4, steps: int = 6) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    if student.embed is not None:
        return torch.randint(0, student.embed.num_embeddings, (batch, steps), generator=generator)  # [B, T]
    return torch.randn(batch, steps, student.rnn.input_size, generator=generator)  # [B, T, D]


def opened(case: str):
    student, data = saved(case)
    vocab = tuple(f"token{i}" for i in range(student.embed.num_embeddings)) if student.embed is not None else None
    found, model = open_state_dict(data, student.mapping, activation=getattr(student.rnn, "nonlinearity", "tanh"),
                                   vocab=vocab)
    return student, found, model.eval()


@pytest.mark.parametrize("case", CASES)
def test_the_shapes_say_what_the_network_is(case):
    student, found, model = opened(case)
    rnn = student.rnn
    assert (found.arch, found.hidden_size, found.num_layers, found.bidirectional) == (
        student.arch, rnn.hidden_size, rnn.num_layers, rnn.bidirectional)
    assert found.input_size == rnn.input_size
    assert found.recurrent == ("" if case == "lstm-bare-module" else "rnn.")
    assert found.embedding == ("embed.weight" if student.embed is not None else None)
    assert found.head == ("fc." if student.fc is not None else None)
    assert found.output_size == (student.fc.out_features if student.fc is not None else found.width)
    assert model.cfg.activation == getattr(rnn, "nonlinearity", "tanh")
    assert len(found.lines()) == 3


@pytest.mark.parametrize("case", CASES)
def test_the_opened_model_gives_the_pytorch_modules_outputs(case):
    student, _, model = opened(case)
    x = inputs(student)
    with torch.no_grad():
        torch.testing.assert_close(model(x), student(x), atol=1e-7, rtol=0)


@pytest.mark.parametrize("case", CASES)
def test_the_recording_replays_every_layers_states_as_pytorch_computes_them(case):
    """In float64, so that the comparison measures the replay, not float32 rounding."""
    student, _, model = opened(case)
    student, model = student.double(), model.double()
    x = inputs(student)
    x = x if student.embed is not None else x.double()
    outputs = model.spec.output_size
    y = torch.randint(0, outputs, (len(x),) if student.mapping == "seq2vec" else x.shape[:2])
    rec = engine.record(model, x, y, jacobians=False)
    x_in = student.embed(x) if student.embed is not None else x  # [B, T, D]
    with torch.no_grad():
        hidden, cell = every_layer(student.rnn, x_in)
        torch.testing.assert_close(rec.hidden, hidden, atol=1e-12, rtol=0)
        if cell is not None:
            torch.testing.assert_close(rec.cell, cell, atol=1e-12, rtol=0)
        torch.testing.assert_close(rec.y_hat, student(x)[0], atol=1e-12, rtol=0)


def test_an_rnns_activation_is_asked_and_changes_what_it_computes():
    student, data = saved("rnn-relu-2-layer-bidirectional-head-seq2vec")
    x = inputs(student)
    _, as_tanh = open_state_dict(data, "seq2vec", activation="tanh")
    with torch.no_grad():
        assert not torch.allclose(as_tanh(x), student(x), atol=1e-3)


def test_it_opens_on_a_task_of_its_shape_and_trains_there():
    """An nn.LSTM reading 2 values with a 1-output head, read at the last step: the adding task's shape."""
    torch.manual_seed(0)
    student = Student("lstm", hidden=6, inputs=2, outputs=1, mapping="seq2vec")
    task = engine.make_task("adding", seq_len=8)
    _, model = open_state_dict(save(student.state_dict()), "seq2vec", task=task)
    assert model.spec == task.spec
    x, _ = task.batch(5)
    with torch.no_grad():
        torch.testing.assert_close(model(x), student(x), atol=1e-7, rtol=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-2))
    trainer.step(2)
    assert trainer.steps_done == 2
    with pytest.raises(ValueError, match="the adding task needs one output after the last step, and this head reads "
                                         "every step's state"):
        open_state_dict(save(student.state_dict()), "seq2seq", task=task)
    with pytest.raises(ValueError, match="the parity task gives 1 value per step, and this network reads 2 values"):
        open_state_dict(save(student.state_dict()), "seq2seq", task=engine.make_task("parity"))


# ------------------------------------------------------------------ what is refused, and how


def test_a_module_it_cannot_open_is_named():
    student, _ = saved("gru-3-layer-bidirectional-head")
    weights = student.state_dict() | {"norm.weight": torch.ones(10), "norm.bias": torch.zeros(10)}
    with pytest.raises(ValueError, match=r"norm.bias \[10\], norm.weight \[10\] are in no part this app opens"):
        recognise(save(weights))
    with pytest.raises(ValueError, match="this file holds 2 recurrent modules \\('decoder.', 'encoder.'\\)"):
        recognise(save({f"{stack}.{k}": v.clone() for stack in ("encoder", "decoder")
                        for k, v in student.rnn.state_dict().items()}))
    with pytest.raises(ValueError, match=r"this file holds no nn.RNN, nn.LSTM or nn.GRU .* it holds .*fc.bias \[2\]"):
        recognise(save(student.fc.state_dict(prefix="fc.")))
    two_heads = student.state_dict() | {"fc2.weight": torch.ones(2, 2), "fc2.bias": torch.zeros(2)}
    with pytest.raises(ValueError, match=r"fc.bias \[2\], fc.weight \[2, 10\], fc2.bias \[2\], fc2.weight \[2, 2\]"):
        recognise(save(two_heads))


def test_a_mismatched_or_missing_parameter_is_named_with_what_was_expected():
    student, _ = saved("lstm-2-layer-bidirectional-embedding-head-seq2vec")
    weights = student.state_dict()
    with pytest.raises(ValueError, match=r"rnn.weight_hh_l1_reverse has shape \[20, 4\], and a 2-layer bidirectional "
                                         r"nn.LSTM of 5 units .* needs \[20, 5\] there"):
        recognise(save(weights | {"rnn.weight_hh_l1_reverse": torch.zeros(20, 4)}))
    with pytest.raises(ValueError, match=r"embed.weight has shape \[11, 4\], .* reading 3 numbers per step .* "
                                         r"needs \[11, 3\] there"):
        recognise(save(weights | {"embed.weight": torch.zeros(11, 4)}))  # W_ih reads 3 numbers per step
    with pytest.raises(ValueError, match=r"fc.weight has shape \[3, 5\], .* needs \[3, 10\] there"):
        recognise(save(weights | {"fc.weight": torch.zeros(3, 5)}))
    missing = {k: v for k, v in weights.items() if k != "rnn.bias_hh_l1"}
    with pytest.raises(ValueError, match="rnn.bias_hh_l1 is missing: a 2-layer bidirectional nn.LSTM of 5 units "
                                         "has it"):
        recognise(save(missing))
    with pytest.raises(ValueError, match=r"rnn.weight_hh_l0 has shape \[7, 5\] .* \[4H, H\] in an nn.LSTM"):
        recognise(save(weights | {"rnn.weight_hh_l0": torch.zeros(7, 5)}))
    too_wide = {"weight_ih_l0": [8192, 3], "weight_hh_l0": [8192, 2048], "bias_ih_l0": [8192], "bias_hh_l0": [8192]}
    with pytest.raises(ValueError, match="an nn.LSTM of 2048 units, which this app cannot build: hidden_size must be "
                                         "between 1 and 1024, got 2048"):
        recognise(forged_header(too_wide))


def test_a_vocabulary_that_does_not_match_the_embedding_is_refused():
    student, data = saved("gru-embedding-head")
    with pytest.raises(ValueError, match="the vocabulary has 4 tokens, and the embedding embed.weight has 7 rows"):
        open_state_dict(data, vocab=("a", "b", "c", "d"))
    _, values = saved("gru-3-layer-bidirectional-head")
    with pytest.raises(ValueError, match="this network has no embedding .* so it takes no vocabulary"):
        open_state_dict(values, vocab=("a", "b"))


def test_a_vocabulary_file_has_a_token_per_line_with_line_breaks_written_escaped():
    tokens = ("\n", "\t", "\\", " ", "a", "é", "<pad>")
    written = "\n".join(t.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t") for t in tokens) + "\n"
    assert read_vocab(written.encode()) == tokens
    assert read_vocab(b"a\r\nb\r\n") == ("a", "b")  # a file saved on Windows
    with pytest.raises(ValueError, match="not UTF-8"):
        read_vocab(b"\xff\xfe")
    with pytest.raises(ValueError, match="empty"):
        read_vocab(b"")


@pytest.fixture
def nothing_read(monkeypatch):
    """Fails the test if safetensors is asked to read the tensors of a file that should be refused."""
    def read(_data):
        raise AssertionError("the tensors were read")

    monkeypatch.setattr(torch_import, "load_bytes", read)


def test_empty_and_oversized_files_are_refused_by_their_size(nothing_read):
    with pytest.raises(ValueError, match=r"the file is empty \(0 bytes\)"):
        open_state_dict(b"")
    _, data = saved("lstm-bare-module")
    with pytest.raises(ValueError, match=r"the file is 0.0 MB, over the 0.0 MB this app opens"):
        open_state_dict(data, max_bytes=len(data) - 1)
    assert torch_import.MAX_BYTES < 500 * 2**20  # a 500 MB file is over the default limit


def forged_header(shapes: dict[str, list[int]]) -> bytes:
    """A safetensors header declaring these float32 tensors, and none of their bytes."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 4 * torch.Size(shape).numel()
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text


def test_a_header_declaring_hundreds_of_mb_in_a_few_bytes_is_refused_before_anything_is_read(nothing_read):
    """An 8-layer bidirectional LSTM of 1024 units is within the config's limits, and 736 MB."""
    shapes = {}
    for layer in range(8):
        for s in ("", "_reverse"):
            shapes |= {f"lstm.weight_ih_l{layer}{s}": [4096, 1024 if layer == 0 else 2048],
                       f"lstm.weight_hh_l{layer}{s}": [4096, 1024],
                       f"lstm.bias_ih_l{layer}{s}": [4096], f"lstm.bias_hh_l{layer}{s}": [4096]}
    data = forged_header(shapes)
    assert len(data) < 10_000
    with pytest.raises(ValueError, match=r"the file's header declares 736.5 MB of weights, and 0.0 MB follow it"):
        open_state_dict(data)


def test_a_pickle_or_a_torch_save_zip_is_refused_unread_saying_how_to_save_safetensors(tmp_path, nothing_read):
    student, _ = saved("lstm-bare-module")
    buffer = io.BytesIO()
    torch.save(student.state_dict(), buffer)
    planted = tmp_path / "created by unpickling"
    payload = pickle.dumps(Planting(str(planted)))
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data.pkl", payload)
    for data in (buffer.getvalue(), payload, archive.getvalue()):
        with pytest.raises(ValueError, match=r"this file is a pickle .* refuses it unread, .* "
                                             r"save_file\(model.state_dict\(\), 'model.safetensors'\)"):
            open_state_dict(data)
    assert not planted.exists()
    pickle.loads(payload)  # the payload is live: loading it, as torch.load would, runs its code
    assert planted.exists()


class Planting:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.makedirs, (self.path,)


def test_other_files_are_refused_with_what_they_are_instead(nothing_read):
    with pytest.raises(ValueError, match="this file is not safetensors; save the weights with safetensors instead"):
        open_state_dict(b"hidden_size,64\nlayers,2\n")
    student, data = saved("lstm-bare-module")
    with pytest.raises(ValueError, match="cut short"):
        open_state_dict(data[:12])
    as_ints = {k: (v * 100).long() for k, v in student.rnn.state_dict().items()}
    with pytest.raises(ValueError, match="bias_hh_l0 holds I64 numbers; a network's weights are floating point"):
        open_state_dict(save(as_ints))


def test_weights_that_diverged_are_refused_by_their_name():
    student, _ = saved("lstm-bare-module")
    weights = {k: v.clone() for k, v in student.rnn.state_dict().items()}
    weights["weight_hh_l0"][0, 0] = float("nan")
    with pytest.raises(ValueError, match="weight_hh_l0 holds NaN or infinite values"):
        open_state_dict(save(weights))
    weights = {k: v.double() for k, v in student.rnn.state_dict().items()}
    weights["bias_ih_l0"][0] = 1e300  # finite in float64, infinite in the model's float32
    with pytest.raises(ValueError, match="bias_ih_l0 holds NaN or infinite values"):
        open_state_dict(save(weights))


def test_an_unrolled_checkpoint_is_told_apart_from_a_plain_state_dict():
    model = engine.build_model(engine.ModelConfig(hidden_size=4), engine.make_task("adding", seq_len=5), seed=0)
    assert saved_by_unrolled(engine.to_bytes(model))
    assert not saved_by_unrolled(saved("lstm-bare-module")[1])
