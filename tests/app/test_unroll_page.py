"""The Unroll page plots the recording at the step the slider says, and moving the slider only
redraws: the model is not recorded again."""
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app import pages as nav

from .conftest import MAIN, chart, plotted

UNROLL = nav.PATHS["unroll"]


def page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run().switch_page(UNROLL).run()


def shown_step(at: AppTest) -> int:
    said = [m.value for m in at.markdown if "At step" in m.value]
    return int(re.search(r"t = (\d+)\*\*", said[0]).group(1))


def framed_steps(at: AppTest) -> set[float]:
    shapes = chart(at, "Hidden units over time")["layout"]["shapes"]
    return {(s["x0"] + s["x1"]) / 2 for s in shapes if s["type"] == "rect"}


def test_moving_the_slider_moves_the_framed_step_without_recording_again(monkeypatch):
    at = page({"task": "adding", "seq_len": "20"})
    assert not at.exception
    lab = at.session_state["lab"]
    for _ in range(3):
        lab.step()
    at.run()
    assert shown_step(at) == 0 and framed_steps(at) == {0}
    rec = lab.recording(0)
    calls = []
    monkeypatch.setattr("engine.record", lambda *a, **k: calls.append(a))  # any new recording would show here
    at.slider(key="unroll_t").set_value(13).run()
    assert not at.exception and not calls
    assert shown_step(at) == 13 and framed_steps(at) == {13}
    bars = chart(at, "c_t at t = 13")["data"]
    assert plotted(bars[0]["y"]) == pytest.approx(rec.hidden[0, 0, 13].tolist(), rel=1e-6)
    assert plotted(bars[1]["y"]) == pytest.approx(rec.cell[0, 0, 13].tolist(), rel=1e-6)
    gates = chart(at, "Gates at t = 13")["data"]
    for bar, gate in zip(gates, "ifgo"):
        assert plotted(bar["y"]) == pytest.approx(rec.gates[gate][0, 0, 13].tolist(), rel=1e-6)
    heat = [d for d in chart(at, "Hidden units over time")["data"] if d["type"] == "heatmap"][0]
    assert np.allclose(plotted(heat["z"]), rec.hidden[0, 0].T.numpy(), rtol=1e-6)
    said = [m.value for m in at.markdown if "At step" in m.value][0]
    assert f"{rec.x[13, 0].item():.3g}" in said


def test_the_page_never_sends_the_slider_back_the_step_it_sent():
    """Issue 12, item 5: arrow presses on the time slider were lost (25 landed on 23). A value the
    script writes to the slider's key is sent back to it and moves its thumb there; during a burst
    of presses the thumb has moved on meanwhile. Only a step the script itself moves (Play) is
    sent (benchmarks/unroll_speed.py measures the presses in chromium)."""
    at = page({"task": "parity"})
    for t in (1, 2, 3):
        at.slider(key="unroll_t").set_value(t).run()
        assert shown_step(at) == t and not at.slider(key="unroll_t").proto.set_value
    at.button(key="unroll_play").click().run()  # Play moves t on: that step is the script's to send
    assert shown_step(at) == 4 and at.slider(key="unroll_t").proto.set_value


def test_play_steps_through_time_and_stops_at_the_end():
    at = page({"task": "parity"})  # 10 steps
    at.button(key="unroll_play").click().run()
    assert shown_step(at) == 1  # each run of the playing fragment moves one step
    at.slider(key="unroll_t").set_value(9).run()  # the last step: playing stops there
    at.run()
    assert shown_step(at) == 9 and not at.session_state["unroll_playing"]
    assert at.button(key="unroll_play").label == "Play through time"


def test_a_bidirectional_stack_shows_both_directions_and_what_the_next_layer_reads():
    at = page({"task": "parity", "arch": "gru", "num_layers": "2", "bidirectional": "true"})
    assert not at.exception
    lab = at.session_state["lab"]
    at.number_input(key="layer").set_value(1).run()
    at.radio(key="direction").set_value("backward").run()
    at.slider(key="unroll_t").set_value(4).run()
    rec = lab.recording(0)
    joined = chart(at, "What the output reads at t = 4")["data"]
    assert [y for bar in joined for y in plotted(bar["y"])] == pytest.approx(
        rec.hidden[1, :, 4].flatten().tolist(), rel=1e-6)
    maps = [d for d in chart(at, "Hidden units over time, layer 1")["data"] if d["type"] == "heatmap"]
    assert len(maps) == 2 and framed_steps(at) == {4}
    for bar, gate in zip(chart(at, "Gates at t = 4")["data"], "rzn"):
        assert plotted(bar["y"]) == pytest.approx(rec.gates[gate][1, 1, 4].tolist(), rel=1e-6)


def test_the_text_is_coloured_by_the_chosen_unit():
    at = page({"task": "charlm"})
    assert not at.exception
    lab = at.session_state["lab"]
    rec = lab.recording(0)
    table = at.dataframe[0].value
    assert at.session_state["unroll_unit"] == table["unit"].iloc[0]  # the best lead comes first
    at.number_input(key="unroll_unit").set_value(7).run()
    text = at.get("html")[0].proto.body
    values = [float(v) for v in re.findall(r'title="t = \d+: ([^"]+)"', text)]
    assert values == pytest.approx(rec.hidden[0, 0, :, 7].tolist(), rel=1e-3, abs=1e-6)


