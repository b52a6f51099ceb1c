"""Captions quote measured figures only for the task on screen: the Gradients and Compare cells
captions quoted the adding problem's figures on every task (issue 12, item 7)."""
import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

from app import pages
from app.session.link import preset_setup
from app.session.measured import measured_cell, same_network

from .conftest import MAIN

ADDING_RNN = dataclasses.replace(preset_setup("adding"),
                                 model=dataclasses.replace(preset_setup("adding").model, arch="rnn"))
def figures(page: str) -> tuple[str, ...]:
    """What a page quotes for the adding problem, from the lessons that measured it: Compare cells, the
    four-cells lesson's ranges; Gradients, the Vanishing lesson's."""
    from app.session.lessons import BY_KEY

    if page == "compare":
        return (BY_KEY["four-cells"].caption("ratio"),)
    return (BY_KEY["vanishing"].claims["rnn.share_below_1e-6"].quote(),)


def words(setup, page: str) -> str:
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params.update(setup.to_query())
    at.run()
    at.switch_page(pages.PATHS[page]).run()
    assert not at.exception
    return " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("page", ["gradients", "compare"])
def test_the_adding_problems_figures_are_quoted_on_the_adding_problem_only(page):
    quoted = figures(page)
    assert all(quoted) and any(f in words(ADDING_RNN, page) for f in quoted)
    parity = preset_setup("parity")
    assert not same_network(parity) and not any(f in words(parity, page) for f in quoted)
    wider = dataclasses.replace(ADDING_RNN, model=dataclasses.replace(ADDING_RNN.model, hidden_size=32))
    assert not measured_cell(wider) and not any(f in words(wider, page) for f in quoted)
