"""The Compare cells page plots the comparison's own recordings and logs, and is tied to its setup."""
import dataclasses

import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session.comparison import CELLS, Comparison
from app.session.link import preset_setup
from app.session.probes import RECORD_EVERY

from .conftest import MAIN, chart, plotted
from .test_page_reruns import tick

COMPARE = nav.PATHS["compare"]
BUDGET = RECORD_EVERY + 5  # a record point and the budget's own last step


def page() -> AppTest:
    return AppTest.from_file(MAIN, default_timeout=60).run().switch_page(COMPARE).run()


def play_to_the_end(at: AppTest) -> AppTest:
    at.number_input(key="compare_steps").set_value(BUDGET).run()
    at.button(key="compare_play").click().run()
    for _ in range(100):  # each rerun while playing is one tick of training
        if not at.session_state["comparison"].playing:
            break
        tick(at)  # the live fragment's own run: only ticks train
    return at


def lines(spec: dict) -> dict[str, dict]:
    return {t["name"]: t for t in spec["data"] if t.get("name") in CELLS}


def test_play_trains_every_cell_to_the_budget_and_the_figures_show_the_comparisons_numbers():
    at = play_to_the_end(page())
    assert not at.exception
    comparison = at.session_state["comparison"]
    assert [run.steps_done for run in comparison.runs] == [BUDGET] * 4
    assert not comparison.playing and at.button(key="compare_play").label == "Play"
    assert any(f"reached step {BUDGET}" in s.value for s in at.success)
    # Issue 28, item 8: the sidebar's "steps trained: 0" is the Lab's, and the sidebar says so
    assert at.session_state["lab"].trainer.steps_done == 0
    assert any("does not train here" in c.value for c in at.sidebar.caption)

    through_time = lines(chart(at, "Vanishing gradients: four cells"))
    ratio = lines(chart(at, "How much gradient reaches the first step"))
    loss = lines(chart(at, "Loss of each cell over training"))
    log = comparison.log_frame()
    for run in comparison.runs:
        assert plotted(through_time[run.name]["y"]) == pytest.approx(run.curves[0].tolist(), rel=1e-6)
        assert plotted(through_time[run.name]["x"]) == list(range(len(run.curves[0])))
        rows = log[log.run == run.name]
        assert list(rows.step) == [0, RECORD_EVERY, BUDGET]
        assert plotted(ratio[run.name]["x"]) == list(rows.step)
        assert plotted(ratio[run.name]["y"]) == pytest.approx(list(rows.ratio), rel=1e-6)
        assert plotted(loss[run.name]["y"]) == pytest.approx(list(rows.loss), rel=1e-6)
    table = at.table[0].value  # the last measurement of each cell
    assert list(table.run) == list(CELLS) and list(table.step) == [BUDGET] * 4
    last = log[log.step == BUDGET]
    assert list(table["held-out loss"]) == pytest.approx(list(last.loss), rel=1e-6)
    assert list(table.iloc[:, 2]) == pytest.approx(list(last.ratio), rel=1e-6)
    baseline = next(t for t in chart(at, "Loss of each cell")["data"] if t.get("name") == "baseline")
    assert plotted(baseline["y"]) == pytest.approx([comparison.task.baseline_loss] * 2)


def test_reset_clears_every_run_and_its_log():
    at = play_to_the_end(page())
    at.button(key="compare_reset").click().run()
    comparison = at.session_state["comparison"]
    assert [run.steps_done for run in comparison.runs] == [0] * 4
    assert list(comparison.log_frame().step) == [0] * 4
    ratio = lines(chart(at, "How much gradient reaches the first step"))
    assert all(plotted(ratio[name]["x"]) == [0] for name in CELLS)


