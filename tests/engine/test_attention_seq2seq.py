"""Encoder-decoders with attention, scheduled sampling and beam search, against references:
the step-by-step decoder against the one-call teacher-forced pass, each alignment against the
score of the state the paper says asks (Luong: s_t, Bahdanau: s_{t-1}), recorded gradients
against finite differences, and beam search against greedy decoding and exhaustive search."""
import itertools
import json

import pytest
import safetensors.torch
import torch

import engine
from engine.config import SCORES
from engine.losses import IGNORE, compute_loss
from engine.replay import Taps
from engine.seq2seq import EOS, feed_back, teacher_inputs

from .cases import case_id
from .test_validation import raises_saying

SHAPES = [dict(arch="gru"), dict(arch="lstm", num_layers=2, bidirectional=True), dict(arch="lstm", reverse_source=True)]
CASES = [{**shape, "attention": score} for score in SCORES for shape in SHAPES]


def model_for(case, seq_len=6, hidden=5, seed=0):
    task = engine.make_task("reverse", seq_len=seq_len, symbols=5)
    model = engine.build_model(engine.ModelConfig(hidden_size=hidden, embedding_dim=4, **case), task, seed=seed)
    return task, model.double().eval()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_teacher_forcing_greedy_and_recording_agree_with_the_step_by_step_decoder(case):
    task, model = model_for(case)
    assert isinstance(model, engine.AttentionEncoderDecoder)
    x, y = task.batch(4)
    with torch.no_grad():
        forced = model(x, y)  # one call of the decoder's kernel for Luong; steps for Bahdanau
        stepped = feed_back(model, model.start(x), 4, teacher_inputs(y))
        free = model(x)
        refed = model(x, free.argmax(dim=-1))
    torch.testing.assert_close(forced, stepped, atol=1e-12, rtol=0)
    torch.testing.assert_close(free, refed, atol=1e-12, rtol=0)  # greedy = forced on its own output
    rec = engine.record(model, x, y, index=2, jacobians=True)
    torch.testing.assert_close(rec.y_hat, forced[2], atol=1e-12, rtol=0)
    alpha = rec.attention["alignment"]
    assert alpha.shape == (1, 7, 6)  # [heads, target steps, source tokens]
    torch.testing.assert_close(alpha.sum(-1), torch.ones(1, 7, dtype=torch.float64), atol=1e-12, rtol=0)
    assert rec.attention_context["alignment"].shape == (1, 7, 5 * model.cfg.num_directions)
    torch.testing.assert_close(rec.attention_logits["alignment"].softmax(-1), alpha, atol=1e-14, rtol=0)
    assert rec.stacks["decoder"].jacobian_norm.shape == (model.cfg.num_layers, 1, 7)


@pytest.mark.parametrize("score", SCORES)
def test_luong_asks_with_the_current_state_and_bahdanau_with_the_previous_one(score):
    task, model = model_for(dict(arch="gru", num_layers=2, attention=score))
    x, y = task.batch(1)
    rec = engine.record(model, x, y, jacobians=False)
    memory = rec.stacks["encoder"].hidden[-1, 0][None]  # [1, S, H]: the encoder's top layer
    s = rec.stacks["decoder"].hidden[-1, 0]  # [T_out, H]: s_1 ... s_T, the decoder's top layer
    if score == "additive":  # Bahdanau: s_{t-1}, and s_0 is the context from the encoder
        s_0 = rec.stacks["encoder"].hidden[-1, 0, -1]  # the top layer's final state
        queries = torch.cat([s_0[None], s[:-1]])
    else:  # Luong: s_t
        queries = s
    with torch.no_grad():
        expected = model.attention.score(queries[None], memory).softmax(-1)  # [1, T_out, S]
    torch.testing.assert_close(rec.attention["alignment"], expected, atol=1e-12, rtol=0)


