"""The Comparison without a browser: four cells on one setup, measured as the Lab measures one."""
import dataclasses
import threading

import pytest
import torch

import engine
from app.session.comparison import CELLS, TIMED_STEPS, Comparison, cell_configs, setup_text
from app.session.heldout import held_out_set, score
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.link import DEFAULT, preset_setup
from app.session.probes import RECORD_EVERY


def played(comparison: Comparison, until: int) -> Comparison:
    """Train every run up to `until` (or until it stops), as a playing page would."""
    comparison.playing = True
    comparison.train_for(float("inf"), until)
    return comparison


def ratio_of(rec: engine.Recording) -> float:
    g = rec.grad_norm_h[0, 0]  # [T]
    return (g[0] / g[-1]).item()


def test_each_run_starts_and_trains_as_a_lab_with_that_cell():
    comparison = Comparison(DEFAULT)
    assert [run.name for run in comparison.runs] == list(CELLS)
    played(comparison, 3)
    for run in comparison.runs:
        lab = Lab(dataclasses.replace(DEFAULT, model=comparison.configs[run.name]))
        assert torch.equal(lab.probes.samples[0], comparison.probe[0])
        assert torch.equal(lab.probes.samples[1], comparison.probe[1])
        for _ in range(3):
            lab.step()
        assert [s.loss for s in run.trainer.history] == [s.loss for s in lab.trainer.history], run.name
        for name, value in lab.model.state_dict().items():
            assert torch.equal(run.model.state_dict()[name], value), (run.name, name)


def test_the_log_holds_the_recording_of_the_probe_sample_and_the_held_out_loss():
    comparison = played(Comparison(DEFAULT), RECORD_EVERY + 3)  # a budget past a record point
    log = comparison.log_frame()
    curves = comparison.curves_frame()
    for run in comparison.runs:
        rows = log[log.run == run.name]
        assert list(rows.step) == [0, RECORD_EVERY, RECORD_EVERY + 3]  # and the budget's last step
        rec = engine.record(run.model, *comparison.probe, index=0, jacobians=False)
        assert rows.ratio.iloc[-1] == pytest.approx(ratio_of(rec), rel=1e-6)
        curve = curves[curves.run == run.name]
        assert list(curve.t) == list(range(rec.seq_len)) and set(curve.step) == {RECORD_EVERY + 3}
        assert list(curve.value) == pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6)
        loss, metric = score(run.model, comparison.task, *held_out_set(comparison.task, 0)[:2])
        assert (rows.loss.iloc[-1], rows.metric.iloc[-1]) == pytest.approx((loss, metric), rel=1e-6)
    # the tanh RNN's ratio at step 25 is the one the Gradients page logs for that model
    lab = Lab(dataclasses.replace(DEFAULT, model=comparison.configs["tanh RNN"]))
    for _ in range(RECORD_EVERY):
        lab.step()
    tanh = log[log.run == "tanh RNN"].set_index("step").ratio
    assert list(lab.probes.log_frame().ratio) == pytest.approx([tanh[0], tanh[RECORD_EVERY]], rel=1e-6)


def test_a_run_that_diverges_stops_and_the_others_train_on():
    # ReLU RNN with an identity recurrence, plain SGD, no clipping: its second step diverges
    comparison = played(Comparison(BY_KEY["exploding"].setup), 10)
    relu = comparison.runs[list(CELLS).index("ReLU RNN")]
    assert relu.trainer.diverged_at == 2 and relu.steps_done == 2
    assert comparison.stopped() == [relu]
    assert all(torch.isfinite(p).all() for p in relu.model.parameters())  # the last finite weights
    assert [r.steps_done for r in comparison.runs if r is not relu] == [10, 10, 10]
    assert list(comparison.log_frame().query("run == 'ReLU RNN'").step) == [0]  # nothing logged after
    assert comparison.finished(10) and not comparison.playing
    assert comparison.steps_taken == 2 + 3 * 10
    assert comparison.steps_left(10) == 0 and comparison.steps_left(12) == 3 * 2  # the diverged run has none to go


def test_the_time_to_go_is_the_steps_left_at_the_pages_pace_over_its_last_ticks():
    """Pace marks each tick's (time, steps): 30 steps in 1.5 s is 20 steps/s, so 3 x 2 steps left
    take 0.3 s; a pause starts a new window, and two marks are needed for a pace."""
    comparison = played(Comparison(BY_KEY["exploding"].setup), 10)
    comparison.pace.clock = iter([10.0, 10.5, 11.5]).__next__
    assert comparison.seconds_to_go(12) is None
    comparison.pace.mark(0)
    assert comparison.seconds_to_go(12) is None
    comparison.pace.mark(10)
    comparison.pace.mark(30)
    assert comparison.seconds_to_go(12) == pytest.approx(6 * 1.5 / 30)
    comparison.pace.restart()
    assert comparison.seconds_to_go(12) is None


