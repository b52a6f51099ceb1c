"""The Gates page plots the recording's own gate values, for the layer and direction chosen."""
import pytest
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.charts import gates as cgates
from app.widgets.controls import duration

from .conftest import MAIN, chart, plotted

GATES = nav.PATHS["gates"]


def page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run().switch_page(GATES).run()


def heatmaps(at: AppTest) -> list[dict]:
    return [t for t in chart(at, "Gates of layer")["data"] if t["type"] == "heatmap"]


def z_of(trace: dict) -> list:
    """A heatmap's z, flattened row by row (units x time), for pytest.approx."""
    z = trace["z"]
    rows = plotted(z) if isinstance(z, dict) else z
    return [v for row in rows for v in row]


def test_the_heatmaps_are_the_recorded_gates_and_the_cell_state():
    at = page({"task": "recall"})
    assert not at.exception
    lab = at.session_state["lab"]
    for _ in range(5):
        lab.step()
    at.run()
    rec = lab.recording(0)
    panels = heatmaps(at)
    assert len(panels) == 5  # i, f, g, o and c_t
    for panel, values in zip(panels, [rec.gates[g][0, 0] for g in "ifgo"] + [rec.cell[0, 0]]):
        assert z_of(panel) == pytest.approx(values.T.flatten().tolist(), rel=1e-6)  # units x time
    assert "S" in " ".join(str(t) for t in chart(at, "Gates of layer")["layout"]["xaxis"].get("ticktext", []))


def test_choosing_the_backward_direction_of_the_second_layer_shows_it():
    at = page({"task": "parity", "arch": "gru", "num_layers": "2", "bidirectional": "true"})
    lab = at.session_state["lab"]
    at.number_input(key="layer").set_value(1).run()
    at.radio(key="direction").set_value("backward").run()
    rec = lab.recording(0)
    panels = heatmaps(at)
    assert len(panels) == 3  # r, z, n
    for panel, gate in zip(panels, "rzn"):
        assert z_of(panel) == pytest.approx(rec.gates[gate][1, 1].T.flatten().tolist(), rel=1e-6)


def test_a_vanilla_rnn_is_told_where_the_gates_are():
    at = page({"arch": "rnn", "forget_bias": "none"})
    assert not at.exception
    assert "no gates" in at.info[0].value and not at.get("plotly_chart")


def test_token_ticks_are_escaped_once():
    """Issue 12, item 7: "<pad>" showed as "&lt;pad&gt;" (escaped twice: by the page and the chart)."""
    at = page({"task": "sentiment", "hidden_size": "8"})
    assert not at.exception
    ticks = chart(at, "Gates of layer")["layout"]["xaxis"]["ticktext"]
    assert "&lt;pad&gt;" in ticks and not any("&amp;" in tick for tick in ticks)


def test_a_gru_is_spoken_of_as_a_gru():
    """Issue 12, item 7: a GRU's caption spoke of forget and input gates, its download of c_t."""
    at = page({"task": "parity", "arch": "gru"})
    assert not at.exception
    words = " ".join(c.value for c in at.caption) + " " + " ".join(b.label for b in at.get("download_button"))
    assert "forget gate" not in words and "input gate" not in words and "c_t" not in words
    assert "update gate z_t" in words
    assert "Gates (.csv)" in [b.label for b in at.get("download_button")]
    lstm = page({"task": "recall"})
    assert "Gates and c_t (.csv)" in [b.label for b in lstm.get("download_button")]


def test_a_peephole_lstm_shows_its_peephole_terms():
    """Issue 12, item 7: the equations of a peephole LSTM left its peepholes out."""
    at = page({"task": "recall", "peephole": "true", "hidden_size": "8", "lag": "5"})
    assert not at.exception
    latex = at.get("latex")[0].proto.body  # st.latex is markdown with the body in $$
    for term in (r"w_{ci} \odot c_{t-1}", r"w_{cf} \odot c_{t-1}", r"w_{co} \odot c_t"):
        assert term in latex
    assert latex.index("c_t &=") < latex.index("o_t &=")  # o_t sees the new c_t, so it comes after
    plain = page({"task": "recall", "hidden_size": "8", "lag": "5"}).get("latex")[0].proto.body
    assert "w_{c" not in plain