def test_a_trained_comparison_stays_with_its_setup_until_a_new_one_is_asked_for():
    at = play_to_the_end(page())
    trained = at.session_state["comparison"]
    at.session_state["lab"].change(preset_setup("parity"))  # as Build & Train would
    at.run()
    assert at.session_state["comparison"] is trained and trained.setup.task == "adding"
    assert any("has changed" in w.value for w in at.warning)
    assert any("adding (seq_len 50)" in m.value for m in at.markdown)
    at.button(key="compare_new").click().run()
    fresh = at.session_state["comparison"]
    assert fresh is not trained and fresh.compares(preset_setup("parity")) and not fresh.trained
    assert at.number_input(key="compare_steps").value == engine.TASKS["parity"].preset.steps
    assert not at.warning


def test_an_untrained_comparison_follows_the_students_setup():
    at = page()
    first = at.session_state["comparison"]
    lab = at.session_state["lab"]
    lab.change(dataclasses.replace(lab.setup, task_params={"seq_len": 20}))
    at.run()
    assert at.session_state["comparison"] is not first
    assert at.session_state["comparison"].setup.task_params == {"seq_len": 20} and not at.warning


def test_a_bidirectional_comparison_plots_both_directions_and_says_what_the_backward_first_step_is():
    """Issue 12, item 4: each cell's backward direction drawn (dashed) beside its forward one."""
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["bidirectional"] = "true"
    at.query_params["hidden_size"] = "8"
    at = play_to_the_end(at.run().switch_page(COMPARE).run())
    assert not at.exception
    comparison = at.session_state["comparison"]
    log, curves = comparison.log_frame(), comparison.curves_frame()
    ratio = {t["name"]: t for t in chart(at, "How much gradient reaches the first step")["data"]}
    through_time = {t["name"]: t for t in chart(at, "Vanishing gradients: four cells")["data"]}
    for run in comparison.runs:
        rows = log[log.run == run.name]
        backward = f"{run.name} ← (first step read: t = T−1)"
        assert plotted(ratio[f"{run.name} →"]["y"]) == pytest.approx(list(rows.ratio), rel=1e-6)
        assert plotted(ratio[backward]["y"]) == pytest.approx(list(rows.ratio_backward), rel=1e-6)
        assert plotted(through_time[backward]["y"]) == pytest.approx(run.curves[1].tolist(), rel=1e-6)
        assert plotted(through_time[f"{run.name} →"]["y"]) == pytest.approx(run.curves[0].tolist(), rel=1e-6)
        assert list(curves[(curves.run == run.name) & (curves.direction == "backward")].value) == pytest.approx(
            run.curves[1].tolist(), rel=1e-6)
    table = at.table[0].value
    assert list(table["← ‖∂L/∂h_T‖ / ‖∂L/∂h_1‖"]) == pytest.approx(list(log[log.step == BUDGET].ratio_backward),
                                                                  rel=1e-6)
    assert any("the first step it reads is the last position, t = T−1" in c.value for c in at.caption)


def test_cells_that_diverge_open_and_the_page_says_which():
    """Issue 12, item 5c: a ReLU RNN from the identity at lr 1, plain SGD, no clipping: every cell of
    this setup diverges; one measured at its last finite weights overflows, and the page says so."""
    from app.session.lessons import BY_KEY

    at = page()
    lab = at.session_state["lab"]
    exploding = BY_KEY["exploding"].setup
    lab.start(dataclasses.replace(exploding, train=dataclasses.replace(exploding.train, lr=1.0)))
    at.run()  # a fresh comparison of that setup
    at.number_input(key="compare_steps").set_value(1).run()  # each cell measured at its step 1
    at.button(key="compare_play").click().run()
    for _ in range(20):
        if not at.session_state["comparison"].playing:
            break
        tick(at)  # the live fragment's own run: only ticks train
    assert not at.exception
    comparison = at.session_state["comparison"]
    relu = comparison.runs[list(CELLS).index("ReLU RNN")]
    assert relu.steps_done == 1 and relu.log.last["step"] == 1
    assert not torch.isfinite(relu.curves).any()
    [warning] = [w.value for w in at.warning if "overflow" in w.value]
    assert warning.startswith("The ReLU RNN's gradient on the probe sample overflowed at its last measurement (step 1)")
    at.number_input(key="compare_steps").set_value(30).run()
    at.button(key="compare_play").click().run()
    for _ in range(50):
        if not at.session_state["comparison"].playing:
            break
        tick(at)  # the live fragment's own run: only ticks train
    assert not at.exception
    assert comparison.stopped() == comparison.runs  # all four diverged at this learning rate
    errors = [e.value for e in at.error]
    for run in comparison.runs:
        [said] = [e for e in errors if e.startswith(f"**The {run.name} diverged at step {run.trainer.diverged_at}**")]
        assert "so did every other cell" in said and "train on" not in said
    chart(at, "Vanishing gradients")
    chart(at, "How much gradient reaches the first step")