def test_the_runs_take_turns_and_stay_within_one_step():
    comparison = Comparison(DEFAULT)
    seen = []
    with comparison.lock:
        while comparison.advance(3):
            steps = [run.steps_done for run in comparison.runs]
            assert max(steps) - min(steps) <= 1 and steps == sorted(steps, reverse=True)
            seen.append(steps)
    assert seen[:5] == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1], [2, 1, 1, 1]]
    assert seen[-1] == [3, 3, 3, 3] and len(seen) == 12
    comparison.playing = True
    comparison.train_for(0.05, until=1000)  # a pause mid-way still lands between whole steps
    steps = [run.steps_done for run in comparison.runs]
    assert max(steps) - min(steps) <= 1


def test_reset_while_another_thread_trains_leaves_fresh_runs():
    comparison = Comparison(DEFAULT)
    fresh = [{k: v.clone() for k, v in run.model.state_dict().items()} for run in comparison.runs]
    real_advance, reached = comparison.advance, threading.Event()

    def advance(until: int) -> bool:  # tells the test once the runs are 8 steps in
        took = real_advance(until)
        if comparison.steps_done >= 8:
            reached.set()
        return took

    comparison.advance = advance
    comparison.playing = True
    trainer = threading.Thread(target=comparison.train_for, args=(30.0, 100_000))
    trainer.start()
    assert reached.wait(timeout=30)
    comparison.reset()
    trainer.join(timeout=30)
    assert not trainer.is_alive()
    assert [run.steps_done for run in comparison.runs] == [0, 0, 0, 0]
    assert list(comparison.log_frame().step) == [0, 0, 0, 0]
    for run, weights in zip(comparison.runs, fresh):
        for name, value in run.model.state_dict().items():
            assert torch.equal(value, weights[name])


def test_a_comparison_is_of_its_setup_whichever_cell_the_student_picked():
    comparison = Comparison(DEFAULT)
    as_gru = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, arch="gru"))
    assert comparison.compares(as_gru)
    assert not comparison.compares(preset_setup("parity"))
    assert not comparison.compares(dataclasses.replace(DEFAULT, train=dataclasses.replace(DEFAULT.train, lr=0.01)))
    assert not comparison.compares(dataclasses.replace(DEFAULT, task_params={"seq_len": 20}))
    assert not comparison.compares(DEFAULT, upload="a corpus")


def test_the_lstm_keeps_the_students_forget_bias_and_the_rest_of_their_network():
    student = engine.ModelConfig(arch="lstm", hidden_size=8, num_layers=2, bidirectional=True, init="orthogonal",
                                 dropout=0.2, forget_bias=3.0, peephole=True)
    cells = cell_configs(student, tuple(CELLS))
    assert cells["LSTM"].forget_bias == 3.0 and not cells["LSTM"].peephole
    assert (cells["ReLU RNN"].arch, cells["ReLU RNN"].activation) == ("rnn", "relu")
    assert all(c.forget_bias is None for name, c in cells.items() if name != "LSTM")
    kept = {(c.hidden_size, c.num_layers, c.bidirectional, c.init, c.dropout) for c in cells.values()}
    assert kept == {(8, 2, True, "orthogonal", 0.2)}
    a_gru = dataclasses.replace(student, arch="gru", forget_bias=None, peephole=False)
    assert cell_configs(a_gru, ("LSTM",))["LSTM"].forget_bias is None  # PyTorch's, as for any other cell
    transformer = engine.ModelConfig(arch="transformer", hidden_size=16, num_heads=4, dropout=0.1)
    cells = cell_configs(transformer, ("LSTM", "GRU")).values()  # its heads and one-layer dropout mean nothing here
    kept = {(c.arch, c.hidden_size, c.num_heads, c.dropout) for c in cells}
    assert kept == {("lstm", 16, 1, 0.0), ("gru", 16, 1, 0.0)}


