"""The Gradients page plots the recording's own numbers, recorded once per model state."""
import pytest
from streamlit.testing.v1 import AppTest

import nav
from lab import RECORD_EVERY

from .conftest import MAIN, chart, plotted

GRADIENTS = nav.PATHS["gradients"]


def page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run().switch_page(GRADIENTS).run()


def trace(spec: dict, name: str) -> dict:
    return next(t for t in spec["data"] if t.get("name") == name)


def test_the_plotted_gradients_are_the_recording_of_the_sample_chosen():
    at = page()
    lab = at.session_state["lab"]
    for _ in range(30):
        lab.step()
    at.run()
    assert not at.exception
    rec = lab.recording(0)
    line = trace(chart(at, "BPTT"), "layer 0 →")
    assert plotted(line["y"]) == pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert plotted(line["x"]) == list(range(rec.seq_len))
    at.number_input(key="probe_index").set_value(3).run()
    other = lab.recording(3)
    line = trace(chart(at, "BPTT"), "layer 0 →")
    assert plotted(line["y"]) == pytest.approx(other.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert plotted(line["y"]) != pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert lab.trainer.steps_done == 30  # looking never trains
    assert lab.recording(3) is other  # nor records again until the model changes


def test_the_gradient_log_holds_a_row_every_record_every_steps():
    at = page()
    lab = at.session_state["lab"]
    for _ in range(2 * RECORD_EVERY):
        lab.step()
    at.run()
    log = lab.gradient_frame()
    assert list(log.step) == [0, RECORD_EVERY, 2 * RECORD_EVERY]
    ratio = chart(at, "How much gradient reaches the first step")["data"][0]
    assert plotted(ratio["x"]) == list(log.step)
    assert plotted(ratio["y"]) == pytest.approx(list(log.ratio), rel=1e-6)
    # the logged ratio is that of a recording of the model as it was at that step
    assert log.ratio.iloc[-1] == pytest.approx(
        (lab.recording(0).grad_norm_h[0, 0, 0] / lab.recording(0).grad_norm_h[0, 0, -1]).item(), rel=1e-6
    )


def test_eigenvalues_plotted_are_those_of_w_hh():
    import torch

    at = page({"arch": "rnn", "forget_bias": "none"})
    lab = at.session_state["lab"]
    spec = chart(at, "Eigenvalues of W_hh")
    points = [t for t in spec["data"] if t.get("mode") == "markers"]
    plotted_moduli = sorted(abs(complex(x, y)) for t in points for x, y in zip(plotted(t["x"]), plotted(t["y"])))
    expected = sorted(torch.linalg.eigvals(lab.model.rnn.weight_hh_l0.detach()).abs().tolist())
    assert plotted_moduli == pytest.approx(expected, rel=1e-5)
    assert any("theory" in t.get("name", "") for t in chart(at, "BPTT")["data"])  # a vanilla RNN


def test_an_encoder_decoder_shows_the_stack_chosen():
    at = page({"task": "reverse"})
    assert not at.exception
    at.radio(key="stack").set_value("decoder").run()
    rec = at.session_state["lab"].recording(0)
    line = trace(chart(at, "BPTT: the gradient reaching each step of the decoder"), "layer 0 →")
    assert plotted(line["y"]) == pytest.approx(rec.stacks["decoder"].grad_norm_h[0, 0].tolist(), rel=1e-6)
