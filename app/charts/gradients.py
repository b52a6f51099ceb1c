"""Figure builders for the Gradients (BPTT) page: a Recording or a DataFrame in, a plotly Figure out.

The same look as every figure (style.py). Norms go on log axes, where an exact 0
cannot be drawn: it is drawn at a tenth of the smallest positive value in the figure, marked with
a vermillion triangle, and its hover says "exactly 0".
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.labels import STEP_AXIS, T_AXIS
from app.charts.log_lines import PALETTE, band, empty_or, floor_of, lines_by, log_axis, log_line, mark_zeros
from app.charts.sites import label, trace_of, whose
from app.charts.style import BLACK, GREY, finish, legend_below, top_of
from app.charts.training import steps_of, whole_steps
from engine import Recording, StackTrace

SYMBOLS = ("circle", "x", "diamond", "square", "triangle-up", "star")
GRAD_AXIS = "‖∂L/∂h_t‖ (log)"
VANISHING, EXPLODING = 1e-3, 1e3  # relative to the largest ‖∂L/∂h_t‖; to ‖∂L/∂h_T‖ of layer 0 →
JACOBIAN_KEY = "dashed, open markers: ‖∂h_T/∂h_t‖₂"
# The Jacobian norms' lines are told from the gradient's by their dash and their open markers, and
# from the grey theory line (dotted, no markers) by more than colour.
JACOBIAN_MARKER = dict(symbol="circle-open", size=6)
NUMBERS = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def not_finite_steps(values) -> int:
    """How many time steps hold a value that is not finite (inf or NaN) in any layer, direction or
    unit: values [layers, directions, T] or [layers, directions, T, H]."""
    bad = ~np.isfinite(np.asarray(values, dtype=float))
    return int(np.moveaxis(bad, 2, 0).reshape(bad.shape[2], -1).any(axis=1).sum())


def overflow(trace: StackTrace) -> list[str]:
    """What of a recording overflowed, in words: "‖∂L/∂h_t‖ at 50 of 50 steps", for h_t, ‖∂L/∂h_t‖
    and ‖∂h_T/∂h_t‖₂ (each only where some value is inf or NaN); empty when all are finite."""
    T = trace.grad_norm_h.shape[-1]
    found = []
    checked = (("h_t", trace.hidden), ("‖∂L/∂h_t‖", trace.grad_norm_h), ("‖∂h_T/∂h_t‖₂", trace.jacobian_norm))
    for what, values in checked:
        steps = 0 if values is None else not_finite_steps(values.double().numpy())
        if steps:
            found.append(f"{what} at {steps} of {T} steps")
    return found


def part_name(trace: StackTrace, layer: int, direction: int, block: int) -> str:
    """"f block, layer 1 ←", leaving out what there is only one of ("W_hh" when nothing is left)."""
    layers, directions = trace.eigenvalues.shape[:2]
    parts = [f"{trace.blocks[block]} block"] if len(trace.blocks) > 1 else []
    if layers * directions > 1:
        parts.append(label(layer, direction))
    return ", ".join(parts) or "W_hh"


def gradient_through_time(rec: Recording, stack: str | None = None, theory: bool = True) -> go.Figure:
    """‖∂L/∂h_t‖ against t on a log axis, one line per layer and direction, and dashed in the same
    colour ‖∂h_T/∂h_t‖₂ when the recording has Jacobian norms; with `theory`, the ρ^(T−t) line of
    layer 0 → (theory_line).

    Shaded: "vanishing" below 1/1000 of the largest ‖∂L/∂h_t‖ (always in view), and "exploding"
    above 1000 × ‖∂L/∂h_T‖ of layer 0 → (only when some ‖∂L/∂h_t‖ reaches it).
    """
    trace = trace_of(rec, stack)
    grads = trace.grad_norm_h.double().numpy()  # [L, dirs, T]
    jacobians = [] if trace.jacobian_norm is None else [trace.jacobian_norm.double().numpy()]  # [L, dirs, T]
    layers, directions, T = grads.shape
    floor = floor_of(grads, *jacobians)
    fig = go.Figure()
    for k, (layer, direction) in enumerate(np.ndindex(layers, directions)):
        name, colour = label(layer, direction), PALETTE[k % len(PALETTE)]
        fig.add_trace(log_line(np.arange(T), grads[layer, direction], name, colour, floor, "‖∂L/∂h_t‖"))
        for jac in jacobians:
            dashed = log_line(np.arange(T), jac[layer, direction], f"{name} ‖∂h_T/∂h_t‖₂", colour, floor,
                              "‖∂h_T/∂h_t‖₂", dash="dash", width=1.3)
            fig.add_trace(dashed.update(legendgroup=name, showlegend=False, marker=JACOBIAN_MARKER))
    if jacobians:  # one legend entry for all of them, drawn as they are: dashed, with open markers
        fig.add_trace(go.Scatter(x=[None], y=[None], name=JACOBIAN_KEY, mode="lines+markers",
                                 line=dict(color=GREY, dash="dash", width=1.3), marker=JACOBIAN_MARKER,
                                 hoverinfo="skip"))
    mark_zeros(fig, floor)
    largest = float(np.max(grads[np.isfinite(grads)], initial=0.0))
    vanishing = VANISHING * largest
    y_axis = log_axis(fig, *([vanishing / 4] if vanishing > 0 else []))  # the band at least 0.6 decades high
    if vanishing > 0:
        band(fig, 10 ** y_axis["range"][0], vanishing, "vanishing: < 1/1000 of the largest", top=True)
    exploding = EXPLODING * float(grads[0, 0, -1])
    if 0 < exploding <= largest:
        band(fig, exploding, top_of(y_axis), "exploding: > 1000 × ‖∂L/∂h_T‖ of layer 0 →", top=False)
    if theory:
        fig.add_trace(theory_line(rec, stack)[1])
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=GRAD_AXIS, **y_axis)
    fig.update_layout(legend=dict(font=dict(size=11), tracegroupgap=2))
    return finish(fig, "BPTT: the gradient reaching each step" + (f" of the {stack}" if stack else ""))


def theory_line(rec: Recording, stack: str | None = None, layer: int = 0, direction: int = 0
                ) -> tuple[float, go.Scatter]:
    """ρ, the spectral radius of that layer and direction's W_hh (of its block with the largest ρ
    for an LSTM or GRU), and a long-dashed grey line ρ^(T−1−t) · ‖∂L/∂h_{T−1}‖: the decay if every
    step back multiplied the gradient by ρ. A backward direction ends at t = 0: ρ^t · ‖∂L/∂h_0‖."""
    trace = trace_of(rec, stack)
    radii = trace.eigenvalues[layer, direction].abs().amax(dim=-1)  # [blocks]
    block = int(radii.argmax())
    rho = float(radii[block])
    grads = trace.grad_norm_h[layer, direction].double().numpy()  # [T]
    steps = np.arange(len(grads))[::-1] if direction == 0 else np.arange(len(grads))  # steps back from the end
    last = grads[-1] if direction == 0 else grads[0]
    where = part_name(trace, layer, direction, block)
    name = f"ρ^(T−t) theory, ρ = {rho:.3g}" + (f" ({where})" if where != "W_hh" else "")
    return rho, go.Scatter(
        x=np.arange(len(grads)), y=rho**steps * last, text=[f"ρ^{s}" for s in steps], name=name, mode="lines",
        line=dict(color=GREY, dash="dot", width=3),
        hovertemplate=f"{name}<br>t %{{x}}<br>%{{text}} · {last:.6g} = %{{y:.6g}}<extra></extra>",
    )


def block_traces(trace: StackTrace):
    """(layer, direction, block, name, colour, symbol) for every block of every W_hh: one colour
    per block (per layer and direction for an RNN), one marker per layer and direction."""
    layers, directions, blocks = trace.eigenvalues.shape[:3]
    for layer, direction, block in np.ndindex(layers, directions, blocks):
        k = layer * directions + direction
        colour = PALETTE[(block if blocks > 1 else k) % len(PALETTE)]
        yield layer, direction, block, part_name(trace, layer, direction, block), colour, SYMBOLS[k % len(SYMBOLS)]


def eigenvalue_plane(rec: Recording, stack: str | None = None) -> go.Figure:
    """The eigenvalues of every block of every W_hh in the complex plane, with the unit circle,
    on equal axes. The title gives ρ, the largest |λ|; an arrow points at it, naming its block
    and layer when there is more than one."""
    trace = trace_of(rec, stack)
    moduli = trace.eigenvalues.abs()  # [L, dirs, blocks, H]
    fig = go.Figure()
    angle = np.linspace(0, 2 * np.pi, 241)
    fig.add_trace(go.Scatter(x=np.cos(angle), y=np.sin(angle), name="unit circle, |λ| = 1", mode="lines",
                             line=dict(color=GREY, width=1.2), hoverinfo="skip"))
    for layer, direction, block, name, colour, symbol in block_traces(trace):
        lam = trace.eigenvalues[layer, direction, block]  # [H]
        what = f"{trace.blocks[block]} block" if len(trace.blocks) > 1 else "W_hh"
        fig.add_trace(go.Scatter(
            x=lam.real.double().numpy(), y=lam.imag.double().numpy(),
            customdata=moduli[layer, direction, block].double().numpy(),
            name=name, mode="markers", marker=dict(color=colour, symbol=symbol, size=8, opacity=0.85),
            hovertemplate=(f"{what}, {label(layer, direction)}<br>"
                           "λ = %{x:.6g} %{y:+.6g}i<br>|λ| = %{customdata:.6g}<extra></extra>"),
        ))
    top = np.unravel_index(int(moduli.argmax()), tuple(moduli.shape))
    rho, where, lam = float(moduli.max()), part_name(trace, *top[:3]), trace.eigenvalues[top]
    x, y = float(lam.real), float(lam.imag)
    fig.add_annotation(x=x, y=y, text="ρ" + (f" ({where})" if where != "W_hh" else ""),
                       showarrow=True, arrowhead=2, arrowwidth=1.2, arrowcolor=BLACK,
                       ax=-25 if x >= 0 else 25, ay=30 if y >= 0 else -30,  # towards 0, in px (ay counts down)
                       font=dict(size=11), bgcolor="rgba(255,255,255,0.8)")
    reach = 1.1 * max(1.0, rho)
    fig.update_xaxes(title_text="Re λ", range=[-reach, reach], zeroline=True)
    fig.update_yaxes(title_text="Im λ", range=[-reach, reach], zeroline=True, scaleanchor="x", scaleratio=1)
    fig = finish(fig, f"Eigenvalues of {whose(stack)}W_hh — spectral radius ρ = {rho:.3g}", height=360)
    # Under the plane: at the right, in half a page, the legend squeezed the plane to a sliver and
    # the ρ label, then set up and to the right of its point, ran into it. Towards 0 from ρ is
    # inside the circle, in every direction the largest eigenvalue may lie.
    return legend_below(fig)


def singular_values(rec: Recording, stack: str | None = None) -> go.Figure:
    """The singular values of every block of every W_hh, largest first, with a line at σ = 1."""
    trace = trace_of(rec, stack)
    fig = go.Figure()
    for layer, direction, block, name, colour, symbol in block_traces(trace):
        sigma = np.sort(trace.singular_values[layer, direction, block].double().numpy())[::-1]  # [H]
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(sigma) + 1), y=sigma, name=name, mode="lines+markers",
            line=dict(color=colour, width=1.5), marker=dict(symbol=symbol, size=6),
            hovertemplate=f"{name}<br>σ_%{{x}} = %{{y:.6g}}<extra></extra>",
        ))
    fig.add_hline(y=1, line=dict(color=GREY, dash="dash", width=1.5), annotation_position="top right",
                  annotation_text="σ = 1: neither grows nor shrinks", annotation_font=dict(color=GREY, size=11))
    largest = float(trace.singular_values.max())
    fig.update_xaxes(title_text="index (largest first)")
    fig.update_yaxes(title_text="σ", range=[0, 1.1 * max(1.0, largest)])
    # Under the plot and as tall as the plane beside it: at the right the legend left ~90 px of plot at 1024 px.
    return legend_below(finish(fig, f"Singular values of {whose(stack)}W_hh — largest σ = {largest:.3g}", height=360))


# The gradient log's column of each direction's ratio (app.session.probes.first_step_ratios).
RATIOS = {"ratio": "forward", "ratio_backward": "backward"}
RATIO_AXIS = "‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ (log)"
READING_ORDER_AXIS = "‖∂L/∂h‖ of the first step read / of the last (log)"
BACKWARD = "← (first step read: t = T−1)"  # the backward direction reads the sequence from its end


def directed(run: str, direction: str) -> str:
    """A line's name where both directions are drawn: "LSTM →", "LSTM ← (first step read: t = T−1)"."""
    return f"{run} →" if direction == "forward" else f"{run} {BACKWARD}"