def test_a_bidirectional_comparison_logs_and_draws_both_directions_in_reading_order():
    """Issue 12, item 4: the backward direction's first step is t = T-1 (it reads from the end)."""
    setup = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, hidden_size=8, bidirectional=True))
    comparison = played(Comparison(setup, cells=("tanh RNN", "GRU")), RECORD_EVERY)
    log, curves = comparison.log_frame(), comparison.curves_frame()
    for run in comparison.runs:
        g = engine.record(run.model, *comparison.probe, index=0, jacobians=False).grad_norm_h[0]  # [2, T]
        last = log[(log.run == run.name) & (log.step == RECORD_EVERY)].iloc[0]
        assert last.ratio == pytest.approx((g[0, 0] / g[0, -1]).item(), rel=1e-6)
        assert last.ratio_backward == pytest.approx((g[1, -1] / g[1, 0]).item(), rel=1e-6)
        for d, direction in enumerate(("forward", "backward")):
            rows = curves[(curves.run == run.name) & (curves.direction == direction)]
            assert list(rows.value) == pytest.approx(g[d].tolist(), rel=1e-6)
    assert log.ratio_backward.notna().all()


def test_each_run_times_its_latest_training_steps_and_only_them():
    """The wall-clock time of each step (Compare architectures shows it), not of its measurements."""
    comparison = Comparison(DEFAULT, cells=("tanh RNN", "GRU"))
    played(comparison, RECORD_EVERY)  # the last step is measured too
    for run in comparison.runs:
        assert len(run.step_seconds) == RECORD_EVERY and all(s > 0 for s in run.step_seconds)
    assert sum(sum(run.step_seconds) for run in comparison.runs) < comparison.seconds
    played(comparison, TIMED_STEPS + 10)
    assert [len(run.step_seconds) for run in comparison.runs] == [TIMED_STEPS] * 2  # the latest only


def test_an_initialisation_comparison_trains_the_students_network_from_each_start():
    """Each run is the student's network with one initialisation, built as a lab with that network
    builds it: W_hh blocks orthogonal or the identity (biases zero), an LSTM's forget bias 1."""
    student = dataclasses.replace(DEFAULT.model, hidden_size=16, init="scaled", spectral_radius=1.1, forget_bias=2.0)
    setup = dataclasses.replace(DEFAULT, model=student)
    comparison = Comparison(setup, kind="initialisations")
    assert list(comparison.configs) == ["PyTorch default", "orthogonal", "identity", "forget bias 1"]
    kept = dataclasses.replace(student, init="default", spectral_radius=None, forget_bias=None)
    for run in comparison.runs:
        assert dataclasses.replace(run.cfg, init="default", spectral_radius=None, forget_bias=None) == kept
        lab = Lab(dataclasses.replace(setup, model=run.cfg))
        theirs = lab.model.state_dict()
        assert list(run.model.state_dict()) == list(theirs)
        for name, mine in run.model.state_dict().items():
            assert torch.equal(mine, theirs[name]), (run.name, name)
    H = 16
    blocks = {run.name: run.model.rnn.weight_hh_l0.detach().reshape(4, H, H) for run in comparison.runs}  # i, f, g, o
    assert all(torch.equal(block, torch.eye(H)) for block in blocks["identity"])  # (IRNN) names a ReLU RNN's
    assert all(torch.allclose(block @ block.T, torch.eye(H), atol=1e-5) for block in blocks["orthogonal"])
    irnn = dict(comparison.runs[2].model.rnn.named_parameters())
    assert not irnn["bias_ih_l0"].any() and not irnn["bias_hh_l0"].any()
    forget = dict(comparison.runs[3].model.rnn.named_parameters())["bias_ih_l0"][H : 2 * H]
    assert torch.equal(forget, torch.ones(H))
    assert comparison.compares(setup) and comparison.compares(setup, kind="initialisations")
    assert not comparison.compares(setup, kind="cells")
    orthogonal = dataclasses.replace(student, init="orthogonal", spectral_radius=None)
    other_start = dataclasses.replace(setup, model=orthogonal)
    assert comparison.compares(other_start)  # the student's own start is not what the runs compare
    assert not comparison.compares(dataclasses.replace(setup, model=dataclasses.replace(student, hidden_size=32)))


def test_a_cell_without_a_forget_gate_gets_three_starts():
    rnn = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, arch="rnn", activation="relu"))
    comparison = Comparison(rnn, kind="initialisations")
    assert list(comparison.configs) == ["PyTorch default", "orthogonal", "identity (IRNN)"]
    assert {cfg.activation for cfg in comparison.configs.values()} == {"relu"}
    with pytest.raises(ValueError, match="kind must be one of cells, initialisations"):
        Comparison(rnn, kind="weights")