def test_the_initialisation_lesson_opens_its_three_starts_and_the_page_plots_them():
    """Opened from Home, the lesson's comparison is of initialisations: its three starts on its setup,
    the banner, the budget; played, each start's numbers are the ones drawn; the captions quote the
    lesson's figures for these runs only, and the four cells come back on the student's choice."""
    from app.session.lessons import BY_KEY

    lesson = BY_KEY["initialisation"]
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    at.button(key="lesson.initialisation").click().run()
    assert not at.exception
    assert lesson.title in at.info[0].value and at.session_state["compare_kind"] == "initialisations"
    comparison = at.session_state["comparison"]
    starts = ["PyTorch default", "orthogonal", "identity (IRNN)"]
    assert comparison.kind == "initialisations" and [run.name for run in comparison.runs] == starts
    assert comparison.setup == lesson.setup and at.number_input(key="compare_steps").value == lesson.steps
    assert any("ReLU RNN, 1 layer × 64 units" in m.value for m in at.markdown)
    measured = lesson.caption("loss")  # the lesson's ranges, from its data file, for exactly these runs
    assert measured and any(measured in c.value for c in at.caption)
    at.number_input(key="compare_steps").set_value(BUDGET).run()
    at.button(key="compare_play").click().run()
    for _ in range(100):
        if not at.session_state["comparison"].playing:
            break
        tick(at)
    assert [run.steps_done for run in comparison.runs] == [BUDGET] * 3
    through_time = {t["name"]: t for t in chart(at, "Vanishing gradients: three starts")["data"]}
    loss = {t["name"]: t for t in chart(at, "Loss of each start over training")["data"]}
    log = comparison.log_frame()
    for run in comparison.runs:
        assert plotted(through_time[run.name]["y"]) == pytest.approx(run.curves[0].tolist(), rel=1e-6)
        assert plotted(loss[run.name]["y"]) == pytest.approx(list(log[log.run == run.name].loss), rel=1e-6)
    assert any(f"Every start reached step {BUDGET}" in s.value for s in at.success)

    at.session_state["lab"].change(dataclasses.replace(lesson.setup, task_params={"seq_len": 60}))
    at.run()
    at.button(key="compare_new").click().run()  # the student's own setup: nothing measured to quote
    assert at.session_state["comparison"].kind == "initialisations"
    assert not any(measured in c.value for c in at.caption)
    at.button_group(key="compare_kind").set_value("cells").run()
    assert [run.name for run in at.session_state["comparison"].runs] == list(CELLS)
    assert chart(at, "Vanishing gradients: four cells") and not at.exception


def opened_and_stepped(key: str, kind: str, chart_title: str) -> tuple[AppTest, Comparison, list[str]]:
    """Lesson `key` opened from Home: its banner, its comparison of `kind` on its setup and budget;
    then one Step, after which every run's gradient curve is the one drawn. Also the captions as
    the lesson opened (before the step: what the lesson's own runs measured)."""
    from app.session.lessons import BY_KEY

    lesson = BY_KEY[key]
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    at.button(key=f"lesson.{key}").click().run()
    assert not at.exception and lesson.title in at.info[0].value
    comparison = at.session_state["comparison"]
    assert comparison.kind == kind and comparison.setup == lesson.setup
    assert at.number_input(key="compare_steps").value == lesson.steps
    captions = [c.value for c in at.caption]
    at.button(key="compare_step").click().run()
    assert [run.steps_done for run in comparison.runs] == [1] * len(comparison.runs)
    through_time = {t["name"]: t for t in chart(at, chart_title)["data"]}
    for run in comparison.runs:
        assert plotted(through_time[run.name]["y"]) == pytest.approx(run.curves[0].tolist(), rel=1e-6)
    return at, comparison, captions


