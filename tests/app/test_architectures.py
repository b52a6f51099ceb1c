"""Compare architectures: the networks it sizes, the numbers it measures, and the page that plots them."""
import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session.architectures import (
    ARCHITECTURES,
    BIDIRECTIONAL,
    LABS,
    SIMILAR,
    Architectures,
    Choice,
    accuracy_by_position,
    predict,
)
from app.session.probes import RECORD_EVERY

from .conftest import MAIN, chart, plotted
from .test_page_reruns import tick

PAGE = nav.PATHS["architectures"]
BUDGET = RECORD_EVERY + 3  # a record point and the budget's own last step


def page() -> AppTest:
    return AppTest.from_file(MAIN, default_timeout=60).run().switch_page(PAGE).run()


def play_to(at: AppTest, until: int) -> AppTest:
    at.number_input(key="arch_steps").set_value(until).run()
    at.button(key="arch_play").click().run()
    for _ in range(100):
        if not at.session_state["architectures"].playing:
            break
        tick(at)  # the live fragment's own run: only ticks train
    return at


def choose(at: AppTest, length: int, parameters: int) -> AppTest:
    at.number_input(key="arch_length").set_value(length)
    at.number_input(key="arch_parameters").set_value(parameters)
    return at.button(key="arch_apply").click().run()


def shown_table(at: AppTest):
    return at.table[0].value  # the frame, numbers unformatted


# ------------------------------------------------------------------ the session, without a browser

@pytest.mark.parametrize("task", list(LABS))
def test_the_default_networks_have_parameter_counts_within_20_percent_of_each_other(task):
    architectures = Architectures(Choice.default(task))
    counts = {run.name: sum(p.numel() for p in run.model.parameters()) for run in architectures.runs}
    assert max(counts.values()) <= (1 + SIMILAR) * min(counts.values()), counts
    target = LABS[task].parameters
    assert all(abs(n / target - 1) <= SIMILAR for n in counts.values()), counts
    assert dict(zip(architectures.sizes_frame().run, architectures.sizes_frame().parameters, strict=True)) == counts


@pytest.mark.parametrize("target", [2_000, 20_000, 60_000])
def test_the_search_finds_the_nearest_size_for_other_targets_too(target):
    architectures = Architectures(Choice("reverse", 8, target))
    for run in architectures.runs:
        step = run.cfg.num_heads
        neighbours = [engine.ModelConfig(**{**run.cfg.to_dict(), "hidden_size": h})
                      for h in (run.cfg.hidden_size - step, run.cfg.hidden_size + step) if h > 0]
        count = run.parameters
        for cfg in neighbours:
            other = sum(p.numel() for p in engine.build_model(cfg, architectures.task).parameters())
            assert abs(count - target) <= abs(other - target), (run.name, cfg.hidden_size)
    # nearest need not be near: at 2,000 the smallest steps of d_model move a 2-block transformer by
    # about 500 parameters (the page says when a count is more than 20% off)


def test_the_char_lm_has_no_bidirectional_lstm_and_a_causal_transformer():
    architectures = Architectures(Choice.default("charlm"))
    assert list(architectures.configs) == [name for name in ARCHITECTURES if name != BIDIRECTIONAL]
    assert not architectures.configs["transformer"].bidirectional
    recall = Architectures(Choice.default("recall"))
    assert recall.configs[BIDIRECTIONAL].bidirectional and recall.configs["transformer"].bidirectional


def test_step_trains_every_network_one_step_and_levels_a_round_paused_midway():
    architectures = Architectures(Choice.default("recall"))
    architectures.step()
    assert [run.steps_done for run in architectures.runs] == [1] * 5
    assert list(architectures.log_frame().step) == [0, 1] * 5
    with architectures.lock:
        architectures.advance(2)  # one run a step ahead, as a pause can leave them
    architectures.step()
    assert [run.steps_done for run in architectures.runs] == [2] * 5
    assert all(len(run.step_seconds) == 2 for run in architectures.runs)
    architectures.reset()
    assert [run.steps_done for run in architectures.runs] == [0] * 5
    assert architectures.timing_frame().steps.tolist() == [0] * 5


def test_recall_accuracy_by_lag_is_measured_on_held_out_samples_of_each_lag():
    architectures = Architectures(Choice("recall", 8, 3_000))
    architectures.step()
    frame = architectures.by_length_frame()
    assert sorted(set(frame.length)) == [2, 4, 8, 12, 16, 24]  # a quarter to three times the lag trained on
    for run in architectures.runs:
        rows = frame[frame.run == run.name].set_index("length").accuracy
        for lag in (2, 24):
            x, y = architectures.lags[lag]
            assert x.shape[1] == lag + 1
            assert rows[lag] == pytest.approx(architectures.task.metric(predict(run.model, x), y))
        # at the lag trained on, the held-out samples are the held-out set itself
        assert torch.equal(architectures.lags[8][0], architectures.held_out[0])
        assert rows[8] == pytest.approx(run.log.last["metric"])


@pytest.mark.parametrize("task", ["reverse", "charlm"])
def test_accuracy_by_position_is_each_output_positions_share_right(task):
    architectures = Architectures(Choice.default(task))
    architectures.step()
    frame = architectures.by_length_frame()
    x, y = architectures.held_out
    for run in architectures.runs:
        right = (predict(run.model, x).argmax(-1) == y).float().mean(0)  # [T_out]
        expected = right[:-1] if task == "reverse" else right  # reversal's end marker left out
        rows = frame[frame.run == run.name]
        assert list(rows.length) == list(range(1, LABS[task].length + 1))
        assert list(rows.accuracy) == pytest.approx(expected.tolist())
    assert accuracy_by_position(torch.tensor([[[0.0, 1.0], [1.0, 0.0]]]), torch.tensor([[1, 1]])) == [1.0, 0.0]