def both_directions(frame: pd.DataFrame) -> bool:
    return "direction" in frame and (frame["direction"] == "backward").any()


def gradient_ratio_over_training(points: pd.DataFrame) -> go.Figure:
    """How much gradient reaches the first step each direction reads, relative to its last, against
    the training step: one line with markers per run, and for a bidirectional network a dashed
    one per run for its backward direction, whose first step is t = T−1 (it reads the sequence
    from the end): ‖∂L/∂h_T^←‖ / ‖∂L/∂h_1^←‖, in reading order.

    points   columns step, run (or arch), ratio, and ratio_backward for a bidirectional network
    """
    run = "run" if "run" in points else "arch"
    columns = [c for c in RATIOS if c in points and points[c].notna().any()]
    long = empty_or(points, ["step", run, "ratio"]).melt(
        id_vars=["step", run], value_vars=columns or ["ratio"], var_name="direction", value_name="value"
    ).rename(columns={"value": "ratio"})
    long["direction"] = long["direction"].map(RATIOS)
    if both_directions(long):
        order = {name: k for k, name in enumerate(dict.fromkeys(long[run]))}  # each run's two lines together
        long = long.sort_values([run, "direction"], key=lambda c: c.map(order) if c.name == run else c,
                                kind="stable", ascending=[True, False])
        fig = lines_by(long, run, "step", "ratio", "ratio", "step", markers=True, dash_by="direction",
                       name_of=lambda key: directed(*key))
    else:
        fig = lines_by(long, run, "step", "ratio", "ratio", "step", markers=True)
    fig.update_xaxes(title_text=STEP_AXIS)
    whole_steps(fig, long["step"].max() if len(long) else 0)
    fig.update_yaxes(title_text=READING_ORDER_AXIS if both_directions(long) else RATIO_AXIS)
    return legend_below(finish(fig, "How much gradient reaches the first step, over training"))  # as compare_runs


