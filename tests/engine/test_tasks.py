"""Every task's batches: shapes and dtypes match its TaskSpec, and targets match an independent
computation from the inputs (or from the corpus / CSV they were drawn from)."""
import hashlib
import math
import os
import re
from pathlib import Path

import pytest
import torch

import engine
from engine.losses import IGNORE
from engine.tasks.base import DECODERS

# One small instance of every task (and of every mode that changes the mapping).
VARIANTS = {
    "adding": ("adding", dict(seq_len=12)),
    "recall": ("recall", dict(lag=7, symbols=3, distractors=5)),
    "parity": ("parity", dict(seq_len=9, running=False)),
    "parity-running": ("parity", dict(seq_len=9, running=True)),
    "sine-forecast": ("sine", dict(seq_len=30)),
    "sine-generate": ("sine", dict(seq_len=30, mode="generate")),
    "charlm": ("charlm", dict(seq_len=16)),
    "charlm-reviews": ("charlm", dict(seq_len=16, corpus="reviews")),
    "sentiment": ("sentiment", dict(seq_len=20)),
    "char-sentiment": ("char_sentiment", dict(seq_len=30, train_reviews=100)),
    "reverse": ("reverse", dict(seq_len=6, symbols=5)),
    "masked_lm": ("masked_lm", dict(seq_len=10)),
    "word_lm": ("word_lm", dict(seq_len=10)),
}

# What each spec must say, from the task's definition (not read back from the code).
EXPECTED_SPEC = {
    "adding": dict(mapping="seq2vec", input_kind="values", input_size=2, output_size=1, loss="mse"),
    "recall": dict(mapping="seq2vec", input_kind="values", input_size=3 + 5, output_size=3, loss="ce"),
    "parity": dict(mapping="seq2vec", input_kind="values", input_size=1, output_size=2, loss="ce"),
    "parity-running": dict(mapping="seq2seq", input_kind="values", input_size=1, output_size=2, loss="ce"),
    "sine-forecast": dict(mapping="seq2seq", input_kind="values", input_size=1, output_size=1, loss="mse"),
    "sine-generate": dict(mapping="vec2seq", input_kind="values", input_size=3, output_size=1, loss="mse", out_len=30),
    "charlm": dict(mapping="seq2seq", input_kind="tokens", loss="ce"),
    "charlm-reviews": dict(mapping="seq2seq", input_kind="tokens", input_size=25, output_size=25, loss="ce"),
    "sentiment": dict(mapping="seq2vec", input_kind="tokens", output_size=2, loss="ce"),
    "char-sentiment": dict(mapping="seq2vec", input_kind="tokens", input_size=39, output_size=2, loss="ce"),
    "reverse": dict(mapping="encdec", input_kind="tokens", input_size=5, output_size=5 + 2, loss="ce", out_len=7),
    "masked_lm": dict(mapping="seq2seq", input_kind="tokens", input_size=4000, output_size=4000, loss="ce"),
    "word_lm": dict(mapping="seq2seq", input_kind="tokens", input_size=4000, output_size=4000, loss="ce"),
}
EXPECTED_T = {"adding": 12, "recall": 8, "parity": 9, "parity-running": 9, "sine-forecast": 30,
              "sine-generate": 30, "charlm": 16, "charlm-reviews": 16, "sentiment": 20, "char-sentiment": 30,
              "reverse": 6, "masked_lm": 10, "word_lm": 10}


def make(variant: str, seed: int = 0):
    name, params = VARIANTS[variant]
    return engine.make_task(name, seed=seed, **params)


def same(a, b) -> bool:
    return torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_variants_cover_every_task():
    """But the attention tasks, whose shapes test_attention_tasks.py checks."""
    assert {name for name, _ in VARIANTS.values()} == set(engine.TASKS) - set(engine.ATTENTION_TASKS)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_task_says_whether_it_decodes_without_being_built(variant):
    """The app reads `decodes` off the class (a link, the form) instead of building the task."""
    name, _ = VARIANTS[variant]
    assert engine.TASKS[name].decodes == (make(variant).spec.mapping in DECODERS)


