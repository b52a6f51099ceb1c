"""Forcing a prefix in beam search (engine.beam.forced_search), against references: the unforced
search (forcing greedy decoding's own tokens changes nothing), the model stepped by hand from
the forced prefix, and the prefix's log-probability summed step by step and by teacher forcing.
Every decoder: recurrent encoder-decoders with and without attention (Luong's and Bahdanau's
order), a pointer network and a transformer encoder-decoder."""
import pytest
import torch

import engine
from engine.beam import forced_search
from engine.losses import IGNORE
from engine.seq2seq import EOS, SOS

from .cases import case_id
from .test_validation import raises_saying

CASES = [
    dict(arch="gru"),
    dict(arch="lstm", attention="dot", bidirectional=True),
    dict(arch="lstm", attention="additive"),
    dict(arch="transformer", num_heads=2),
    dict(arch="lstm", attention="additive", pointer=True),
]


def model_for(case, seed=0):
    """An untrained decoder in double precision and one source for it."""
    case = dict(case)
    task = engine.make_task("sort", seq_len=4) if case.pop("pointer", False) else \
        engine.make_task("reverse", seq_len=5, symbols=4)
    cfg = engine.ModelConfig(hidden_size=8, embedding_dim=4, **case)
    model = engine.build_model(cfg, task, seed=seed).double().eval()
    x, _ = task.batch(1, torch.Generator().manual_seed(seed))
    return model, x[0].double() if x.is_floating_point() else x[0]


def by_hand(model, x, prefix):
    """Step the decoder through <sos> and `prefix`, then greedily until <eos> or out_len:
    (tokens, log p of each step's token)."""
    state = model.start(x[None])
    tokens, logps, token = [], [], SOS
    with torch.no_grad():
        while len(tokens) < model.spec.out_len and token != EOS or not tokens:
            logits, state = model.step(torch.tensor([token]), state)  # [1, V]
            logp = logits[0].log_softmax(-1)  # [V]
            token = prefix[len(tokens)] if len(tokens) < len(prefix) else int(logp.argmax())
            tokens.append(token)
            logps.append(logp[token].item())
    return tuple(tokens), logps


def teacher_forced_log_prob(model, x, tokens):
    """log p(tokens | x) from one teacher-forced pass: the sum of each token's log-softmax."""
    y = torch.full((1, model.spec.out_len), IGNORE)
    y[0, : len(tokens)] = torch.tensor(tokens)
    with torch.no_grad():
        logp = model(x[None], y)[0].log_softmax(-1)  # [T_out, V]
    return sum(logp[t, token].item() for t, token in enumerate(tokens))


def other_token(model, x, token):
    """A token to force instead of `token`: neither it, <sos> nor <eos>."""
    V = x.shape[0] + 2 if model.spec.mapping == "pointer" else model.spec.output_size
    return next(t for t in range(2, V) if t != token)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forcing_the_greedy_prefix_is_the_unforced_search(case):
    for seed in range(3):
        model, x = model_for(case, seed)
        greedy = engine.beam_search(model, x, width=1)
        for k in range(len(greedy.best.tokens) + 1):
            beam = forced_search(model, x, greedy.best.tokens[:k], width=1)
            assert beam.steps == greedy.steps and beam.finished == greedy.finished
            assert beam.forced == k


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forcing_another_token_continues_as_the_model_stepped_by_hand(case):
    model, x = model_for(case)
    greedy, _ = by_hand(model, x, ())
    for t in range(min(3, len(greedy))):
        prefix = greedy[:t] + (other_token(model, x, greedy[t]),)
        tokens, logps = by_hand(model, x, prefix)
        beam = forced_search(model, x, prefix, width=1)
        assert beam.best.tokens == tokens and tokens[: t + 1] == prefix
        assert beam.best.score == pytest.approx(sum(logps), abs=1e-9)
        assert [len(step) for step in beam.steps] == [1] * len(tokens)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_prefix_scores_its_log_probability_and_every_candidate_extends_it(case):
    model, x = model_for(case)
    prefix = (3, 2, 3)  # a symbol (or a position) at every step, not what the untrained model would write
    _, logps = by_hand(model, x, prefix)
    beam = forced_search(model, x, prefix, width=3)
    for t in range(3):
        assert [c.tokens for c in beam.steps[t]] == [prefix[: t + 1]]
        assert beam.steps[t][0].score == pytest.approx(sum(logps[: t + 1]), abs=1e-12)
    assert beam.steps[3:] and beam.forced == 3
    for step in beam.steps[3:]:
        assert len(step) == 3  # the beam opens up again after the prefix
        for c in step:
            assert c.tokens[:3] == prefix
            assert c.score == pytest.approx(teacher_forced_log_prob(model, x, c.tokens), abs=1e-9)


