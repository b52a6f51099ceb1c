"""Every log a page reads stays the same size however long the student trains: the held-out log,
the gradient log (it reached 40,001 rows and 12.5 MB at a million steps, and 20 ms to read per
rerun) and each compared cell's log."""
import numpy as np

from app.session.comparison import Comparison
from app.session.lab import Lab
from app.session.link import DEFAULT
from app.session.rows import MAX_ROWS, BoundedRows


def test_a_bounded_log_keeps_the_first_row_the_latest_quarter_and_older_rows_evenly():
    log = BoundedRows(max_rows=64)
    for n in range(10_000):
        log.append({"n": n})
        assert len(log) <= 64
    kept = [row["n"] for row in log.rows()]
    assert kept[0] == 0 and kept[-16:] == list(range(10_000 - 16, 10_000)) and log.last == {"n": 9999}
    gaps = np.diff(kept)
    assert (gaps > 0).all() and (np.diff(gaps) <= 0).all()  # in order, denser towards the present
    assert gaps[0] == log.stride > 1  # the oldest rows sit at the stride


def test_the_gradient_log_and_a_cells_log_are_bounded():
    lab = Lab(DEFAULT)
    for _ in range(MAX_ROWS + 300):
        lab.probes.measure()  # stands for RECORD_EVERY training steps: the bound is what is tested
    assert len(lab.probes.log_frame()) <= MAX_ROWS
    comparison = Comparison(DEFAULT, cells=("GRU",))
    run = comparison.runs[0]
    for _ in range(MAX_ROWS + 300):
        run.log.append({"run": run.name, "step": run.steps_done})
    assert len(comparison.log_frame()) <= MAX_ROWS