def test_only_the_character_language_model_writes_text():
    """The Generate page asks the task, not its name, whether a model of it can write on."""
    assert [name for name, task in engine.TASKS.items() if task.writes_text] == ["charlm"]


@pytest.mark.parametrize("name", engine.ATTENTION_TASKS)
def test_every_attention_task_decodes(name):
    assert engine.TASKS[name].decodes and engine.make_task(name).spec.mapping in DECODERS


# ---------------------------------------------------------------- shapes and dtypes vs spec


@pytest.mark.parametrize("variant", VARIANTS)
def test_spec_says_what_the_task_is(variant):
    spec = make(variant).spec
    assert spec.name == VARIANTS[variant][0]
    for key, value in EXPECTED_SPEC[variant].items():
        assert getattr(spec, key) == value, key


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_shapes_and_dtypes_match_spec(variant):
    task = make(variant)
    spec, B, T = task.spec, 5, EXPECTED_T[variant]
    x, y = task.batch(B)
    if spec.mapping == "vec2seq":
        assert x.shape == (B, spec.input_size) and x.dtype == torch.float32
        assert spec.out_len == T
    elif spec.input_kind == "tokens":
        assert x.shape == (B, T) and x.dtype == torch.long
        assert 0 <= x.min() and x.max() < spec.input_size
    else:
        assert x.shape == (B, T, spec.input_size) and x.dtype == torch.float32
    out_steps = {"seq2vec": (), "seq2seq": (T,), "vec2seq": (T,), "encdec": (spec.out_len,)}[spec.mapping]
    if spec.loss == "ce":
        assert y.shape == (B, *out_steps) and y.dtype == torch.long
        scored = y[y != IGNORE]  # the masked LM scores its chosen words only (IGNORE marks the rest)
        assert len(scored) and 0 <= scored.min() and scored.max() < spec.output_size
    else:
        assert y.shape == (B, *out_steps, spec.output_size) and y.dtype == torch.float32


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_model_built_from_the_spec_fits_the_batch(variant):
    task = make(variant)
    torch.manual_seed(0)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4, embedding_dim=3), task)
    x, y = task.batch(3)
    y_hat = model(x)
    if task.spec.loss == "mse":
        assert y_hat.shape == y.shape
    else:
        assert y_hat.shape == (*y.shape, task.spec.output_size)
    loss = task.loss(y_hat, y)
    assert loss.ndim == 0 and torch.isfinite(loss)


# ---------------------------------------------------------------- adding


@pytest.mark.parametrize("seq_len", [2, 7, 50])
def test_adding_target_is_sum_of_the_two_marked_values(seq_len):
    task = engine.make_task("adding", seq_len=seq_len, seed=1)
    x, y = task.batch(300)
    values, markers = x[..., 0], x[..., 1]
    assert ((values >= 0) & (values < 1)).all()
    assert set(markers.unique().tolist()) <= {0.0, 1.0}
    half = seq_len // 2
    for b in range(len(x)):
        marked = [t for t in range(seq_len) if markers[b, t] == 1.0]
        assert len(marked) == 2
        assert marked[0] < half <= marked[1]  # one in each half
        expected = float(values[b, marked[0]]) + float(values[b, marked[1]])
        assert y[b, 0].item() == pytest.approx(expected, abs=1e-6)


def test_adding_constant_one_scores_one_sixth():
    # U1 + U2 with U ~ U[0, 1) has mean 1 and variance 2/12, so guessing 1.0 gives MSE 1/6.
    task = engine.make_task("adding", seq_len=20, seed=0)
    _, y = task.batch(20000)
    mse = task.loss(torch.ones_like(y), y).item()
    assert mse == pytest.approx(1 / 6, abs=0.01)
    assert ((y - 1.0) ** 2).mean().item() == pytest.approx(mse, rel=1e-5)
    assert abs(task.metric(torch.ones_like(y), y)) < 0.05  # R^2 of the mean predictor is ~0


# ---------------------------------------------------------------- recall


