"""The checkpoints shipped in pretrained/ (`python -m pretrained.build` trains them): their cards,
their bytes, and the Setup each was trained with. No Streamlit here.

A page caches `read(name)`'s bytes read-only (st.cache_resource: every session shares them) and
builds each session its own model from them (`load`), so nothing a student does to a model
reaches the shared copy. A card is the build's JSON beside the weights, and names the weights it
describes by their sha256, so `load` finds the card of any shipped file's bytes.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from torch import nn

import engine
from app.session.link import Setup, preset_setup
from engine import bleu

FOLDER = Path(__file__).resolve().parents[2] / "pretrained"


@dataclass(frozen=True)
class Card:
    name: str
    title: str
    shows: str  # what a class sees in it, one sentence
    fields: dict  # the whole card as the build wrote it (model, task, data, training, held_out, built)

    @property
    def metrics(self) -> dict[str, float]:
        """Held-out loss and metrics, by name ("accuracy", "loss", ...)."""
        return self.fields["held_out"]["metrics"]

    @property
    def sha256(self) -> str:
        return self.fields["checkpoint"]["sha256"]


@cache
def shipped() -> tuple[Card, ...]:
    """Every shipped checkpoint's card, by name."""
    cards = []
    for path in sorted(FOLDER.glob("*.json")):
        fields = json.loads(path.read_text())
        cards.append(Card(fields["name"], fields["title"], fields["shows"], fields))
    return tuple(cards)


def on_home() -> tuple[Card, ...]:
    """The checkpoints Home offers: all but the runs of a lesson's ensemble (the length lesson's small
    translators), which their lesson shows."""
    return tuple(card for card in shipped() if "lesson" not in card.fields)


def named(name: str) -> Card:
    found = next((c for c in shipped() if c.name == name), None)
    if found is None:
        raise ValueError(f"no shipped checkpoint is called {name!r}; there are {', '.join(c.name for c in shipped())}")
    return found


def read(name: str) -> bytes:
    """The checkpoint file's bytes (what a page caches and hands to Lab.load_model)."""
    return (FOLDER / named(name).fields["checkpoint"]["file"]).read_bytes()


def name_of(data: bytes) -> str | None:
    """The name of the shipped checkpoint these bytes are, or None."""
    digest = hashlib.sha256(data).hexdigest()
    return next((c.name for c in shipped() if c.sha256 == digest), None)


def load(data: bytes) -> tuple[nn.Module, Card]:
    """A new model from a shipped checkpoint's bytes, and its card; ValueError for other bytes."""
    digest = hashlib.sha256(data).hexdigest()
    found = next((c for c in shipped() if c.sha256 == digest), None)
    if found is None:
        raise ValueError("these bytes are not a checkpoint shipped in pretrained/ (no card has their sha256)")
    return engine.from_bytes(data), found


def install_into(lab, name: str) -> Card:
    """A fresh copy of shipped model `name` made `lab`'s (an app.session.lab.Lab), on the task and settings it was
    trained with; Lab.install's ValueError, the lab as it was, when it cannot be."""
    model, card = load(read(name))
    lab.install(setup_for(card), None, model, origin=card.name)
    return card


def setup_for(card: Card) -> Setup:
    """The Setup a card describes: its task with the preset's parameters overridden by those the
    card names (a char LM's seq_len and corpus), and the model and training settings it was
    trained with, so the lab opens the model on its task and trains on as it was trained.

    The lab's task is the app's, with the same vocabulary as the build's, but not always the same
    training text: a char LM on the Python corpus was built without the corpus's last file
    (pretrained/heldout.py, CorpusHead), which the lab's task trains on too; on Tiny Shakespeare
    the lab's task holds out the same last 10% the build never trained on; on the reviews' text it
    reads what the build read. Where that corpus is not on this machine, the lab opens the model on its
    task as the checkpoint's header knows it (Lab.task_for), and the corpus is asked for only to train
    or score it."""
    task = card.fields["task"]
    base = preset_setup(task["name"])
    return Setup(
        task=task["name"],
        model=engine.ModelConfig.from_dict(card.fields["model"]),
        train=engine.TrainConfig.from_dict(card.fields["training"]["train"]),
        task_params=base.task_params | task["params"],
    )


def lesson_pair(lesson: str, seed: int) -> dict[str, Card]:
    """A lesson's shipped runs trained from `seed`, by what their attention is ("attention" for a score
    function, "none" without): the length lesson's two small translators of one seed, the attention switch
    their one difference (pretrained/build.py, length_translator)."""
    pair = {"attention" if card.fields["model"].get("attention") else "none": card for card in shipped()
            if card.fields.get("lesson") == lesson and card.fields["training"]["seed"] == seed}
    if set(pair) != {"attention", "none"}:
        raise ValueError(f"lesson {lesson!r} ships no pair of runs from seed {seed}")
    return pair


def bleu_by_length(card: Card) -> dict[tuple[int, int], tuple[int, float]]:
    """A shipped translator's greedy held-out BLEU by English sentence length, on the first PER_LENGTH held-out
    sentences of each span of its own split: what the Encoder-decoder page measures of a model in seconds."""
    model, _ = load(read(card.name))
    return bleu.bleu_by_length(model, setup_for(card).make_task(), most=bleu.PER_LENGTH)
