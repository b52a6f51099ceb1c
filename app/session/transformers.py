"""The small transformers the Transformers pages and lessons open when the student's model is
none: each a task preset with its model swapped for a transformer, small enough for the size
budget and to train visibly here within a minute (measured: see the captions of the pages that
offer them). No Streamlit here."""
from __future__ import annotations

import dataclasses

import engine
from app.session.link import Setup, preset_setup

# A transformer's settings over a recurrent preset's: what it has no use for back to the defaults.
NOT_A_TRANSFORMERS = dict(embedding_dim=16, init="default", spectral_radius=None, forget_bias=None, peephole=False,
                          attention=None, reverse_source=False, activation="tanh", dropout=0.0, layer_norm=False,
                          zoneout=0.0)


def transformer_setup(task: str, task_params: dict | None = None, steps: int | None = None, **model) -> Setup:
    """The task's preset (its training settings and parameters, with `task_params` over them)
    with a transformer of these settings for its model."""
    base = preset_setup(task)
    cfg = dataclasses.replace(base.model, arch="transformer", **NOT_A_TRANSFORMERS, **model)
    return dataclasses.replace(base, model=cfg, task_params={**base.task_params, **(task_params or {})})


LEARNED_REVERSAL = transformer_setup("reverse", hidden_size=32, num_heads=2, num_layers=2, bidirectional=False,
                                     position_encoding="learned")
CHAR_LM = transformer_setup("charlm", {"seq_len": 48}, hidden_size=48, num_heads=4, num_layers=2,
                            bidirectional=False)
SENTIMENT_ENCODER = transformer_setup("sentiment", hidden_size=32, num_heads=2, num_layers=2, bidirectional=True)
REVERSAL = transformer_setup("reverse", hidden_size=32, num_heads=2, num_layers=2, bidirectional=False)
# One wide head (d_k = 256) on reversing 10 symbols: without the 1/sqrt(d_k) its scores spread 16
# times wider, its softmax saturates from the first step (tests/engine/test_attention_scale.py).
WIDE_REVERSAL = dataclasses.replace(
    transformer_setup("reverse", {"seq_len": 10, "symbols": 8}, hidden_size=256, num_heads=1, dim_feedforward=256,
                      num_layers=1, bidirectional=False),
    train=engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=64, clip_norm=1.0),
)