def test_echo_state_networks_train_their_read_out_alone_on_reservoirs_at_each_spectral_radius():
    """Each reservoir is a tanh RNN of the student's size whose W_hh has spectral radius ρ; after
    training its every weight but the head's is bit for bit where it started."""
    from app.session.comparison import RESERVOIR_RADII

    student = dataclasses.replace(DEFAULT.model, hidden_size=16)  # an LSTM: reservoirs are tanh RNNs
    comparison = Comparison(dataclasses.replace(DEFAULT, model=student), kind="reservoirs")
    assert list(comparison.configs) == [f"ρ = {rho:g}" for rho in RESERVOIR_RADII]
    starts = {run.name: {n: p.detach().clone() for n, p in run.model.named_parameters()} for run in comparison.runs}
    played(comparison, 3)
    for run, rho in zip(comparison.runs, RESERVOIR_RADII):
        assert (run.cfg.arch, run.cfg.activation, run.cfg.hidden_size) == ("rnn", "tanh", 16)
        W_hh = run.model.rnn.weight_hh_l0.detach()  # [H, H]
        assert torch.linalg.eigvals(W_hh).abs().max().item() == pytest.approx(rho, rel=1e-5)
        for name, param in run.model.named_parameters():
            moved = not torch.equal(param.detach(), starts[run.name][name])
            assert moved == name.startswith("head"), (run.name, name)
    assert "tanh RNN reservoirs, 1 layer × 16 units, W_hh fixed at each ρ" in setup_text(comparison.setup, "reservoirs")


def test_a_normalisation_comparison_trains_the_students_network_without_and_with_each():
    """The student's network, its start and forget bias kept, as it is and with layer normalisation,
    zoneout (theirs if they set one, else ZONEOUT) and both, each built as a lab builds it; a layer-
    normalised run has the layer norms' gains."""
    from app.session.comparison import ZONEOUT

    student = dataclasses.replace(DEFAULT.model, hidden_size=16, init="orthogonal", forget_bias=2.0, layer_norm=True)
    setup = dataclasses.replace(DEFAULT, model=student)
    comparison = Comparison(setup, kind="normalisation")
    assert list(comparison.configs) == ["without", "layer norm", f"zoneout {ZONEOUT:g}",
                                        "both"]
    assert [(c.layer_norm, c.zoneout) for c in comparison.configs.values()] == [
        (False, 0.0), (True, 0.0), (False, ZONEOUT), (True, ZONEOUT)]
    for run in comparison.runs:
        assert dataclasses.replace(run.cfg, layer_norm=True, zoneout=0.0) == student
        theirs = Lab(dataclasses.replace(setup, model=run.cfg)).model.state_dict()
        assert all(torch.equal(mine, theirs[name]) for name, mine in run.model.state_dict().items())
    gains = {run.name: [n for n, _ in run.model.named_parameters() if "gain" in n] for run in comparison.runs}
    assert gains["without"] == gains[f"zoneout {ZONEOUT:g}"] == []
    assert gains["layer norm"] == gains["both"] == [
        "rnn.gain_ih_l0", "rnn.gain_hh_l0", "rnn.gain_c_l0"]
    own = dataclasses.replace(setup, model=dataclasses.replace(student, zoneout=0.2))
    assert list(Comparison(own, kind="normalisation").configs)[2:] == ["zoneout 0.2", "both"]
    assert comparison.compares(dataclasses.replace(setup, model=dataclasses.replace(student, layer_norm=False)))
    assert "LSTM, 1 layer × 16 units, orthogonal initialisation, forget bias 2" in setup_text(setup, "normalisation")
    assert "layer norm" not in setup_text(setup, "normalisation")  # each run sets its own


def test_a_comparison_that_cannot_be_made_says_what_to_change():
    """A transformer has no W_hh to start differently; a pointer network no head to read a reservoir out."""
    transformer = dataclasses.replace(DEFAULT, model=engine.ModelConfig(arch="transformer", hidden_size=32,
                                                                          num_heads=2))
    with pytest.raises(ValueError, match="a transformer has no recurrent weights W_hh"):
        Comparison(transformer, kind="initialisations")
    assert not Comparison(DEFAULT, kind="initialisations").compares(transformer)  # no error: just not these runs
    assert len(Comparison(transformer, kind="reservoirs").runs) == 5  # reservoirs of its size
    with pytest.raises(ValueError, match="a transformer already normalises every sublayer"):
        Comparison(transformer, kind="normalisation")
    sort = preset_setup("sort")
    with pytest.raises(ValueError, match="an echo state network trains one read-out"):
        Comparison(sort, kind="reservoirs")