class NudgedTaps(Taps):
    """Taps that are not zero at one entry: the replay with h_t moved by eps there."""

    def __init__(self, stack, index, eps):
        super().__init__()
        self.stack, self.index, self.eps = stack, index, eps

    def make(self, name, cfg, x_in):
        taps = super().make(name, cfg, x_in).detach()
        if name == self.stack:
            taps[self.index] = self.eps
        return taps


@pytest.mark.parametrize("case", [dict(arch="lstm", attention="general", num_layers=2),
                                  dict(arch="gru", attention="additive", bidirectional=True)], ids=case_id)
def test_recorded_gradients_equal_finite_differences_through_the_attention(case):
    task, model = model_for(case, hidden=4)
    x, y = task.batch(1)
    rec = engine.record(model, x, y, jacobians=False)

    def loss_with(stack, index, eps):
        with torch.no_grad():
            return compute_loss("ce", model.replay(x, y, NudgedTaps(stack, index, eps)).y_hat, y).item()

    L, dirs = model.cfg.num_layers, model.cfg.num_directions
    for stack, (layer, d, t, unit) in [("encoder", (0, 0, 1, 2)), ("encoder", (L - 1, dirs - 1, 4, 0)),
                                       ("decoder", (0, 0, 2, 1)), ("decoder", (L - 1, 0, 5, 3))]:
        index = (layer, d, t, 0, unit)
        fd = (loss_with(stack, index, 1e-6) - loss_with(stack, index, -1e-6)) / 2e-6
        assert rec.stacks[stack].grad_h[layer, d, t, unit].item() == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_a_reversed_source_is_read_backwards_but_aligned_in_source_order():
    task, model = model_for(dict(arch="gru", attention="dot", reverse_source=True))
    x, _ = task.batch(3)
    out, h_n = model.encoder(model.source_embedding(x.flip(1)))
    decoding = model.start(x)
    torch.testing.assert_close(decoding.memory, out.flip(1), atol=0, rtol=0)  # memory[:, i] is source token i
    torch.testing.assert_close(decoding.state, h_n, atol=0, rtol=0)


@pytest.mark.parametrize("score", SCORES)
def test_attention_models_save_and_load_and_older_checkpoints_still_do(score, tmp_path):
    task, model = model_for(dict(arch="lstm", attention=score, bidirectional=True), seed=4)
    model.float()  # as trained and saved
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    loaded = engine.load(engine.save(model, tmp_path / "attention.safetensors"))
    assert loaded.cfg == model.cfg and isinstance(loaded, engine.AttentionEncoderDecoder)
    x, _ = task.batch(3)
    loaded.eval()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    # A checkpoint saved before ModelConfig had the attention fields loads with their defaults.
    plain = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=5), task, seed=0)
    older = {k: v for k, v in plain.cfg.to_dict().items()
             if k not in ("attention", "reverse_source", "num_heads", "dim_feedforward", "position_encoding")}
    data = safetensors.torch.save(plain.state_dict(), metadata={
        "format": "unrolled-checkpoint-1", "model_config": json.dumps(older),
        "task_spec": json.dumps(task.spec.to_dict())})
    assert engine.from_bytes(data).cfg == plain.cfg


# ---------------------------------------------------------------- scheduled sampling

@pytest.mark.parametrize("case", [dict(arch="gru"), dict(arch="lstm", attention="additive"),
                                  dict(arch="lstm", attention="dot", num_layers=2)], ids=case_id)
def test_scheduled_sampling_reads_the_truth_or_its_own_prediction(case):
    task, model = model_for(case)
    x, y = task.batch(4)
    never = torch.zeros_like(y, dtype=torch.bool)
    with torch.no_grad():
        torch.testing.assert_close(model(x, y, sampled=never), model(x, y), atol=1e-12, rtol=0)
        torch.testing.assert_close(model(x, y, sampled=~never), model(x), atol=1e-12, rtol=0)  # all own: greedy
        only_3 = never.clone()
        only_3[:, 3] = True  # step 3 reads the prediction made at step 2
        mixed = model(x, y, sampled=only_3)
        reads = y.clone()
        reads[:, 2] = model(x, y)[:, 2].argmax(-1)  # what the decoder predicted at step 2, under teacher forcing
        torch.testing.assert_close(mixed, model(x, reads), atol=1e-12, rtol=0)