def test_recall_target_is_the_first_symbol_and_the_rest_are_distractors():
    task = engine.make_task("recall", lag=6, symbols=4, distractors=3, seed=2)
    x, y = task.batch(400)
    assert x.shape == (400, 7, 7)
    assert set(x.unique().tolist()) == {0.0, 1.0}
    assert (x.sum(dim=2) == 1).all()  # one-hot at every step
    first = x[:, 0].argmax(dim=1)
    assert torch.equal(y, first)
    assert (first < 4).all()  # step 0 is a signal symbol
    assert (x[:, 1:].argmax(dim=2) >= 4).all()  # steps 1.. are distractors
    assert set(y.tolist()) == {0, 1, 2, 3}  # every signal is drawn
    assert set(x[:, 1:].argmax(dim=2).unique().tolist()) == {4, 5, 6}


# ---------------------------------------------------------------- parity


def parity_of(bits) -> int:
    p = 0
    for bit in bits:
        p ^= int(bit)
    return p


def test_parity_of_the_whole_sequence():
    task = engine.make_task("parity", seq_len=11, running=False, seed=3)
    x, y = task.batch(200)
    assert set(x.unique().tolist()) == {0.0, 1.0}
    assert [parity_of(row) for row in x[..., 0].tolist()] == y.tolist()
    assert 0 < y.float().mean() < 1


def test_running_parity_is_the_parity_so_far():
    task = engine.make_task("parity", seq_len=11, running=True, seed=3)
    x, y = task.batch(100)
    bits = x[..., 0].tolist()
    expected = [[parity_of(row[: t + 1]) for t in range(11)] for row in bits]
    assert y.tolist() == expected


# ---------------------------------------------------------------- sine


def assert_clean_sinusoids(s):
    """Each row is a pure sine: s[t+1] + s[t-1] = 2 cos(w) s[t], with a period of 8 to 40 steps."""
    for row in s.double():
        a, mid, c = row[2:], row[1:-1], row[:-2]
        two_cos = ((a + c) * mid).sum() / (mid * mid).sum()
        assert torch.allclose(a + c, two_cos * mid, atol=1e-5)
        period = 2 * math.pi / math.acos(two_cos.item() / 2)
        assert 8 - 1e-3 <= period <= 40 + 1e-3


def test_sine_forecast_target_is_the_next_input_without_noise():
    task = engine.make_task("sine", seq_len=40, seed=4)
    x, y = task.batch(64)
    assert torch.equal(y[:, :-1], x[:, 1:])
    assert_clean_sinusoids(y[..., 0])


def test_sine_forecast_noise_is_on_the_input_only():
    task = engine.make_task("sine", seq_len=40, noise=0.1, seed=4)
    x, y = task.batch(256)
    residual = x[:, 1:] - y[:, :-1]
    assert residual.std().item() == pytest.approx(0.1, abs=0.01)
    assert residual.mean().abs().item() < 0.01
    assert_clean_sinusoids(y[..., 0])


def test_sine_generate_x_describes_the_wave_in_y():
    task = engine.make_task("sine", seq_len=50, mode="generate", seed=5)
    x, y = task.batch(64)
    period = 40.0 * x[:, 0].double()
    assert ((period >= 8 - 1e-4) & (period <= 40 + 1e-4)).all()
    assert torch.allclose(x[:, 1] ** 2 + x[:, 2] ** 2, torch.ones(64), atol=1e-5)
    phase = torch.atan2(x[:, 1].double(), x[:, 2].double())
    t = torch.arange(50, dtype=torch.float64)
    wave = torch.sin(2 * math.pi * t / period[:, None] + phase[:, None])
    assert torch.allclose(y[..., 0].double(), wave, atol=1e-4)


# ---------------------------------------------------------------- charlm


def test_charlm_default_corpus_windows_are_shifted_substrings():
    task = engine.make_task("charlm", seq_len=40, seed=6)
    corpus = engine.tasks.text.charlm_corpus()
    assert "def " in corpus
    assert task.spec.input_size == task.spec.output_size == len(set(corpus))
    x, y = task.batch(16)
    for xs, ys in zip(x, y):
        text, target = task.decode(xs), task.decode(ys)
        assert len(text) == len(target) == 40
        assert target[:-1] == text[1:]
        assert text + target[-1] in corpus


DATA = Path(engine.__file__).parent / "data"
PROVENANCE = DATA / "charlm_corpus.md"  # where the shipped corpus came from, and its sha256