def test_the_gates_page_says_how_well_the_network_does_on_held_out_data():
    """Its lesson promises the network is "right every time": the page shows the held-out accuracy."""
    from app.session.lessons import BY_KEY

    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params.update(BY_KEY["lstm-gates"].setup.to_query())
    at.run()
    at.switch_page(GATES).run()
    lab = at.session_state["lab"]
    held = lab.held_out.log.last
    assert any(f"Held-out accuracy {held['metric']:.3f}" in c.value for c in at.caption)


def test_a_layer_normalised_lstm_with_zoneout_shows_both_equations_and_opens_its_gates():
    from engine.cells import EQUATIONS

    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in {"task": "adding", "arch": "lstm", "hidden_size": "8", "layer_norm": "true", "zoneout": "0.1"}.items():
        at.query_params[k] = v
    at.run().switch_page(nav.PATHS["gates"]).run()
    assert not at.exception
    shown = "\n".join(e.value for e in at.latex)  # each wrapped in $$ ... $$
    assert EQUATIONS["layer_norm"] in shown and EQUATIONS["zoneout"] in shown


def test_each_figure_is_drawn_once_per_recording_and_choice(monkeypatch):
    """A rerun that moved nothing, and going back to a sample, send the figures drawn before
    (app/charts/views.py); a step of training is a new recording, drawn anew."""
    drawn = []
    real = cgates.gate_heatmaps
    monkeypatch.setattr(cgates, "gate_heatmaps", lambda rec, *a: drawn.append(rec) or real(rec, *a))
    at = page()
    at.run()
    assert len(drawn) == 1
    at.number_input(key="probe_index").set_value(1).run()
    at.number_input(key="probe_index").set_value(0).run()
    assert not at.exception and len(drawn) == 2
    lab = at.session_state["lab"]
    assert z_of(heatmaps(at)[1]) == pytest.approx(lab.recording(0).gates["f"][0, 0].T.flatten().tolist(), rel=1e-6)
    lab.step()
    at.run()
    assert len(drawn) == 3 and drawn[-1] is lab.recording(0)


def test_a_playing_gates_page_shows_its_progress_and_the_time_left_at_its_pace():
    """The GRU lesson trained two minutes on Gates with nothing saying how far it was: the live
    fragment draws "step N of M" and, once two ticks have trained, the time left at the page's own
    pace (steps per second of wall time over its last ticks, playback.Pace)."""
    from app.widgets import state

    from .test_page_reruns import tick

    at = page({"task": "recall", "arch": "gru"})
    at.session_state[state.TARGET_STEPS] = 400
    at.run()
    lab = at.session_state["lab"]
    lab.pace.clock = map(float, range(100, 10_000, 2)).__next__  # 2 s a tick
    assert [p.proto.text for p in at.get("progress")] == ["step 0 of 400"]  # paused: no time to go
    lab.playing = True
    at.run()
    for _ in range(3):
        drawn = tick(at)
    marks = list(lab.pace.marks)
    (t0, s0), (t1, s1) = marks[0], marks[-1]
    # the last tick drew step s1 (its mark) and then trained on: its line was drawn with s1's pace
    eta = (400 - s1) * (t1 - t0) / (s1 - s0)  # s
    [line] = [p.proto.text for p in drawn.get("progress")]
    assert line == f"step {s1:,} of 400 · about {duration(eta)} to go at this pace"


@pytest.mark.parametrize(("seconds", "said"), [(39.6, "40 s"), (185, "3 min 5 s"), (4800, "1 h 20 min")])
def test_a_wait_reads_at_a_glance(seconds, said):
    assert duration(seconds) == said
