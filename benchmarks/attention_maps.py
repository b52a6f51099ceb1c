"""Attention maps at long inputs (issue 13: "the views must stay responsive at T=512"; BertViz's
users report it failing near 512 tokens): building each figure, its JSON (what Streamlit sends
the browser) and its size, for a causal char-LM transformer (2 blocks x 4 heads, d_model 32) on
one sample of T characters; and the Self-attention page's whole run under AppTest on that model
(the first, and a rerun after a control moved), at each T.

    PYTHONPATH=. python benchmarks/attention_maps.py [--quick]
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch
from streamlit.testing.v1 import AppTest
from timing import run_alone, table

import engine
from app import pages
from app.charts import attention as charts_attention
from app.session.link import preset_setup
from engine.sites import Site

MODEL = engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=4, num_layers=2)
SITE = Site("decoder", 0, "self", alone=True)
MAIN = Path(__file__).resolve().parents[1] / "app" / "main.py"


def best_of(fn, repeats: int) -> tuple[object, float]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, min(times)


def figure_rows(T: int, repeats: int) -> list[list]:
    task = engine.make_task("charlm", seq_len=T, seed=0)
    model = engine.build_model(MODEL, task, seed=0)
    x, y = task.batch(1)
    rec, recorded = best_of(lambda: engine.record(model, x, y, jacobians=False), repeats)
    chars = task.symbols_of(rec.x)
    trace = rec.attention_traces[SITE]
    figures = {
        "one head (focused_head)": lambda: charts_attention.focused_head(trace, 0, chars),
        "mean of the heads": lambda: charts_attention.focused_head(trace, None, chars),
        "grid, heads averaged per layer": lambda: charts_attention.head_grid(rec, chars, average=True),
        "grid, 2 layers x 4 heads": lambda: charts_attention.head_grid(rec, chars),
    }
    rows = [[T, "engine.record (one sample)", f"{recorded * 1000:.0f}", "-", "-"]]
    for name, build in figures.items():
        fig, built = best_of(build, repeats)
        text, serialised = best_of(fig.to_json, repeats)
        rows.append([T, name, f"{built * 1000:.0f}", f"{serialised * 1000:.0f}", f"{len(text) / 1e6:.2f}"])
    return rows


def page_rows(T: int, repeats: int) -> list[list]:
    """The Self-attention page opened by a link to this model, then rerun by moving its sample."""
    setup = preset_setup("charlm")
    query = {**setup.to_query(), "seq_len": str(T), "batch_size": "4", **{k: MODEL.to_dict()[k] for k in (
        "arch", "hidden_size", "num_heads", "num_layers")}}
    firsts, reruns = [], []
    for _ in range(repeats):
        at = AppTest.from_file(str(MAIN), default_timeout=300)
        for key, value in query.items():
            at.query_params[key] = str(value)
        at.run()
        start = time.perf_counter()
        at.switch_page(pages.PATHS["self-attention"]).run()
        firsts.append(time.perf_counter() - start)
        assert not at.exception, [e.message for e in at.exception]
        picker = at.number_input(key="probe_index")
        start = time.perf_counter()
        picker.set_value(1).run()
        reruns.append(time.perf_counter() - start)
    return [[T, f"{statistics.median(firsts):.2f}", f"{statistics.median(reruns):.2f}"]]


def run(quick: bool) -> str:
    torch.manual_seed(0)
    lengths = (128, 512) if quick else (128, 256, 512)
    repeats = 1 if quick else 3
    figures = [row for T in lengths for row in figure_rows(T, repeats)]
    page = [row for T in lengths for row in page_rows(T, 1 if quick else 2)]
    return "\n".join([
        table("Attention maps at T characters: build, JSON and its size (best of the repeats)",
              ["T", "figure", "build ms", "to_json ms", "JSON MB"], figures),
        table("The Self-attention page on that model under AppTest (median), s",
              ["T", "first run of the page", "rerun after moving the sample"], page),
    ])


if __name__ == "__main__":
    run_alone(run, "T 128 and 512 only, one repeat")
