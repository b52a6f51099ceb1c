"""What the gradient log measures on a recording."""
import pytest
import torch

from app.session.probes import first_step_ratios


def test_the_first_step_of_a_padded_sample_is_its_first_real_step():
    """Reviews are padded in front: t = 0 is a pad that only carries h_0, so the gradient there is
    one Jacobian further back than the first word; the ratio reads the first real step."""
    g = torch.tensor([[[1e-9, 1e-9, 2e-3, 5e-2, 1.0]]])  # [layers, directions, T]: two pads in front
    pads = torch.tensor([True, True, False, False, False])
    assert first_step_ratios(g, pads)["ratio"] == pytest.approx(2e-3)
    assert first_step_ratios(g)["ratio"] == pytest.approx(1e-9)
    both = torch.tensor([[[1e-9, 1e-9, 2e-3, 5e-2, 1.0], [0.0, 0.0, 0.5, 0.1, 0.2]]])
    assert first_step_ratios(both, pads)["ratio_backward"] == pytest.approx(0.2 / 0.5)  # reads t = 4 first, t = 2 last
