"""How long a playing page trains between two redraws: a share of the tick, so a page whose
figures take long to draw still trains most of the time, and a click never waits long."""
import pytest

from app.widgets.controls import MAX_TRAIN_SECONDS, TRAIN_SECONDS, train_seconds


@pytest.mark.parametrize("drawn, expected", [(0.0, TRAIN_SECONDS), (0.05, TRAIN_SECONDS), (0.2, 0.6),
                                             (0.4, MAX_TRAIN_SECONDS), (3.0, MAX_TRAIN_SECONDS)])
def test_training_takes_three_quarters_of_a_tick_within_its_bounds(drawn, expected):
    assert train_seconds(drawn) == pytest.approx(expected)


def test_a_page_that_asks_for_longer_ticks_keeps_its_own_least():
    assert train_seconds(0.0, least=1.0) == 1.0 and train_seconds(2.0, least=1.0) == 1.0  # Compare cells