def test_the_echo_state_lesson_opens_five_reservoirs_whose_read_outs_alone_train():
    at, comparison, captions = opened_and_stepped("echo-state", "reservoirs",
                                                  "Vanishing or exploding gradients: five reservoirs")
    assert len(comparison.runs) == 5
    from app.session.lessons import BY_KEY

    measured = BY_KEY["echo-state"].caption("loss")  # the lesson's ranges, for exactly these runs
    assert measured and any(measured in c for c in captions)
    assert any("tanh RNN reservoirs, 1 layer × 64 units" in m.value for m in at.markdown)


def test_the_layer_norm_lesson_opens_the_rnn_without_and_with_layer_norm_and_zoneout():
    from app.session.lessons import BY_KEY

    at, comparison, captions = opened_and_stepped("layer-norm", "normalisation", "Vanishing gradients: four variants")
    assert [run.name for run in comparison.runs] == ["without", "layer norm", "zoneout 0.5", "both"]
    assert any("tanh RNN, 1 layer × 64 units" in m.value for m in at.markdown)
    lesson = BY_KEY["layer-norm"]
    ratio, loss = lesson.caption("ratio"), lesson.caption("loss")  # the lesson's ranges, for exactly these runs
    assert ratio and any(ratio in c for c in captions) and loss and any(loss in c for c in captions)

    at.session_state["lab"].change(dataclasses.replace(lesson.setup, task_params={"seq_len": 20}))
    at.run()
    at.button(key="compare_new").click().run()  # the student's own setup: nothing measured to quote
    assert at.session_state["comparison"].kind == "normalisation"
    assert not any(loss in c.value or ratio in c.value for c in at.caption)


def test_each_kinds_runs_are_kept_while_another_kind_is_looked_at_and_on_other_pages():
    """Switching what the runs differ in sets the trained comparison aside, paused, and switching back
    finds it as it was; the choice and its runs outlive a visit to another page."""
    at = page()
    at.button(key="compare_step").click().run()
    cells = at.session_state["comparison"]
    assert cells.kind == "cells" and cells.steps_done == 1
    at.button_group(key="compare_kind").set_value("initialisations").run()
    starts = at.session_state["comparison"]
    assert starts.kind == "initialisations" and starts.steps_done == 0
    at.button(key="compare_step").click().run()
    at.switch_page(nav.PATHS["build"]).run()
    at.switch_page(COMPARE).run()
    assert at.session_state["compare_kind"] == "initialisations" and at.session_state["comparison"] is starts
    at.button_group(key="compare_kind").set_value("cells").run()
    assert at.session_state["comparison"] is cells and cells.steps_done == 1 and not cells.playing
    assert [run.steps_done for run in starts.runs] == [1] * len(starts.runs)
    assert not at.exception


def test_a_rerun_that_moved_nothing_sends_the_figures_as_drawn_and_a_step_redraws_them(monkeypatch):
    from app.charts import runs as charts_runs

    drawn = []
    real = charts_runs.loss_over_training
    monkeypatch.setattr(charts_runs, "loss_over_training",
                        lambda log, *a, **kw: drawn.append(len(log)) or real(log, *a, **kw))
    at = page()
    at.run()
    assert len(drawn) == 1
    at.button(key="compare_step").click().run()
    assert not at.exception and len(drawn) == 2
    comparison = at.session_state["comparison"]
    shown = {t["name"]: t for t in chart(at, "Loss of each cell")["data"]}
    log = comparison.log_frame()
    for run in comparison.runs:
        assert plotted(shown[run.name]["y"]) == pytest.approx(log[log["run"] == run.name]["loss"].tolist(), rel=1e-6)