def parameter_gradient_norms(history: pd.DataFrame) -> go.Figure:
    """‖∂L/∂W‖ of every named parameter against the training step, one line each, legend under
    the plot (at the right, in a half-page column at 1024 px, it scrolled; the figure grows by each
    row of parameter names instead).

    history  columns step, parameter, value (recorded every N steps)
    """
    history = empty_or(history, ["step", "parameter", "value"])
    fig = lines_by(history, "parameter", "step", "value", "‖∂L/∂W‖", "step")
    fig.update_xaxes(title_text=STEP_AXIS)
    whole_steps(fig, history["step"].max() if len(history) else 0)
    fig.update_yaxes(title_text="‖∂L/∂W‖ (log)")
    return legend_below(finish(fig, "Gradient norm per parameter"), font_px=11)


def compare_runs(curves: pd.DataFrame, each: str = "cell", what: str = "Vanishing gradients") -> go.Figure:
    """‖∂L/∂h_t‖ of several runs' recordings (e.g. tanh RNN, ReLU RNN, LSTM, GRU) overlaid on a
    log axis, one line per run; for a bidirectional network the backward direction of each run
    dashed in the same colour, named for the first step it reads (t = T−1).

    curves   columns run, t, value, and direction ("forward", "backward") when there are both
    each     what one run is, for the title: "cell" ("four cells, same task and budget"), "start"
    what     the title's start
    """
    curves = empty_or(curves, ["run", "t", "value"])
    if both_directions(curves):
        fig = lines_by(curves, "run", "t", "value", "‖∂L/∂h_t‖", "t", dash_by="direction",
                       name_of=lambda key: directed(*key))
    else:
        fig = lines_by(curves, "run", "t", "value", "‖∂L/∂h_t‖", "t")
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=GRAD_AXIS)
    runs = curves["run"].nunique() if len(curves) else 0
    count = NUMBERS[runs] if runs < len(NUMBERS) else str(runs)
    counted = f"{count} {each}{'s' * (runs != 1)}, " if runs else ""
    # Under the plot: at the right, the legend left 64 px of plot in half a page at 1024 px (Compare cells).
    return legend_below(finish(fig, f"{what}: {counted}same task and budget"))