def test_an_encoder_decoder_opens_either_stack():
    at = page({"task": "reverse"})
    at.radio(key="stack").set_value("decoder").run()
    assert not at.exception
    said = [m.value for m in at.markdown if "At step" in m.value][0]
    assert "reads **&lt;sos&gt;**" in said  # teacher forcing: the decoder starts from <sos>
    lab = at.session_state["lab"]
    rec = lab.recording(0)
    bars = chart(at, "h_t and c_t at t = 0")["data"]
    assert plotted(bars[0]["y"]) == pytest.approx(rec.stacks["decoder"].hidden[0, 0, 0].tolist(), rel=1e-6)


def test_play_at_the_last_step_starts_again_and_leaving_the_page_pauses():
    at = page({"task": "parity"})  # 10 steps
    at.slider(key="unroll_t").set_value(9).run()
    at.button(key="unroll_play").click().run()
    assert shown_step(at) == 1 and at.session_state["unroll_playing"]  # from the start, one step on
    at.switch_page(nav.PATHS["gates"]).run()
    at.switch_page(UNROLL).run()
    assert not at.session_state["unroll_playing"] and shown_step(at) == 1
    assert at.button(key="unroll_play").label == "Play through time"


def test_a_reversed_source_is_labelled_in_the_order_the_encoder_reads_it():
    at = page({"task": "reverse", "reverse_source": "true"})
    lab = at.session_state["lab"]
    source = [lab.task.vocab[i] for i in lab.probes.samples[0][0].tolist()]
    at.slider(key="unroll_t").set_value(2).run()
    said = [m.value for m in at.markdown if "At step" in m.value][0]
    assert f"reads **{source[::-1][2]}**" in said
    assert lab.symbols(0, "encoder") == source[::-1] and lab.symbols(0) == source


def test_a_decoder_has_no_direction_to_choose():
    at = page({"task": "reverse", "bidirectional": "true"})
    assert [r.key for r in at.radio] == ["stack", "direction"]
    at.radio(key="stack").set_value("decoder").run()
    assert [r.key for r in at.radio] == ["stack"] and not at.exception


def test_the_bidirectional_lesson_draws_the_states_its_head_reads():
    """Issue 12, item 3: on "What bidirectional buys you" the output reads h→_50 and h←_0 (which
    has read x_50..x_0), as model.describe() says; not [h→_50 ; h←_50]."""
    from app.session.lessons import BY_KEY

    at = page(BY_KEY["bidirectional"].setup.to_query())
    assert not at.exception
    at.slider(key="unroll_t").set_value(50).run()
    diagram = chart(at, "unrolled through time")
    reads = {a["name"]: a for a in diagram["layout"]["annotations"] if a.get("name", "").startswith("reads ")}
    assert set(reads) == {"reads h→_T", "reads h←_0"}
    assert reads["reads h→_T"]["ax"] > 49 and reads["reads h←_0"]["ax"] < 42  # h←_0 comes in from step 0
    assert "ŷ<sub>50</sub> reads [h→<sub>50</sub> ; h←<sub>0</sub>]" in diagram["layout"]["title"]["subtitle"]["text"]
    joined = chart(at, "What the output reads")
    assert "[h→_50 ; h←_0]" in joined["layout"]["title"]["text"]
    assert [bar["name"] for bar in joined["data"]] == ["h→_50 (read x_0..x_50)", "h←_0 (read x_50..x_0)"]
    lab = at.session_state["lab"]
    rec = lab.recording(0)
    assert [y for bar in joined["data"] for y in plotted(bar["y"])] == pytest.approx(
        rec.hidden[0, 0, 50].tolist() + rec.hidden[0, 1, 0].tolist(), rel=1e-6)
    assert any("h←_0, which has read the sample from its end back to its start" in c.value for c in at.caption)


def test_a_decoder_heatmap_labels_sos_once_escaped():
    """Issue 12, item 7: the tick read "&lt;sos&gt;" (escaped twice) under the decoder's heatmap."""
    at = page({"task": "reverse"})
    at.radio(key="stack").set_value("decoder").run()
    ticks = chart(at, "Hidden units over time")["layout"]["xaxis"]["ticktext"]
    assert ticks[0] == "&lt;sos&gt;" and not any("&amp;" in tick for tick in ticks)


def test_padding_is_greyed_labelled_and_left_out_of_the_unit_hunt():
    """Issue 12, items 7 and 10: a review's pad steps are shown as padding, and "is padding" no
    longer leads the sentiment unit hunt (on pads the state only passes through)."""
    at = page({"task": "sentiment", "hidden_size": "8"})
    assert not at.exception
    lab = at.session_state["lab"]
    symbols = lab.symbols(0)
    pads = [s == lab.task.pad_symbol for s in symbols]
    assert any(pads) and not all(pads), "probe sample 0 should be a padded review"
    heat = chart(at, "Hidden units over time")
    grey = [s for s in heat["layout"]["shapes"] if s.get("name") == "padding"]
    covered = {step for s in grey for step in range(int(s["x0"] + 0.5), int(s["x1"] + 0.5))}
    assert covered == {step for step, pad in enumerate(pads) if pad}
    assert "padding" in heat["layout"]["title"]["subtitle"]["text"]
    assert "is padding" not in set(at.dataframe[0].value["feature"])
    text = at.get("html")[0].proto.body
    titles = re.findall(r'title="t = (\d+): [^"]*?(\(padding[^"]*)?"', text)
    assert [bool(padding) for _, padding in titles] == pads
    first = pads.index(True)
    at.slider(key="unroll_t").set_value(first).run()
    said = [m.value for m in at.markdown if "At step" in m.value][0]
    assert "(padding: no data" in said
