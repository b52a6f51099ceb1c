"""The models shipped in pretrained/, opened with one click: a class sees trained behaviour in the
first minute. The checkpoint's bytes are read once per server and shared read-only
(st.cache_resource); each session builds its own model from them, so nothing a student trains
reaches another session or the shared copy."""
from __future__ import annotations

import streamlit as st

from app import pages
from app.session import pretrained
from app.session.lab import Lab
from app.widgets import state
from app.widgets.literal import literal

# Where each shipped model shows itself best.
PAGE_OF_TASK = {"charlm": "generate", "sentiment": "unroll", "dates": "attention", "translate": "attention"}


@st.cache_resource(show_spinner=False)
def shipped_bytes(name: str) -> bytes:
    """The checkpoint file of a shipped model, read once per server; bytes cannot be changed."""
    return pretrained.read(name)


def open_shipped(lab: Lab, card: pretrained.Card) -> bool:
    """Make a fresh copy of the shipped model the lab's, on the task and settings it was trained
    with; False, with the reason on the page and the student's model kept, when it cannot be."""
    try:
        model, card = pretrained.load(shipped_bytes(card.name))
        lab.install(pretrained.setup_for(card), None, model, origin=card.name)
    except ValueError as err:
        st.error(f"{card.title} could not be opened ({literal(err)}). The model you had is unchanged.",
                 icon=":material/block:")
        return False
    st.session_state.pop(state.LESSON, None)
    st.session_state[state.TARGET_STEPS] = card.fields["training"]["steps"]
    return True


def metric_text(card: pretrained.Card) -> str:
    """Its held-out score, in words: "held-out accuracy 48.4% (loss 2.45)" (the card says on what); a
    translator's, its corpus BLEU, on the sentences of 1-10 words where its card gives them apart."""
    metrics, main = card.metrics, card.fields["task"]["metric"]
    if "BLEU, greedy" in metrics:
        short = ", 1-10 words" if "BLEU, greedy, 1-10 words" in metrics else ""
        where = " on held-out sentences of 1-10 English words" if short else ""
        return (f"held-out BLEU {metrics[f'BLEU, greedy{short}']:.1f} greedy and {metrics[f'BLEU, beam 3{short}']:.1f} "
                f"with a beam of 3{where}")
    value = f"{metrics[main]:.1%}" if main == "accuracy" else f"{metrics[main]:.3g}"
    return f"held-out {main} {value} (loss {metrics['loss']:.3g})"


def shipped_cards(lab: Lab) -> None:
    """A card per shipped model: what it is, what it reached on held-out data, and Open. The runs of a lesson's
    ensemble (the length lesson's six small translators) are shown by their lesson, not here."""
    cards = pretrained.on_home()
    for row in range(0, len(cards), 3):
        for column, card in zip(st.columns(3), cards[row: row + 3]):
            with column.container(border=True):
                st.markdown(f"**{card.title}**")
                st.caption(f"{card.shows[0].upper()}{card.shows[1:]}. Trained {card.fields['training']['steps']:,} "
                           f"steps here; {metric_text(card)}.", help=card.fields["held_out"]["data"])
                if st.button("Open it", key=f"pretrained.{card.name}", width="stretch", icon=":material/download:"):
                    if open_shipped(lab, card):
                        st.switch_page(pages.PATHS[PAGE_OF_TASK.get(card.fields["task"]["name"], "build")])
