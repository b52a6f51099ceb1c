"""The BPTT and RTRL page's figures plot the frames they are given: every gradient entry, the
online curve and its diamond, the cost grid's two sweeps, truncated BPTT's errors and full BPTT's
star at the floor."""
import numpy as np
import pandas as pd
import pytest

from app.charts import rtrl as charts

from .conftest import plotted


def test_the_scatter_has_every_entry_by_parameter_and_a_y_equals_x_line_over_them_all():
    entries = pd.DataFrame({"parameter": ["W_hh"] * 3 + ["b_o"], "bptt": [0.1, -0.4, 0.2, 0.05],
                            "rtrl": [0.1, -0.4, 0.2, 0.05]})
    fig = charts.same_gradient(entries).to_plotly_json()
    w_hh, b_o, line = fig["data"]
    assert (w_hh["name"], b_o["name"], line["name"]) == ("W<sub>hh</sub>", "b<sub>o</sub>", "y = x")
    assert plotted(w_hh["x"]) == [0.1, -0.4, 0.2] and plotted(b_o["y"]) == [0.05]
    assert plotted(line["x"]) == plotted(line["y"]) and plotted(line["x"])[1] >= 0.4  # reaches every point
    assert fig["layout"]["title"]["text"].startswith("All 4 gradient entries")


def test_the_online_figure_draws_every_step_and_bptt_at_the_chosen_one():
    online = pd.DataFrame({"t": [1, 2, 3, 4], "norm": [0.0, 0.2, 0.3, 0.25]})
    line, diamond = charts.online_gradient(online, 3, 0.3).to_plotly_json()["data"]
    assert plotted(line["x"]) == [1, 2, 3, 4] and plotted(line["y"]) == [0.0, 0.2, 0.3, 0.25]
    assert plotted(diamond["x"]) == [3] and plotted(diamond["y"]) == [0.3] and "1..3" in diamond["name"]


GRID = pd.DataFrame({
    "sweep": ["H", "H", "T", "both"], "H": [4, 8, 16, 16], "T": [40, 40, 20, 40], "P": [28, 88, 304, 304],
    "rtrl_ms": [0.1, 0.2, 0.5, 0.6], "bptt_ms": [0.02, 0.02, 0.03, 0.03],
    "rtrl_kb": [0.4, 2.8, 19.0, 19.0], "bptt_kb": [2.0, 3.5, 3.4, 6.7]})


@pytest.mark.parametrize("what, rtrl, bptt", [("memory", "rtrl_kb", "bptt_kb"), ("time", "rtrl_ms", "bptt_ms")])
def test_each_cost_panel_is_one_sweep_with_the_settings_own_point_in_both(what, rtrl, bptt):
    fig = charts.cost_figure(GRID, what).to_plotly_json()
    measured = [t for t in fig["data"] if t["mode"] == "lines+markers"]
    by_h = [t for t in measured if t["xaxis"] == "x"]
    by_t = [t for t in measured if t["xaxis"] == "x2"]
    assert [plotted(t["x"]) for t in by_h] == [[4, 8, 16]] * 2 and [plotted(t["x"]) for t in by_t] == [[20, 40]] * 2
    assert plotted(by_h[0]["y"]) == list(GRID[rtrl].iloc[[0, 1, 3]]) and plotted(by_t[1]["y"]) == list(
        GRID[bptt].iloc[[2, 3]])
    guides = [t for t in fig["data"] if t["mode"] == "lines"]
    if what == "memory":
        assert not guides
    else:  # H⁴ and H² through the largest H's measurement, over its last doubling
        h4, h2 = guides
        assert plotted(h4["x"]) == [8, 16] and np.allclose(plotted(h4["y"]), [0.6 / 16, 0.6])
        assert np.allclose(plotted(h2["y"]), [0.03 / 4, 0.03])


def test_truncation_draws_windows_below_t_and_full_bptt_at_the_floor_with_its_value():
    frame = pd.DataFrame({"window": [1, 2, 5, 10], "relative_error": [0.3, 0.1, 0.02, 4e-16],
                          "cosine": [0.95, 0.99, 0.999, 1.0]})
    line, star = charts.truncation_bias(frame, 10).to_plotly_json()["data"]
    assert plotted(line["x"]) == [1, 2, 5] and plotted(line["y"]) == [0.3, 0.1, 0.02]
    assert plotted(star["x"]) == [10] and plotted(star["y"]) == [pytest.approx(0.002)]  # a tenth of 0.02
    assert "error 4e-16" in star["name"]
