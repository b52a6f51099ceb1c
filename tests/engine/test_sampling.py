"""Text generation against references: the model reading the whole text at once (its next-token
scores at every position), or a transformer its last window, the filters written out, and greedy
decoding as a beam of one."""
import math

import pytest
import torch

import engine
from engine.sampling import (
    Reader,
    Sampling,
    context_logits,
    context_window,
    generate,
    log_likelihood,
    next_probabilities,
)
from engine.tasks.base import MAX_SEQ_LEN

from .test_validation import raises_saying

TEXT = "def f(x):\n    return [x, (x + 1)]\n" * 8


def language_model(arch: str, seed: int = 0, **fields):
    task = engine.make_task("charlm", seq_len=16, text=TEXT)
    cfg = engine.ModelConfig(arch=arch, hidden_size=16, embedding_dim=8, num_layers=2, **fields) \
        if arch != "transformer" else engine.ModelConfig(arch="transformer", hidden_size=16, num_heads=2, **fields)
    model = engine.build_model(cfg, task, seed=seed).double()
    engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=8, seed=seed)).step(20)  # not uniform
    return task, model.eval()


MODELS = ["lstm", "gru", "rnn", "transformer"]


@pytest.mark.parametrize("arch", MODELS)
def test_greedy_text_is_the_argmax_the_model_gives_reading_it_all_at_once(arch):
    task, model = language_model(arch)
    text = generate(model, task.encode("def "), 40, Sampling("greedy"))  # [44]
    with torch.no_grad():
        scores = model(text[None, :-1])[0]  # [43, V]: the next token's scores at every position
    assert torch.equal(scores.argmax(-1)[3:], text[4:])  # each chosen token is the argmax after the ones before


@pytest.mark.parametrize("arch", MODELS)
def test_sampled_text_draws_each_token_from_the_whole_texts_distribution(arch):
    """The carried state (or the reread text) gives the same distribution as one pass over the
    text: replaying the draws with the same generator from one-pass probabilities gives the text."""
    task, model = language_model(arch)
    sampling = Sampling("top-p", temperature=0.8, p=0.9)
    text = generate(model, task.encode("re"), 30, sampling, torch.Generator().manual_seed(5))  # [32]
    with torch.no_grad():
        probs = next_probabilities(model(text[None, :-1])[0], sampling)  # [31, V]
    replay = torch.Generator().manual_seed(5)
    for t in range(1, 31):
        token = torch.multinomial(probs[t][None], 1, generator=replay)[0, 0]
        assert token == text[t + 1], t


def test_the_filters_are_temperature_top_k_and_top_p_written_out():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, 0.0]], dtype=torch.float64)
    p = torch.exp(logits / 0.5) / torch.exp(logits / 0.5).sum()
    torch.testing.assert_close(next_probabilities(logits, Sampling("sample", temperature=0.5)), p)
    top2 = next_probabilities(logits, Sampling("top-k", temperature=0.5, k=2))
    torch.testing.assert_close(top2, torch.cat([p[:, :2] / p[:, :2].sum(), torch.zeros(1, 3, dtype=p.dtype)], 1))
    # p sorted: 0.84, 0.11, 0.04, ... : p = 0.9 keeps the two whose mass reaches 0.9 only together
    nucleus = next_probabilities(logits, Sampling("top-p", temperature=0.5, p=0.9))
    assert (nucleus > 0).tolist() == [[True, True, False, False, False]]
    torch.testing.assert_close(nucleus, top2)
    assert (next_probabilities(logits, Sampling("top-p", p=0.01)) > 0).sum() == 1  # the most likely, always


@pytest.mark.parametrize("arch", ["lstm", "transformer"])
def test_a_beam_of_one_is_greedy_and_a_wider_beam_scores_at_least_as_well(arch):
    task, model = language_model(arch)
    prompt = task.encode("de")
    greedy = generate(model, prompt, 12, Sampling("greedy"))
    assert torch.equal(generate(model, prompt, 12, Sampling("beam", width=1)), greedy)
    wide = generate(model, prompt, 12, Sampling("beam", width=6))
    assert log_likelihood(model, wide, 2) >= log_likelihood(model, greedy, 2) - 1e-9


def test_a_beam_finds_the_best_continuation_of_two_tokens_by_brute_force():
    task, model = language_model("gru")
    prompt = task.encode("x")
    V = len(task.vocab)
    best = max(((a, b) for a in range(V) for b in range(V)),
               key=lambda pair: log_likelihood(model, torch.cat([prompt, torch.tensor(pair)]), 1))
    found = generate(model, prompt, 2, Sampling("beam", width=V))  # wide enough to keep every first token
    assert tuple(found[1:].tolist()) == best


