"""Every model the app can build opens on the Unroll and Gates pages: every task the app offers,
each mapping its parameters allow (sine forecasts or generates, parity answers at every step or
once), as a tanh RNN, an LSTM and a GRU, some bidirectional and some two layers deep (issue 12,
item 2: Unroll stopped on a vector-to-sequence model), the encoder-decoders with attention among
them; and a transformer on each kind of task, where those pages say what they open up instead."""
import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session import link

from .conftest import MAIN

SMALL = {  # each task's parameters, small enough that the whole file runs in about a minute
    "adding": [{"seq_len": 8}],
    "recall": [{"lag": 6}],
    "parity": [{"seq_len": 6, "running": True}, {"seq_len": 6, "running": False}],
    "sine": [{"seq_len": 8, "mode": "forecast"}, {"seq_len": 8, "mode": "generate"}],
    "charlm": [{"seq_len": 12}, {"seq_len": 12, "corpus": "reviews"}],
    "sentiment": [{"seq_len": 12}],
    "char_sentiment": [{"seq_len": 12, "train_reviews": 50}],
    "reverse": [{"seq_len": 4}],
    "copy": [{"seq_len": 4}],  # attention (dot, the preset's) over a bidirectional encoder
    "dates": [{}],
    "sort": [{"seq_len": 4}],  # a pointer network: its output is the attention over the inputs
    "translate": [{"min_count": 2}],  # Tatoeba sentences: word vocabularies of 810 and 1,123 tokens
    "masked_lm": [{"seq_len": 8}],  # Austen's words, 4,000 of them: BERT's objective
    "word_lm": [{"seq_len": 8}],  # and GPT's
}
# A transformer preset's own fields, at the defaults a recurrent network keeps (masked_lm's and word_lm's presets)
RECURRENT_DEFAULTS = dict(num_heads=1, dim_feedforward=None, position_encoding="sinusoidal", attention_scale=True)
CELLS = {  # each cell with its own shape: one-way, bidirectional, two layers
    "rnn": dict(bidirectional=True, num_layers=1),
    "lstm": dict(bidirectional=False, num_layers=2),
    "gru": dict(bidirectional=True, num_layers=2),
}


def setups() -> list[link.Setup]:
    assert set(SMALL) == set(link.OFFERED), "a task the app offers is missing here"
    found = []
    for task in link.OFFERED:
        base = link.preset_setup(task)
        for params in SMALL[task]:
            for arch, shape in CELLS.items():
                if engine.TASKS[task].predicts_next:  # a language model reads leftwards only (check_reads_ahead)
                    shape = {**shape, "bidirectional": False}
                model = dataclasses.replace(base.model, arch=arch, hidden_size=6, embedding_dim=4,
                                            forget_bias=None, peephole=False, **RECURRENT_DEFAULTS, **shape)
                found.append(dataclasses.replace(base, model=model, task_params={**base.task_params, **params}))
    return found


def name(setup: link.Setup) -> str:
    params = "-".join(str(v) for k, v in setup.task_params.items() if k in ("mode", "running", "corpus"))
    shape = ("bi" if setup.model.bidirectional else "") + f"{setup.model.num_layers}x"
    return f"{setup.task}{'-' + params if params else ''}-{setup.model.arch}-{shape}"


def opened(at: AppTest, page: str) -> AppTest:
    at.switch_page(nav.PATHS[page]).run()
    problems = [e.value for e in at.exception] + [e.message for e in at.exception]
    assert not at.exception, f"{page}: {problems}"
    return at


@pytest.mark.parametrize("setup", setups(), ids=name)
def test_unroll_and_gates_open(setup: link.Setup):
    at = AppTest.from_file(MAIN, default_timeout=60)
    for key, value in setup.to_query().items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["lab"].setup == setup  # the link was taken as it is
    stacks = list(at.session_state["lab"].recording(0).stacks)
    for stack in stacks:  # an encoder-decoder: either stack
        at.session_state["stack"] = stack
        opened(at, "unroll")
        assert at.get("plotly_chart"), "Unroll drew nothing"
        opened(at, "gates")


TRANSFORMER = dict(arch="transformer", hidden_size=8, num_heads=2, num_layers=1, embedding_dim=16, init="default",
                   spectral_radius=None, forget_bias=None, peephole=False, attention=None, reverse_source=False,
                   activation="tanh", bidirectional=False)


@pytest.mark.parametrize("task", ["adding", "charlm", "sine", "reverse"])
def test_the_cell_pages_say_what_they_open_up_when_the_model_is_a_transformer(task):
    base = link.preset_setup(task)
    setup = dataclasses.replace(base, model=dataclasses.replace(base.model, **TRANSFORMER),
                                task_params={**base.task_params, **SMALL[task][0]})
    at = AppTest.from_file(MAIN, default_timeout=60)
    for key, value in setup.to_query().items():
        at.query_params[key] = value
    at.run()
    assert at.session_state["lab"].setup == setup
    for page in nav.CELL_PAGES:
        opened(at, page)
        assert "opens up a recurrent network's cells" in at.info[0].value and "transformer (1 block(s) of 2" in (
            at.info[0].value)
        assert at.session_state["lab"].setup == setup and not at.get("plotly_chart")
    opened(at, "build")  # its own page trains and draws it
    assert at.get("plotly_chart")