def test_a_transformer_samples_from_a_teacher_forced_first_pass():
    task = engine.make_task("reverse", seq_len=5, symbols=5)
    model = engine.build_model(engine.ModelConfig(arch="transformer", hidden_size=8, num_heads=2), task, seed=0).eval()
    x, y = task.batch(3)
    with torch.no_grad():
        guess = model(x, y).argmax(-1)  # [B, T_out]
        torch.testing.assert_close(model(x, y, sampled=torch.ones_like(y, dtype=torch.bool)), model(x, guess))


def test_trainer_flips_its_own_seeded_coins_for_scheduled_sampling():
    task = engine.make_task("reverse", seq_len=4, symbols=4)

    def run(p):
        model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, attention="dot"), task, seed=0)
        trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=16, scheduled_sampling=p))
        return [s.loss for s in trainer.step(5)], trainer

    once, trainer = run(0.5)
    assert once == run(0.5)[0] and once != run(0.0)[0]
    flips = trainer.sampled(torch.zeros(2000, 5))
    assert 0.45 < flips.float().mean().item() < 0.55
    adding = engine.make_task("adding", seq_len=5)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), adding)
    raises_saying(lambda: engine.Trainer(model, adding, engine.TrainConfig(scheduled_sampling=0.2)),
                  "scheduled_sampling=0", "seq2vec")
    raises_saying(lambda: engine.TrainConfig(scheduled_sampling=1.5), "scheduled_sampling", "[0.0, 1.0]")


# ---------------------------------------------------------------- beam search

def log_prob(model, x, tokens):
    """log p(tokens | x) by teacher forcing: the sum of each token's log-softmax."""
    y = torch.full((1, model.spec.out_len), IGNORE)
    y[0, : len(tokens)] = torch.tensor(tokens)
    with torch.no_grad():
        logp = model(x[None], y)[0].log_softmax(-1)  # [T_out, V]
    return sum(logp[t, token].item() for t, token in enumerate(tokens))


def until_eos(tokens):
    return tuple(tokens[: tokens.index(EOS) + 1]) if EOS in tokens else tuple(tokens)


@pytest.mark.parametrize("case", [dict(arch="gru"), dict(arch="lstm", attention="additive"),
                                  dict(arch="lstm", attention="dot", bidirectional=True), dict(arch="transformer")],
                         ids=case_id)
def test_beam_width_one_is_greedy_decoding(case):
    for seed in range(3):
        task = engine.make_task("reverse", seq_len=5, symbols=4)
        heads = {"num_heads": 2} if case["arch"] == "transformer" else {}
        cfg = engine.ModelConfig(hidden_size=8, embedding_dim=4, **heads, **case)
        model = engine.build_model(cfg, task, seed=seed).double().eval()
        x, _ = task.batch(1, torch.Generator().manual_seed(seed))
        with torch.no_grad():
            greedy = model(x).argmax(-1)[0].tolist()
        beam = engine.beam_search(model, x[0], width=1)
        assert beam.best.tokens == until_eos(greedy)
        assert beam.best.score == pytest.approx(log_prob(model, x[0], beam.best.tokens), abs=1e-9)
        assert all(len(step) == 1 for step in beam.steps)