def test_a_prefix_ending_with_eos_is_the_one_finished_sequence():
    model, x = model_for(CASES[1])
    beam = forced_search(model, x, (2, EOS), width=4)
    assert len(beam.steps) == 2 and beam.best.tokens == (2, EOS) and len(beam.finished) == 1
    assert beam.best.score == pytest.approx(teacher_forced_log_prob(model, x, (2, EOS)), abs=1e-9)


def test_a_whole_target_forced_leaves_nothing_to_search():
    model, x = model_for(CASES[0])
    prefix = (2, 3, 4, 5, 2, 3)  # out_len = 6, and no <eos>
    beam = forced_search(model, x, prefix, width=5)
    assert [c.tokens for step in beam.steps for c in step] == [prefix[: t + 1] for t in range(6)]
    assert beam.finished == [] and beam.best.tokens == prefix


def test_bad_prefixes_say_what_to_change():
    model, x = model_for(CASES[0])  # 6 target tokens (<sos>, <eos>, 4 symbols), out_len 6
    raises_saying(lambda: forced_search(model, x, (2, 6), 2), "prefix token 1 is 6", "cannot write", "ids 0..5")
    raises_saying(lambda: forced_search(model, x, (-1,), 2), "prefix token 0 is -1", "ids 0..5")
    raises_saying(lambda: forced_search(model, x, (2, 2.0), 2), "prefix token 1 is 2.0")
    raises_saying(lambda: forced_search(model, x, (2,) * 7, 2), "7 tokens", "at most 6")
    raises_saying(lambda: forced_search(model, x, (2, EOS, 3, 4), 2), "prefix token 1 is <eos>", "2 more follow")
    raises_saying(lambda: forced_search(model, x, "23", 2), "sequence of target token ids")
    raises_saying(lambda: forced_search(model, x, (2,), 0), "width", "between 1 and 100")
    pointer, values = model_for(CASES[-1])  # 4 numbers: classes <sos>, <eos> and 4 positions
    raises_saying(lambda: forced_search(pointer, values, (6,), 2), "prefix token 0 is 6", "ids 1..5")
    raises_saying(lambda: forced_search(pointer, values[:3], (5,), 2), "prefix token 0 is 5", "ids 1..4")
    raises_saying(lambda: forced_search(pointer, values, (2, SOS), 2), "prefix token 1 is 0", "ids 1..5")


@pytest.mark.training
def test_a_trained_copier_forced_to_miscopy_writes_the_symbol_it_was_kept_from_next():
    """The copy lesson's model (bidirectional LSTM, dot attention) trained 200 steps on 8 symbols
    copies every held-out symbol. Forced to write the wrong symbol at step t (the next one along,
    at every t < 7, on 50 sources), its next token is most often the symbol it was kept from
    writing, target t, not target t+1: it finds its place in the source by what it has written
    (s_t, which asks the attention, reads y_{t-1}). Measured, seeds 0 / 1 / 2: 75 / 69 / 81% of
    350 forcings write target t next; 38 / 43 / 31% write target t+1 (the two can be the same
    symbol); only 38 / 40 / 28% go on to copy the rest right."""
    task = engine.make_task("copy", seq_len=8)
    model = engine.build_model(task.preset.model, task, seed=0)
    trainer = engine.Trainer(model, task, task.preset.train)
    trainer.step(200)
    assert trainer.evaluate()[1] == 1.0
    x, y = task.batch(50, torch.Generator().manual_seed(1))
    skipped = []
    for source, target in zip(x, y.tolist()):
        right = engine.beam_search(model, source, width=1).best
        assert right.tokens == tuple(target)
        for t in range(7):
            wrong = 2 + (target[t] - 2 + 1) % 8  # the next symbol along
            forced = forced_search(model, source, tuple(target[:t]) + (wrong,), width=1).best
            assert forced.score < right.score
            skipped.append(forced.tokens[t + 1] == target[t])
    assert sum(skipped) / len(skipped) > 0.6  # measured 0.75