def test_generating_leaves_the_model_in_training_mode_and_its_weights_alone():
    task, model = language_model("lstm", dropout=0.3)
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    generate(model, task.encode("d"), 5, Sampling("sample"), torch.Generator().manual_seed(0))
    assert model.training and all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_bad_requests_say_what_to_change():
    task, model = language_model("lstm")
    raises_saying(lambda: generate(model, torch.tensor([], dtype=torch.long), 5, Sampling()), "prompt is empty")
    raises_saying(lambda: Sampling("nucleus"), "greedy, sample, top-k, top-p, beam")
    raises_saying(lambda: Sampling(temperature=0), "temperature must be above 0")
    raises_saying(lambda: Sampling(p=1.5), "p must be in (0, 1]")
    masked = engine.make_task("masked_lm", seq_len=16)  # a language model may read both ways only to fill blanks
    both_ways = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=16, bidirectional=True), masked, seed=0)
    raises_saying(lambda: generate(both_ways, torch.tensor([5]), 5, Sampling()), "reads both ways")
    adding = engine.make_task("adding", seq_len=5)
    regression = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), adding)
    raises_saying(lambda: generate(regression, torch.zeros(3, dtype=torch.long), 5, Sampling()), "language model")
    assert math.isfinite(log_likelihood(model, task.encode("def f"), 1))


# ---------------------------------------------------------------- a transformer's window (issue 30)

WINDOW = 16  # the task's seq_len: the windows language_model's transformers trained on


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_a_transformer_reads_only_its_last_window_however_long_the_text(positions):
    """At each token past its window, the scores the generator acts on are those of the model run
    on the last WINDOW tokens alone (a direct forward), not on the whole text; greedy text is their
    argmax at every step."""
    task, model = language_model("transformer", position_encoding=positions)
    text = generate(model, task.encode("def "), 60, Sampling("greedy"), window=WINDOW)  # [64]: 4x the window
    with torch.no_grad():
        for t in range(4, 64):
            direct = model(text[None, max(0, t - WINDOW) : t])[0, -1]  # [V]: the cropped context, read at once
            assert direct.argmax() == text[t], t
    reader = Reader(model, text[None, :40], window=WINDOW)  # the reader after 40 tokens, then one more
    with torch.no_grad():
        cropped, whole = model(text[None, 40 - WINDOW : 40])[0, -1], model(text[None, :40])[0, -1]  # [V] each
        assert torch.equal(reader.logits[0], cropped) and not torch.allclose(cropped, whole)
        reader.take(text[40:41])
        assert torch.equal(reader.logits[0], model(text[None, 41 - WINDOW : 41])[0, -1])


@pytest.mark.parametrize("arch", ["transformer", "lstm"])
def test_context_logits_are_the_direct_forward_on_each_context(arch):
    """context_logits (what the Generate page plots) at every position: a transformer's on the
    window ending there, a recurrent model's on everything before (one pass, its state)."""
    task, model = language_model(arch)
    text = generate(model, task.encode("re"), 50, Sampling("sample"), torch.Generator().manual_seed(1), WINDOW)
    logits = context_logits(model, text, WINDOW)  # [51, V]
    with torch.no_grad():
        for t in range(51):
            start = max(0, t + 1 - WINDOW) if arch == "transformer" else 0
            torch.testing.assert_close(logits[t], model(text[None, start : t + 1])[0, -1], rtol=1e-12, atol=1e-12)


def test_sampled_text_past_the_window_draws_each_token_from_its_windows_distribution():
    task, model = language_model("transformer")
    sampling = Sampling("top-k", temperature=0.9, k=5)
    text = generate(model, task.encode("de"), 40, sampling, torch.Generator().manual_seed(2), WINDOW)  # [42]
    probs = next_probabilities(context_logits(model, text, WINDOW), sampling)  # [41, V]
    replay = torch.Generator().manual_seed(2)
    for t in range(1, 41):
        assert torch.multinomial(probs[t][None], 1, generator=replay)[0, 0] == text[t + 1], t
    wide = generate(model, task.encode("de"), 30, Sampling("beam", width=4), window=WINDOW)
    greedy = generate(model, task.encode("de"), 30, Sampling("greedy"), window=WINDOW)
    assert log_likelihood(model, wide, 2, WINDOW) >= log_likelihood(model, greedy, 2, WINDOW) - 1e-9


def test_learned_positions_write_past_their_table_reading_its_last_rows():
    """A learned table has MAX_SEQ_LEN rows and nothing past them: reading the whole text raised
    once the text was longer. With no window given, the generator reads the last MAX_SEQ_LEN tokens."""
    task, model = language_model("transformer", position_encoding="learned")
    prompt = task.encode((TEXT * 8)[:MAX_SEQ_LEN - 3])  # [1997]
    text = generate(model, prompt, 8, Sampling("greedy"))  # [2005]
    assert len(text) == MAX_SEQ_LEN + 5
    with torch.no_grad():
        assert model(text[None, -1 - MAX_SEQ_LEN : -1])[0, -1].argmax() == text[-1]
    assert context_window(model) == MAX_SEQ_LEN and context_window(language_model("gru")[1], WINDOW) is None
