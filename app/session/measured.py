"""On which settings the figures the captions quote were measured: a caption quotes them only
when the task on screen is that one, and otherwise says what to look for without numbers (the
Gradients and Compare captions once quoted the adding problem's figures on every task). No
Streamlit here.
"""
from __future__ import annotations

from app.session.link import Setup, preset_setup
from engine.config import REGULARISATION, SHAPE, START, VARIANT, fields_of

# The adding problem's preset (T = 50, 64 units, one layer, Adam at 3e-3, clipping at 1, seed 0):
# where the vanishing-gradient figures of the Gradients and Compare captions come from, with the
# cell swapped (tanh RNN, ReLU RNN, LSTM, GRU), as the lessons and Compare cells swap it.
ADDING = preset_setup("adding")
NETWORK = fields_of(SHAPE, VARIANT, START, REGULARISATION)  # everything but the cell's kind and a decoder


def same_network(setup: Setup) -> bool:
    """The adding preset's network and training, whatever the cell."""
    mine, measured = setup.model, ADDING.model
    return (setup.task, setup.task_params, setup.train) == (ADDING.task, ADDING.task_params, ADDING.train) and all(
        getattr(mine, field) == getattr(measured, field) for field in NETWORK
    )


def measured_cell(setup: Setup) -> bool:
    """same_network, with a cell the Gradients caption quotes: a tanh RNN or an LSTM."""
    cell = (setup.model.arch, setup.model.activation)
    return same_network(setup) and cell in (("rnn", "tanh"), ("lstm", "tanh"))


def measured_initialisation(setup: Setup) -> bool:
    """The initialisation experiment's figures: the adding problem at T = 50 with 64 units and
    seed 0, a tanh RNN or an LSTM (the experiment builds fresh models, so training settings and
    the student's own initialisation do not matter)."""
    m = setup.model
    return (setup.task, setup.task_params, setup.train.seed) == (ADDING.task, ADDING.task_params, ADDING.train.seed) \
        and (m.hidden_size, m.num_layers, m.bidirectional) == (64, 1, False) \
        and (m.arch, m.activation) in (("rnn", "tanh"), ("lstm", "tanh")) and not m.peephole \
        and not m.layer_norm and not m.zoneout