CUT_KEY = "dotted: the gradient is cut here"


def truncated_bptt(full: Recording, cut: Recording, window: int) -> go.Figure:
    """‖∂L/∂h_t‖ under full BPTT (thin, solid) and under truncated BPTT with this window (thick,
    dashed, the same colour), one pair per layer and direction, on a log axis; a dotted vertical
    line halfway between t = k·window − 1 and k·window at every cut, where the state is passed on
    detached. `cut` is the same sample recorded with engine.record(..., bptt_window=window).
    """
    full_g = full.grad_norm_h.double().numpy()  # [L, dirs, T]
    cut_g = cut.grad_norm_h.double().numpy()  # [L, dirs, T]
    if full_g.shape != cut_g.shape:
        raise ValueError(f"full and cut must record the same sample of the same model; got shapes "
                         f"{full_g.shape} and {cut_g.shape}")
    layers, directions, T = full_g.shape
    floor = floor_of(full_g, cut_g)
    fig = go.Figure()
    for k, (layer, direction) in enumerate(np.ndindex(layers, directions)):
        name, colour = label(layer, direction), PALETTE[k % len(PALETTE)]
        fig.add_trace(log_line(np.arange(T), full_g[layer, direction], f"{name} full BPTT", colour, floor,
                               "‖∂L/∂h_t‖", width=1.3))
        fig.add_trace(log_line(np.arange(T), cut_g[layer, direction], f"{name} truncated", colour, floor,
                               "‖∂L/∂h_t‖", dash="dash", width=2.8))
    mark_zeros(fig, floor)
    cuts = np.arange(window, T, window) - 0.5  # between the last step of one chunk and the first of the next
    for x in cuts:
        fig.add_vline(x=x, line=dict(color=GREY, dash="dot", width=1.5))
    if len(cuts):  # one legend entry for every cut
        fig.add_trace(go.Scatter(x=[None], y=[None], name=CUT_KEY, mode="lines",
                                 line=dict(color=GREY, dash="dot", width=1.5), hoverinfo="skip"))
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=GRAD_AXIS, **log_axis(fig))
    fig.update_layout(legend=dict(font=dict(size=11)))
    what = f"the gradient cut every {window} steps" if len(cuts) else f"a window of {window} ≥ T = {T} cuts nothing"
    return finish(fig, f"Truncated backpropagation: {what}")


def clipping_frame(history: pd.DataFrame) -> pd.DataFrame:
    """Trainer.history_frame()'s step, grad_norm, grad_norm_clipped and diverged, with `clipped`:
    True where clipping made the gradient smaller (never on a diverged step, which was not applied)."""
    frame = steps_of(history)[["step", "grad_norm", "grad_norm_clipped", "diverged"]].copy()
    frame["clipped"] = (frame["grad_norm_clipped"] < frame["grad_norm"]) & ~frame["diverged"].astype(bool)
    return frame


def initialisation_gradients(curves: pd.DataFrame) -> go.Figure:
    """‖∂L/∂h_t‖ at initialisation under each scheme, overlaid on a log axis, one line each; the
    network's own scheme drawn thicker.

    curves   columns init, t, value, and optionally yours (True on the rows of the network's own)
    """
    fig = lines_by(empty_or(curves, ["init", "t", "value"]), "init", "t", "value", "‖∂L/∂h_t‖", "t")
    if "yours" in curves:
        for name in curves.loc[curves["yours"].astype(bool), "init"].unique():
            fig.update_traces(line_width=3.5, selector=dict(name=name))
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=GRAD_AXIS)
    return finish(fig, "At initialisation: the gradient reaching each step, scheme by scheme")
