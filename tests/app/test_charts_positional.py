"""The positional-encoding figures plot exactly engine.positional_encoding, its dot products
PE PE^T, and a model's learned table, and state the course's worked value."""
import json
import math

import numpy as np
import pytest

import engine
from app.charts import positional as cp

from .conftest import plotted


def spec(fig) -> dict:
    return json.loads(fig.to_json())


def z_of(trace: dict) -> np.ndarray:
    return np.array(plotted(trace["z"]))


def test_the_heatmap_is_the_engines_encoding_exactly():
    fig = spec(cp.encoding_heatmap(40, 512))
    (heatmap,) = fig["data"]
    assert heatmap["z"]["dtype"] == "f4"
    assert np.array_equal(z_of(heatmap), engine.positional_encoding(40, 512).numpy())
    assert (heatmap["zmin"], heatmap["zmax"]) == (-1, 1)
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("dimension i")
    assert fig["layout"]["yaxis"]["title"]["text"] == "position pos"
    assert "PE = %{z:.6g}" in heatmap["hovertemplate"]


def test_the_course_worked_value_is_framed_and_stated():
    fig = spec(cp.encoding_heatmap())  # d = 512, position 22, dimensions 100 and 101
    angle = 22 / 10000 ** (100 / 512)  # by hand: 3.6407
    (note,) = fig["layout"]["annotations"]
    text = note["text"].replace("<br>&nbsp;&nbsp;", " ")  # each value under its formula
    assert f"PE(22, 100) = sin(22 / 10000<sup>100/512</sup>) = {math.sin(angle):.4f} (course: ≈ -0.488)" in text
    assert f"PE(22, 101) = cos(22 / 10000<sup>100/512</sup>) = {math.cos(angle):.4f} (course: ≈ -0.873)" in text
    (frame,) = fig["layout"]["shapes"]
    assert (frame["x0"], frame["x1"], frame["y0"], frame["y1"]) == (99.5, 101.5, 21.5, 22.5)
    with pytest.raises(ValueError, match="pos must be"):
        cp.encoding_heatmap(20, 512)  # position 22 is not drawn


def test_curves_are_columns_of_the_encoding_with_the_position_marked():
    pe = engine.positional_encoding(64, 512).numpy()
    fig = spec(cp.dimension_curves(64, 512, dims=(0, 1, 100)))
    curves, marks = fig["data"][:3], fig["data"][3]
    for curve, dim in zip(curves, (0, 1, 100)):
        assert plotted(curve["y"]) == pe[:, dim].tolist()
    assert plotted(marks["x"]) == [22, 22, 22] and plotted(marks["y"]) == pe[22, [0, 1, 100]].tolist()
    assert [c["line"]["dash"] for c in curves] == ["solid", "dot", "solid"]  # sin solid, cos dotted


def test_the_dot_product_map_is_pe_times_its_transpose():
    pe = engine.positional_encoding(48, 128).float()
    fig = spec(cp.position_similarity(48, 128))
    z = z_of(fig["data"][0])
    assert np.array_equal(z, (pe @ pe.T).numpy())
    assert np.diag(z) == pytest.approx(np.full(48, 64.0), rel=1e-5)  # d/2: sin^2 + cos^2 per pair
    assert z[10, 11] > z[10, 20]  # near positions alike
    assert "d/2 = 64" in fig["layout"]["title"]["subtitle"]["text"]


def test_learned_positions_are_shown_beside_the_sinusoid():
    task = engine.make_task("reverse", seed=0)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=4, num_layers=1,
                             position_encoding="learned")
    model = engine.build_model(cfg, task, seed=0)
    table = model.positions.table.weight
    fig = spec(cp.learned_vs_sinusoidal(table, 9))
    learned, sinusoid = fig["data"]
    assert np.array_equal(z_of(learned), table[:9].detach().numpy())
    assert np.array_equal(z_of(sinusoid), engine.positional_encoding(9, 32).numpy())
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["learned (trained)", "sinusoidal"]
    with pytest.raises(ValueError, match="max_len"):
        cp.learned_vs_sinusoidal(table, 0)