def test_a_refused_choice_says_what_to_change():
    with pytest.raises(ValueError, match="lag must be between 1 and 1999"):
        Architectures(Choice("recall", 2000, 5_000))
    with pytest.raises(ValueError, match="over this app's limit"):
        Architectures(Choice("charlm", 2000, 200_000))
    with pytest.raises(ValueError, match="parameters per network must be between"):
        Choice("recall", 40, 10)


# ------------------------------------------------------------------ the page

def test_the_page_opens_with_the_default_lab_and_step_trains_every_network_once():
    at = page()
    assert not at.exception
    architectures = at.session_state["architectures"]
    assert architectures.choice == Choice.default("recall") and not architectures.trained
    assert at.number_input(key="arch_steps").value == LABS["recall"].steps
    assert list(shown_table(at).network) == list(ARCHITECTURES)
    at.button(key="arch_step").click().run()
    assert not at.exception
    assert [run.steps_done for run in architectures.runs] == [1] * 5
    loss = {t["name"]: t for t in chart(at, "Held-out loss of each network")["data"]}
    for run in architectures.runs:
        assert plotted(loss[run.name]["x"]) == [0, 1]  # measured after the Step
    last = [run.log.last["metric"] for run in architectures.runs]
    assert list(shown_table(at)["held-out accuracy"]) == pytest.approx(last)


def test_the_parameter_counts_shown_are_the_models_own_and_within_20_percent():
    at = page()
    colours = set()
    for task in LABS:
        at.selectbox(key="arch_task").set_value(task).run()
        assert not at.exception
        architectures = at.session_state["architectures"]
        assert architectures.choice == Choice.default(task)
        table = shown_table(at)
        counts = [sum(p.numel() for p in run.model.parameters()) for run in architectures.runs]
        assert list(table.network) == [run.name for run in architectures.runs]
        assert list(table.parameters) == counts
        assert max(counts) <= (1 + SIMILAR) * min(counts)
        assert (BIDIRECTIONAL in list(table.network)) == (task != "charlm")
        assert any("would read the very character" in c.value for c in at.caption) == (task == "charlm")
        loss = {t["name"]: t for t in chart(at, "Held-out loss of each network")["data"]}
        colours.add(loss["transformer"]["line"]["color"])
    assert len(colours) == 1  # a network keeps its colour whichever networks the task allows


def test_the_plotted_curves_are_the_runs_logs():
    at = play_to(page(), BUDGET)
    assert not at.exception
    architectures = at.session_state["architectures"]
    assert [run.steps_done for run in architectures.runs] == [BUDGET] * 5
    assert any(f"reached step {BUDGET}" in s.value for s in at.success)
    log = architectures.log_frame()
    loss = {t["name"]: t for t in chart(at, "Held-out loss of each network")["data"]}
    by_length = {t["name"]: t for t in chart(at, "Held-out accuracy against length")["data"]}
    lengths = architectures.by_length_frame()
    for run in architectures.runs:
        rows = log[log.run == run.name]
        assert list(rows.step) == [0, RECORD_EVERY, BUDGET]
        assert plotted(loss[run.name]["x"]) == list(rows.step)
        assert plotted(loss[run.name]["y"]) == pytest.approx(list(rows.loss), rel=1e-6)
        measured = lengths[lengths.run == run.name]
        assert set(measured.step) == {BUDGET}
        assert plotted(by_length[run.name]["x"]) == list(measured.length)
        assert plotted(by_length[run.name]["y"]) == pytest.approx(list(measured.accuracy), rel=1e-6)
    assert plotted(by_length["chance"]["y"]) == pytest.approx([1 / architectures.task.symbols] * 2)
    bars, written = chart(at, "Wall-clock time per training step")["data"]
    times = architectures.timing_frame()
    assert plotted(bars["y"]) == list(times.run) == plotted(written["y"])
    assert plotted(bars["x"]) == pytest.approx(list(times.ms), rel=1e-6)
    assert plotted(written["text"]) == [f" {ms:.1f} ms" for ms in times.ms]
    assert times.steps.tolist() == [BUDGET] * 5
    for run, ms in zip(architectures.runs, times.ms, strict=True):
        assert ms == pytest.approx(1000 * np.median(run.step_seconds), rel=1e-9)
    table = shown_table(at)
    assert list(table["held-out accuracy"]) == pytest.approx(list(log[log.step == BUDGET].metric), rel=1e-6)
    assert list(table["ms per step"]) == pytest.approx(list(times.ms), rel=1e-6)


def test_a_bad_choice_gets_a_clear_message_and_nothing_is_lost():
    at = page()
    at.button(key="arch_step").click().run()
    trained = at.session_state["architectures"]
    choose(at, 2000, 5_000)  # a lag longer than any sequence the app runs
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert "lag must be between 1 and 1999, got 2000" in error and "goes on as it was" in error
    assert at.session_state["architectures"] is trained and trained.steps_done == 1
    assert any("lag 40" in m.value for m in at.markdown if m.value.startswith("**Comparing:**"))
    at.selectbox(key="arch_task").set_value("charlm").run()
    lm = at.session_state["architectures"]
    lm.step()
    choose(at, 2000, 200_000)  # too heavy for a shared CPU
    [error] = [e.value for e in at.error]
    assert "over this app's limit" in error and at.session_state["architectures"] is lm and lm.steps_done == 1
    choose(at, 16, 15_000)  # a good choice clears the message and starts afresh
    assert not at.error and at.session_state["architectures"].choice == Choice("charlm", 16, 15_000)
