"""The bottleneck, measured: an encoder-decoder's accuracy against source length with and without
attention, from the shipped measurement (the Encoder-decoder page shows it under its figures)."""
from __future__ import annotations

import streamlit as st

from app.charts import bottleneck as cbottleneck
from app.widgets.figures import show


def bottleneck() -> None:
    """Why attention exists, measured once here (benchmarks/attention_bottleneck.py; the shipped
    rows are re-measured by tests/engine/test_bottleneck.py), not trained in a student's session."""
    means, meta = cbottleneck.measured()
    settings = meta["settings"]
    model = settings["model"]
    with st.expander("The bottleneck, measured: accuracy against source length, with and without attention"):
        show(cbottleneck.bottleneck_curves(means, settings["steps"]), "bottleneck")
        st.caption(bottleneck_caption(means, settings, model, meta))


def bottleneck_caption(means, settings: dict, model: dict, meta: dict) -> str:
    def whole(attention: str, length: int) -> str:
        row = means[(means["attention"] == attention) & (means["seq_len"] == length)].iloc[0]
        return f"{row['sequence_accuracy']:.0%}"

    short, long = min(settings["lengths"]), max(settings["lengths"])
    return (
        f"The same encoder-decoder ({'bidirectional ' if model['bidirectional'] else ''}{model['arch'].upper()}, "
        f"{model['hidden_size']} units a direction) copies {settings['symbols']} symbols, trained "
        f"{settings['steps']} steps from each of {len(settings['seeds'])} seeds at each length; solid: whole "
        f"sequences right (the seeds' range as bars), dotted: symbols right, on {settings['held_out']} held-out "
        f"sources. Without attention the whole source squeezes through the encoder's final state: "
        f"{whole('none', short)} of sequences right at length {short}, {whole('none', long)} at {long}. With dot "
        f"attention: "
        f"{whole('dot', short)} and {whole('dot', long)}. Measured {meta['measured']} on this 2-core CPU with "
        f"torch {meta['torch']} (benchmarks/attention_bottleneck.py)."
    )
