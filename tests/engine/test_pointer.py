"""The sort task and the pointer network, against references: the targets against Python's
sorted(), the pointer distribution against the additive score computed by hand from the recorded
states, the decoder's inputs against the values pointed to, recorded gradients against finite
differences, and beam search against greedy decoding and exhaustive search."""
import itertools
import math

import pytest
import torch

import engine
from engine.losses import compute_loss
from engine.pointer import PointerNetwork
from engine.seq2seq import EOS, SOS, feed_back, teacher_inputs

from .cases import case_id
from .test_attention_seq2seq import NudgedTaps, log_prob, until_eos
from .test_validation import raises_saying

CASES = [dict(arch="lstm", attention="additive"), dict(arch="gru", num_layers=2, attention="additive"),
         dict(arch="lstm", bidirectional=True, reverse_source=True, attention="general")]


def model_for(case, seq_len=5, hidden=6, seed=0):
    task = engine.make_task("sort", seq_len=seq_len, seed=seed)
    model = engine.build_model(engine.ModelConfig(hidden_size=hidden, embedding_dim=4, **case), task, seed=seed)
    return task, model.double().eval()


def batch(task, n):
    x, y = task.batch(n)
    return x.double(), y


# ---------------------------------------------------------------- the task

def test_sort_targets_point_at_the_numbers_from_the_smallest_then_end():
    task = engine.make_task("sort", seq_len=7, seed=2)
    assert task.spec == engine.TaskSpec("sort", "pointer", "values", input_size=1, output_size=9, loss="ce", out_len=8)
    x, y = task.batch(50)
    assert x.shape == (50, 7, 1) and x.dtype == torch.float32 and 0 <= x.min() and x.max() < 1
    for xs, ys in zip(x[..., 0].tolist(), y.tolist()):
        assert [xs[c - 2] for c in ys[:-1]] == sorted(xs) and ys[-1] == EOS
        assert sorted(ys[:-1]) == list(range(2, 9))  # every position once: a permutation
    assert task.class_names == task.target_vocab == ("<sos>", "<eos>") + tuple(f"position {j}" for j in range(7))
    assert engine.task_params("sort") == {"seed": 0, "seq_len": 5}


def test_sequence_and_position_accuracy_count_what_is_right():
    task = engine.make_task("sort", seq_len=3)
    y = torch.tensor([[4, 2, 3, EOS], [2, 3, 4, EOS]])
    right = torch.nn.functional.one_hot(y, 5).double()  # [2, 4, 5]: logits that point right
    wrong = right.clone()
    wrong[1, 0] = torch.nn.functional.one_hot(torch.tensor(3), 5)  # sample 1's first pointer is off
    assert task.sequence_accuracy(right, y) == 1.0 and task.sequence_accuracy(wrong, y) == 0.5
    assert task.position_accuracy(wrong, y).tolist() == [0.5, 1.0, 1.0, 1.0]
    assert task.metric(wrong, y) == 7 / 8