def test_an_unpruned_beam_finds_the_most_likely_sequence():
    task = engine.make_task("reverse", seq_len=2, symbols=2)  # vocabulary 4, at most 3 target tokens
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=6, attention="general"), task, seed=0)
    engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=16)).step(40)  # past "<eos> first"
    model = model.double().eval()
    x, _ = task.batch(1)
    beam = engine.beam_search(model, x[0], width=64)  # 4^3: nothing is ever pruned
    # Every sequence that ends with its first <eos>.
    finished = [seq for n in (1, 2, 3) for seq in itertools.product(range(4), repeat=n) if seq[-1] == EOS
                and EOS not in seq[:-1]]
    scores = {seq: log_prob(model, x[0], seq) for seq in finished}
    best = max(scores, key=scores.get)
    assert len(best) == 3  # the search had to go the whole way
    assert beam.best.tokens == best and beam.best.score == pytest.approx(scores[best], abs=1e-9)
    assert sorted(c.tokens for c in beam.finished) == sorted(finished)  # every candidate, recorded
    assert [len(step) for step in beam.steps] == [4, 12, 36]  # 4 tokens from each unfinished prefix
    for step in beam.steps:
        assert [c.score for c in step] == sorted((c.score for c in step), reverse=True)


def test_a_wider_beam_keeps_width_candidates_a_step():
    task, model = model_for(dict(arch="lstm", attention="dot"), seq_len=6)
    x, _ = task.batch(1)
    beam = engine.beam_search(model, x[0], width=3)
    assert all(len(step) == 3 for step in beam.steps)
    for step in beam.steps:
        for c in step:
            assert c.score == pytest.approx(log_prob(model, x[0], c.tokens), abs=1e-9)


# ---------------------------------------------------------------- bad input

def test_bad_encoder_decoder_input_says_what_to_change():
    raises_saying(lambda: engine.ModelConfig(attention="bahdanau"), "attention",
                  "dot, general, additive, scaled_dot, cosine")
    adding = engine.make_task("adding", seq_len=5)
    raises_saying(lambda: engine.build_model(engine.ModelConfig(attention="dot"), adding),
                  "attention belongs to an encoder-decoder", "seq2vec", "leave attention at None")
    raises_saying(lambda: engine.build_model(engine.ModelConfig(reverse_source=True), adding),
                  "reverse_source", "False")
    task, model = model_for(dict(arch="gru", attention="dot"))
    empty = torch.zeros(2, 0, dtype=torch.long)
    raises_saying(lambda: model(empty), "empty source")
    raises_saying(lambda: engine.beam_search(model, empty[0], width=2), "empty source")
    _, plain = model_for(dict(arch="gru"))
    raises_saying(lambda: plain(empty), "empty source")
    x, _ = task.batch(2)
    raises_saying(lambda: engine.beam_search(model, x[0], width=0), "width", "between 1 and 100")
    raises_saying(lambda: engine.beam_search(model, x, width=2), "one source sequence", "[2, 6]")
    lm = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), adding)
    raises_saying(lambda: engine.beam_search(lm, x[0]), "encoder-decoder")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_padded_date_is_attended_and_decoded_as_its_characters_alone(case):
    """The encoder skips the pads and the attention gives them no weight, so teacher-forced,
    greedy and recorded outputs for a front-padded date are those for its characters alone."""
    task = engine.make_task("dates")
    model = engine.build_model(engine.ModelConfig(hidden_size=5, embedding_dim=4, **case), task, seed=0)
    model = model.double().eval()
    x, y = task.batch(4, torch.Generator().manual_seed(0))
    padded = task.spec.padded(x)
    assert padded.any()
    with torch.no_grad():
        forced, greedy = model(x, y), model(x)  # each [B, T_out, V]
        for b in range(len(x)):
            alone = x[b : b + 1, ~padded[b]]  # [1, S_b]
            torch.testing.assert_close(forced[b], model(alone, y[b : b + 1])[0], atol=1e-12, rtol=0)
            torch.testing.assert_close(greedy[b], model(alone)[0], atol=1e-12, rtol=0)
    rec = engine.record(model, x, y, index=1, jacobians=False)
    torch.testing.assert_close(rec.y_hat, forced[1], atol=1e-12, rtol=0)
    assert torch.all(rec.attention["alignment"][:, :, padded[1]] == 0)