def test_charlm_default_corpus_is_the_shipped_snapshot_byte_for_byte():
    shipped = (DATA / "charlm_corpus.txt").read_bytes()
    recorded = re.search(r"sha256: `([0-9a-f]{64})`", PROVENANCE.read_text(encoding="utf-8")).group(1)
    assert hashlib.sha256(shipped).hexdigest() == recorded  # the file is the one its provenance describes
    task = engine.make_task("charlm", seq_len=20)
    assert engine.tasks.text.charlm_corpus().encode("utf-8") == shipped
    assert task.vocab == tuple(sorted(set(shipped.decode("utf-8"))))
    assert "".join(task.vocab[i] for i in task.ids.tolist()).encode("utf-8") == shipped


def test_charlm_corpus_does_not_depend_on_the_running_interpreter(monkeypatch, tmp_path):
    here = engine.make_task("charlm", seq_len=20)
    for name in re.findall(r"`Lib/(\w+\.py)`", PROVENANCE.read_text(encoding="utf-8")):
        (tmp_path / name).write_text("print('¿otra versión?')\n", encoding="utf-8")  # another Python's files
    monkeypatch.setattr(os, "__file__", str(tmp_path / "os.py"))
    elsewhere = engine.make_task("charlm", seq_len=20)
    assert elsewhere.vocab == here.vocab and torch.equal(elsewhere.ids, here.ids)


def test_charlm_draws_every_window_of_a_small_text():
    text = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"  # 40 distinct characters, so each window is unique
    task = engine.make_task("charlm", text=text, seq_len=3, seed=0)
    assert task.vocab == tuple(sorted(text)) and task.train_end == 36  # the last 10% held out
    x, y = task.batch(600)
    pairs = {(task.decode(a), task.decode(b)) for a, b in zip(x, y)}
    expected = {(text[s : s + 3], text[s + 1 : s + 4]) for s in range(36 - 3)}
    assert pairs == expected  # including the last training window, whose target ends on character 35


def test_charlm_text_of_the_shortest_length_gives_one_held_out_window():
    """At seq_len 4 a text needs 41 characters: 36 to train on, and its last 5 for the one
    held-out window (4 characters read, each one's next predicted)."""
    text = "".join(chr(ord("a") + i % 26) for i in range(41))
    task = engine.make_task("charlm", text=text, seq_len=4)
    x, y = task.held_out_windows()
    assert [task.decode(r) for r in x] == [text[36:40]] and [task.decode(r) for r in y] == [text[37:41]]
    with pytest.raises(ValueError, match="has 40 characters.* at least 41 characters"):
        engine.make_task("charlm", text=text[:-1], seq_len=4)


def test_charlm_accepts_bytes_like_str():
    text = "héllo wörld, " * 20
    a = engine.make_task("charlm", text=text, seq_len=8, seed=1)
    b = engine.make_task("charlm", text=text.encode("utf-8"), seq_len=8, seed=1)
    bom = engine.make_task("charlm", text=b"\xef\xbb\xbf" + text.encode("utf-8"), seq_len=8, seed=1)
    assert a.vocab == b.vocab == bom.vocab == tuple(sorted(set(text)))
    assert same(a.batch(10), b.batch(10))
    assert torch.equal(a.encode("wörld"), b.encode("wörld"))


# ---------------------------------------------------------------- seeds and generators


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_seed_same_batches_different_seed_different(variant):
    a, b, c = make(variant, seed=3), make(variant, seed=3), make(variant, seed=4)
    a1, a2 = a.batch(16), a.batch(16)
    assert same(a1, b.batch(16)) and same(a2, b.batch(16))
    assert not same(a1, a2)  # the task's generator moves on
    assert not same(a1, c.batch(16))


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_uses_the_given_generator(variant):
    task, fresh = make(variant, seed=0), make(variant, seed=0)
    given = task.batch(16, torch.Generator().manual_seed(12345))
    again = task.batch(16, torch.Generator().manual_seed(12345))
    assert same(given, again)
    assert not same(given, make(variant, seed=0).batch(16))
    assert same(task.batch(16), fresh.batch(16))  # the task's own generator was not used