# ---------------------------------------------------------------- the pointer, against its formula

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_output_is_the_pointer_distribution_over_the_end_and_the_positions(case):
    """p(C_t = j) = softmax_j(u_tj): each row of the recording's "pointer" sums to 1, and it is
    the softmax of the output over every class but <sos>, which gets exactly 0."""
    task, model = model_for(case)
    x, y = batch(task, 4)
    with torch.no_grad():
        forced = model(x, y)  # [4, 6, 7]
        stepped = feed_back(model, model.start(x), 4, teacher_inputs(y))
        free = model(x)
        refed = model(x, free.argmax(-1))
    torch.testing.assert_close(forced, stepped, atol=1e-12, rtol=0)
    torch.testing.assert_close(free, refed, atol=1e-12, rtol=0)  # greedy = forced on its own pointers
    rec = engine.record(model, x, y, index=1)
    alpha = rec.attention["pointer"]
    assert alpha.shape == (1, 6, 6)  # [heads, output steps, end + 5 positions]
    torch.testing.assert_close(alpha.sum(-1), torch.ones(1, 6, dtype=torch.float64), atol=1e-12, rtol=0)
    p = rec.y_hat.softmax(-1)  # [6, 7]
    assert torch.all(p[:, SOS] == 0) and torch.all(torch.isinf(rec.y_hat[:, SOS]))
    torch.testing.assert_close(p[:, 1:], alpha[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(rec.y_hat, forced[1], atol=1e-12, rtol=0)
    assert rec.stacks["decoder"].jacobian_norm.shape == (model.cfg.num_layers, 1, 6)


def test_the_pointer_scores_every_position_with_v_tanh_of_the_encoder_and_decoder_states():
    """u_tj = v^T tanh(W_1 e_j + W_2 d_t), by hand from the recorded states: e_j the encoder's top
    layer at position j (e_end learned), d_t the decoder's top layer at step t."""
    task, model = model_for(dict(arch="gru", num_layers=2, attention="additive"))
    x, y = batch(task, 1)
    rec = engine.record(model, x, y, jacobians=False)
    e = torch.cat([model.pointer.end[None], rec.stacks["encoder"].hidden[-1, 0]])  # [6, H]: e_end, e_0..e_4
    d = rec.stacks["decoder"].hidden[-1, 0]  # [6, H]: d_1 .. d_6
    score = model.pointer.attention.score
    W_1, W_2, b, v = score.W_h.weight, score.W_s.weight, score.W_h.bias, score.v.weight[0]
    with torch.no_grad():
        u = torch.tensor([[(v @ torch.tanh(W_1 @ e_j + b + W_2 @ d_t)).item() for e_j in e] for d_t in d],
                         dtype=torch.float64)  # [6 steps, end + 5 positions]
    torch.testing.assert_close(rec.attention_logits["pointer"][0], u, atol=1e-12, rtol=0)
    torch.testing.assert_close(rec.attention["pointer"][0], u.softmax(-1), atol=1e-12, rtol=0)


def test_the_decoder_reads_the_value_it_pointed_to_and_first_the_learned_go():
    task, model = model_for(dict(arch="gru", attention="additive"))
    x, y = batch(task, 2)
    W_e = model.embedding.W_e
    with torch.no_grad():
        pointed = torch.stack([x[b, y[b, :-1] - 2] for b in range(2)])  # [2, 5, 1]: x_{C_1} .. x_{C_5}
        reads = torch.cat([model.embedding.go.expand(2, 1, -1), W_e(pointed)], dim=1)  # [2, 6, E]
        d, _ = model.decoder(reads, model.start(x).state)  # [2, 6, H]
    rec = engine.record(model, x, y, index=1, jacobians=False)
    torch.testing.assert_close(rec.stacks["decoder"].hidden[0, 0], d[1], atol=1e-12, rtol=0)


def test_a_reversed_source_is_read_backwards_but_pointed_at_in_source_order():
    task, model = model_for(dict(arch="gru", attention="dot", reverse_source=True))
    x, _ = batch(task, 3)
    with torch.no_grad():
        out, h_n = model.encoder(model.embedding(x).flip(1))
        pointing = model.start(x)
    torch.testing.assert_close(pointing.keys[:, 1:], out.flip(1), atol=0, rtol=0)  # key 1 + j is position j
    torch.testing.assert_close(pointing.state, h_n, atol=0, rtol=0)


def test_recorded_gradients_equal_finite_differences_through_the_pointer():
    task, model = model_for(dict(arch="lstm", num_layers=2, attention="additive"), hidden=4)
    x, y = batch(task, 1)
    rec = engine.record(model, x, y, jacobians=False)

    def loss_with(stack, index, eps):
        with torch.no_grad():
            return compute_loss("ce", model.replay(x, y, NudgedTaps(stack, index, eps)).y_hat, y).item()

    for stack, (layer, t, unit) in [("encoder", (0, 1, 2)), ("encoder", (1, 4, 0)), ("decoder", (0, 2, 1)),
                                    ("decoder", (1, 5, 3))]:
        index = (layer, 0, t, 0, unit)
        fd = (loss_with(stack, index, 1e-6) - loss_with(stack, index, -1e-6)) / 2e-6
        assert rec.stacks[stack].grad_h[layer, 0, t, unit].item() == pytest.approx(fd, rel=1e-5, abs=1e-9)


# ---------------------------------------------------------------- decoding

def test_beam_width_one_is_greedy_and_an_unpruned_beam_finds_the_most_likely_pointers():
    task, model = model_for(dict(arch="lstm", attention="additive"), seq_len=3)
    x, _ = batch(task, 1)
    with torch.no_grad():
        greedy = model(x).argmax(-1)[0].tolist()
    beam = engine.beam_search(model, x[0], width=1)
    assert beam.best.tokens == until_eos(greedy)
    assert beam.best.score == pytest.approx(log_prob(model, x[0], beam.best.tokens), abs=1e-9)
    wide = engine.beam_search(model, x[0], width=100)  # 4 classes a step, at most 4 steps: none pruned
    assert all(SOS not in c.tokens for step in wide.steps for c in step)  # probability 0: never a candidate
    finished = [seq for n in range(1, 5) for seq in itertools.product(range(1, 5), repeat=n)
                if seq[-1] == EOS and EOS not in seq[:-1]]
    scores = {seq: log_prob(model, x[0], seq) for seq in finished}
    best = max(scores, key=scores.get)
    assert wide.best.tokens == best and wide.best.score == pytest.approx(scores[best], abs=1e-9)


def test_scheduled_sampling_and_a_checkpoint_work_for_a_pointer_network(tmp_path):
    task = engine.make_task("sort", seq_len=4)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, attention="additive"), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=16, scheduled_sampling=0.5))
    assert all(math.isfinite(s.loss) for s in trainer.step(5))
    loaded = engine.load(engine.save(model, tmp_path / "pointer.safetensors"))
    assert isinstance(loaded, PointerNetwork) and loaded.cfg == model.cfg and loaded.spec == task.spec
    x, _ = task.batch(3)
    model.eval()
    loaded.eval()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))


def test_bad_pointer_input_says_what_to_change():
    task, model = model_for(dict(arch="gru", attention="additive"))
    raises_saying(lambda: model(torch.zeros(2, 0, 1, dtype=torch.float64)), "values [batch, S, 1]", "empty input")
    raises_saying(lambda: model(torch.zeros(2, 5, dtype=torch.long)), "values [batch, S, 1]", "[2, 5]")
    raises_saying(lambda: engine.beam_search(model, torch.zeros(5)), "values of shape [S, 1]")
    raises_saying(lambda: engine.make_task("sort", seq_len=1), "seq_len", "between 2 and 100")
    raises_saying(lambda: engine.TaskSpec("p", "pointer", "values", 1, 2, "ce", out_len=2),
                  "output_size = positions + 2")
    tokens = engine.TaskSpec("p", "pointer", "tokens", 4, 5, "ce", out_len=4)
    raises_saying(lambda: engine.build_model(engine.ModelConfig(attention="dot"), tokens), "reads values")
