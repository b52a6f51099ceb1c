"""A shipped model over the training budget (the translator at real size: 12 M weights, over the 5 M a session's
model may have) opens to read, not to train: it translates what is typed and is scored on held-out data, its page
says why it does not train and offers no Play, Step or Reset, its memory is its weights and the best step's copy,
and the same model built any other way (the form, a link, fresh weights) is still refused by the budget.

The parameter limit is lowered below the shipped translator's weights, so these hold whichever translator ships
(the one of the 5,000 short pairs had 421,635, within the budget)."""
import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session import budget, pretrained
from app.session.lab import Lab
from app.session.link import preset_setup
from app.session.memory import read_only_bytes, weights_bytes
from app.widgets import state

from .conftest import MAIN
from .test_transfer_page import no_exception

NAME = "translate-gru"


@pytest.fixture
def over_budget(monkeypatch):
    weights = pretrained.named(NAME).fields["checkpoint"]["parameters"]
    monkeypatch.setattr(budget, "MAX_PARAMETERS", weights - 1)
    return weights


def opened_lab() -> Lab:
    model, card = pretrained.load(pretrained.read(NAME))
    lab = Lab(preset_setup("adding"))
    lab.install(pretrained.setup_for(card), None, model, origin=card.name)
    return lab


def test_a_shipped_model_over_the_budget_opens_to_read_and_never_trains(over_budget):
    lab = opened_lab()
    assert not lab.trainable and f"over this app's limit of {over_budget - 1:,}" in lab.too_big
    before = {k: v.clone() for k, v in lab.model.state_dict().items()}
    with lab.lock:
        assert lab.advance() is False
    lab.step()
    assert lab.trainer.steps_done == 0
    assert all((lab.model.state_dict()[k] == v).all() for k, v in before.items())
    assert lab.held_bytes() == read_only_bytes(lab.model) + lab.task.held_bytes() < weights_bytes(lab.model)
    assert read_only_bytes(lab.model) == 2 * 4 * over_budget
    assert lab.task.unknown_words("I am cold.") == [] and lab.held_out.log.rows()  # reads, and is scored
    with pytest.raises(ValueError, match="over this app's limit"):
        lab.reset()  # fresh weights are a new model of that size: the budget refuses it
    slower = dataclasses.replace(lab.setup, train=dataclasses.replace(lab.setup.train, lr=1e-4))
    with pytest.raises(ValueError, match="reads but does not train here, so its training settings stay"):
        lab.change(slower)
    assert lab.origin == NAME and not lab.trainable and lab.setup.train.lr != 1e-4  # the lab as it was
    assert "; lower" not in lab.too_big  # the budget's advice to build smaller is no advice for a shipped model


def test_the_same_bytes_loaded_as_a_checkpoint_open_to_read_and_other_bytes_are_refused(over_budget):
    lab = Lab(preset_setup("adding"))
    lab.load_model(pretrained.read(NAME))  # as Build & Train's "Save or load the model" hands it
    assert lab.origin == NAME and not lab.trainable
    model, _ = pretrained.load(pretrained.read(NAME))
    model.head.bias.data += 1.0
    other = Lab(preset_setup("adding"))  # other bytes: the task's preset parameters, and the budget, apply
    with pytest.raises(ValueError, match="over this app's limit|set the task's parameters .* as they were"):
        other.load_model(engine.to_bytes(model))
    assert other.setup.task == "adding"


def test_its_page_says_why_it_does_not_train_and_offers_no_training_controls(over_budget):
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.session_state[state.LAB] = opened_lab()
    no_exception(at.switch_page(nav.PATHS["attention"]).run())
    [said] = [i.value for i in at.info if "does not train" in i.value]
    assert "over this app's limit" in said and "open its preset" in said
    keys = {b.key for b in at.button}
    assert not keys & {"play", "step", "reset"}
    metrics = pretrained.named(NAME).metrics  # its weights never move: the card's BLEU, no decoding on the page
    [said] = [c.value for c in at.caption if c.value.startswith("Held-out BLEU, as its card measured it")]
    assert f"greedy {metrics['BLEU, greedy']:.1f}, beam of 3 {metrics['BLEU, beam 3']:.1f}" in said
    assert state.BLEU not in at.session_state
    no_exception(at.button(key="open_preset").click().run())
    lab = at.session_state[state.LAB]
    assert lab.trainable and lab.setup == preset_setup("translate") and {"play", "step"} <= {b.key for b in at.button}
