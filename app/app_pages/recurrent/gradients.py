"""Gradients: how much of the loss's gradient reaches each time step (BPTT), and why."""
from __future__ import annotations

from functools import partial

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import engine
from app.charts import gradients as cg
from app.charts import spectral_sweep as cs
from app.charts.training import gradient_norm_curve
from app.charts.views import view
from app.session import spectral_sweep as sw
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.measured import measured_cell, measured_initialisation
from app.session.probes import RECORD_EVERY
from app.widgets import downloads as exports
from app.widgets import parts, state
from app.widgets.controls import live, training_controls
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from engine.truncated import check_truncation

ADDING_INITIALISATION = (
    "On the adding problem (T = 50, 64 units, seed 0) the first step of a tanh RNN gets 3e-11 of the "
    "last step's gradient under PyTorch's default, about 0.1 with an orthogonal W_hh or one scaled to "
    "ρ = 1, and 0.25 with the identity: they keep h's size from step to step, so the gradient reaches "
    "back. An LSTM's forget bias b opens the carousel, f_t starting near σ(b) (0.73 at 1, 0.95 at 3): "
    "its first step gets 3e-11 by default, 5e-5 at bias 1 and 0.2 at bias 3."
)
ADDING_RATIO = BY_KEY["vanishing"].quoted(  # the Vanishing lesson's ranges, over its seeds and kernel paths
    "On the adding problem (T = 50, 64 units, this preset's training; seeds 0-2, two CPU kernel paths) a tanh RNN "
    "starts at {{rnn.ratio_start}} and an LSTM at {{lstm.ratio_start}}; the LSTM learns to let the gradient through "
    "(above 1e-2 from step {{lstm.first_above_1e-2}} on), while in 3000 steps the tanh RNN's stays below 1e-6 "
    "{{rnn.share_below_1e-6}} of the time, and its late spikes teach it nothing.")
BIDIRECTIONAL_RATIO = (
    " This network is bidirectional: its backward direction (dashed) reads the sequence from the end, "
    "so the first step it reads is the last position, t = T−1, and its line is ‖∂L/∂h_T^←‖ / ‖∂L/∂h_1^←‖, "
    "in the order it reads them. A tiny ratio need not stop learning: on the lesson "
    f"**{BY_KEY['bidirectional'].title}** (recall at lag 50, the signal at t = 0) both stay below 1e-8 "
    "for all 2000 steps, the backward one near 1e-12, while the network names the signal every time, "
    "because its backward direction reads the signal last, right before the output: what matters is "
    "the gradient reaching the steps that hold what must be learned."
)


def run() -> None:
    lab = page_header("Gradients through time", summary=False)
    st.markdown(
        "Backpropagation through time sends the loss's gradient back from the last step to the "
        "first, multiplying by the Jacobian $\\partial h_{t+1}/\\partial h_t$ at every step:"
    )
    st.latex(
        r"\frac{\partial L}{\partial h_t} = \frac{\partial L}{\partial h_T}"
        r"\prod_{k=t+1}^{T} \frac{\partial h_k}{\partial h_{k-1}}"
        r"\quad\text{(plus the loss's direct terms at each step)}"
    )
    parts.pick(lab, layer=None, direction=None)
    training_controls(lab)
    live(lab, draw)
    experiments(lab)
    spectral_sweep(lab)
    downloads(lab)


def draw(lab: Lab) -> None:
    part = parts.chosen(lab)
    index, rec, stack = part.index, part.rec, part.stack
    parts.recorded_caption(lab, index)
    diverged(lab, part.trace, index)
    spectra_problem = None if part.trace.spectra is not None else lab.probes.weight_spectra()[1]
    vanilla = theory(rec, stack)  # the ρ^(T−t) theory is the vanilla RNN's
    show(view(rec, "through_time", (stack, vanilla), lambda: cg.gradient_through_time(rec, stack, theory=vanilla)),
         "through_time")
    st.caption(
        "Each line is ‖∂L/∂h_t‖ for one layer and direction; dashed, ‖∂h_T/∂h_t‖. Where the line "
        "falls into the red band, the first steps get less than a thousandth of the gradient the "
        "best-served step gets: the network cannot learn what happened there."
        + (" The grey line is ρ^(T−t), the decay the largest eigenvalue of W_hh predicts." if vanilla else "")
    )
    if spectra_problem is None:
        left, right = st.columns(2)
        spectra = part.trace.spectra  # W_hh's, one object for every sample of these weights (Probes.recording)
        show(view(spectra, "eigenvalues", (stack,), lambda: cg.eigenvalue_plane(rec, stack)), "eigenvalues", left)
        show(view(spectra, "singular_values", (stack,), lambda: cg.singular_values(rec, stack)),
             "singular_values", right)
        st.caption(
            "Outside the unit circle (σ > 1) a direction of h is stretched at every step and its "
            "gradient can explode; inside it shrinks and vanishes. An LSTM's gates decide per step "
            "how much of that matrix the gradient actually meets."
        )
    else:
        st.info(f"No eigenvalues of W_hh for this model: {spectra_problem}.", icon=":material/info:")
    left, right = st.columns(2)
    # The probes hold the gradient log: a new model (Reset, a lesson, a setting) brings new probes,
    # and the log only grows as the model trains.
    steps = lab.trainer.steps_done
    show(view(lab.probes, "ratio", (), partial(ratio_figure, lab), steps), "ratio", left)
    show(view(lab.probes, "param_norms", (), partial(norms_figure, lab), steps), "param_norms", right)
    st.caption(
        f"Measured every {RECORD_EVERY} training steps on sample 0. "
        + (ADDING_RATIO if measured_cell(lab.setup) else
           "A ratio that rises by orders of magnitude while the loss falls is the network learning to "
           "carry the gradient, and so the memory, across the sequence.")
        + (BIDIRECTIONAL_RATIO if lab.setup.model.bidirectional else "")
    )
    clipping(lab)


def theory(rec: engine.Recording, stack: str | None) -> bool:
    """Whether to draw the ρ^(T−t) line: a vanilla RNN whose recording carries W_hh's spectra (none past
    their size limit). Read from the recording, so a download never waits for the training lock."""
    return rec.arch == "rnn" and (rec.stacks[stack] if stack else rec.main).spectra is not None


def diverged(lab: Lab, trace, index: int) -> None:
    """Say what diverged: training (its last step was not applied) and, where the recording of
    the weights kept overflows, which of its numbers are not finite. The figures draw the rest."""
    if lab.trainer.diverged_at is not None:
        st.error(
            f"**Training {lab.trainer.status}**: the loss or the gradient became infinite or NaN, so that "
            f"step was not applied; what you see is the model's last finite weights, after step "
            f"{lab.trainer.diverged_at - 1:,}. Lower the learning rate or turn on gradient clipping (Build & "
            "Train, Training tab), then press Reset.",
            icon=":material/local_fire_department:",
        )
    found = cg.overflow(trace)
    if found:
        st.warning(
            f"On sample {index} the numbers of this model overflow: {'; '.join(found)} are infinite or NaN. "
            "The figures leave those points out (a line with none left is not drawn); the eigenvalues of "
            "W_hh, when shown, come from the weights themselves.",
            icon=":material/warning:",
        )


def ratio_figure(lab: Lab) -> go.Figure:
    return cg.gradient_ratio_over_training(ratio_points(lab, lab.probes.log_frame()))


def norms_figure(lab: Lab) -> go.Figure:
    """The gradient log's ||dL/dW|| of every parameter over training."""
    log = lab.probes.log_frame()
    return cg.parameter_gradient_norms(log.drop(columns=list(cg.RATIOS), errors="ignore").melt(
        id_vars="step", var_name="parameter", value_name="value"))


def ratio_points(lab: Lab, log: pd.DataFrame) -> pd.DataFrame:
    """The gradient log's ratios (both directions' for a bidirectional network), named for the cell."""
    return log.filter(["step", *cg.RATIOS]).assign(run=lab.setup.model.arch.upper())


def truncation_problem(lab: Lab) -> str | None:
    """Why truncated BPTT cannot run on this network and task (the engine's reason, without its
    advice on settings), or None when it can."""
    try:
        check_truncation(lab.setup.model, lab.task.spec.mapping, 1)
    except ValueError as err:
        return str(err).split(";")[0]
    return None


def experiments(lab: Lab) -> None:
    """Truncated BPTT and initialisation, outside the live fragment: drawn on whole-page runs
    only (a control moved, Pause, an expander opened), and computed only while their expander is
    open. A playing page's ticks made a truncated recording and both figures every tick for
    expanders that are usually closed (benchmarks/README section 8); the initialisation curves
    do not change with training at all."""
    part = parts.chosen(lab)
    truncation(lab, part.rec, part.index)
    initialisation(lab, part.index, part.stack)


def look_window(lab: Lab, T: int) -> int:
    """The truncation window the page shows and its download writes: the one the model trains
    with, else the one chosen on the slider (a quarter of the sequence until one is)."""
    return lab.setup.train.bptt_window or state.get(state.window_key(T), max(1, T // 4))


def truncation(lab: Lab, rec, index: int) -> None:
    """Full against truncated BPTT on this sample: the Trainer's window, or one to look at."""
    with st.expander("Truncated BPTT: where the gradient is cut", icon=":material/content_cut:",
                     key=state.TRUNCATION_OPEN, on_change="rerun") as box:
        if not box.open:
            return
        problem = truncation_problem(lab)
        if problem:
            st.info(f"Truncated BPTT does not apply here: {literal(problem)}. Training refuses a window for this "
                    "network too.", icon=":material/info:")
            return
        T, trained = rec.seq_len, lab.setup.train.bptt_window
        if trained:
            st.markdown(f"This model trains with truncated BPTT, a window of **{trained}** steps "
                        "(set on Build & Train, Training tab).")
        else:
            st.slider(
                "Window to look at (steps)", 1, T, max(1, T // 4), key=state.window_key(T),
                persist_state="session", help="only for this picture: this model trains with full BPTT (set a "
                "window on Build & Train, Training tab, to train truncated)",
            )
        window = look_window(lab, T)
        cut = lab.probes.truncated_recording(index, window)
        # cut is recorded from rec's weights: one is renewed whenever the other is
        show(view(cut, "truncated", (window,), lambda: cg.truncated_bptt(rec, cut, window)), "truncated")
        st.caption(f"Recorded at step {lab.trainer.steps_done:,}; while the network plays, this picture follows "
                   "it when the page redraws (Pause, or any control).")
        if window >= T:
            st.caption(f"The window ({window}) is at least the sequence length ({T}): nothing is cut, "
                       "and training runs full BPTT.")
            return
        only_last = lab.task.spec.mapping == "seq2vec"
        st.caption(
            f"Thin: full BPTT. Thick dashed: truncated BPTT with a window of {window} steps, exactly as "
            "training computes it. At each dotted line the hidden state is passed on but detached, so "
            "the steps before a cut get no gradient from the losses after it: a dependency longer than "
            "the window cannot be learned, however long the training."
            + (" This task's only loss comes after the last step, so every step before the last cut "
               "gets exactly 0 (the red triangles)." if only_last else
               " Here every step has a loss, so each chunk still learns from the losses of its own steps.")
        )


def clipping(lab: Lab) -> None:
    """The Trainer's gradient norm before and after clipping, and how often clipping acted."""
    with st.expander("Clipping: the gradient before and after", icon=":material/compress:"):
        train, history = lab.setup.train, lab.trainer.history_frame()
        show(view(lab.trainer, "clipping", (train.clip_norm,), lambda: gradient_norm_curve(history, train.clip_norm),
                  lab.trainer.steps_done), "clipping")
        if train.clip_norm is None and train.clip_value is None:
            st.info(
                "Clipping is off: the optimizer takes every gradient as it comes, however large. Turn it "
                "on under Build & Train, Training tab (\"Clip gradient norm\"; 1.0 is common). The lesson "
                f"**{BY_KEY['exploding'].title}** on the Home page shows why: a ReLU RNN started at the "
                "identity and trained by plain SGD gets a first gradient of norm about 320 and diverges "
                "on its second step; clipped at 1.0, it trains on.",
                icon=":material/info:",
            )
            return
        clipped, applied = lab.trainer.history.clipped, lab.trainer.history.applied  # over every step, kept or not
        share = f" ({clipped / applied:.0%})" if applied else ""
        how = []
        if train.clip_norm is not None:
            how.append(f"Clipping the norm at {train.clip_norm:g} (dashed) rescales the whole gradient down to "
                       "it whenever it is larger: the direction stays, only the step is capped, so one "
                       "exploding gradient cannot throw the weights far away.")
        if train.clip_value is not None:
            how.append(f"Clipping each value at ±{train.clip_value:g} clamps the entries one by one, which can "
                       "also turn the direction.")
        st.caption(
            f"**{clipped:,} of {applied:,} steps clipped{share}.** Orange: the norm of the whole gradient "
            "the loss gave; blue: what the optimizer was given. " + " ".join(how)
        )


def initialisation(lab: Lab, index: int, stack: str | None) -> None:
    """‖∂L/∂h_t‖ at initialisation under each scheme, on fresh copies of this network."""
    with st.expander("Initialisation: the gradient before any training", icon=":material/start:",
                     key=state.INITIALISATION_OPEN, on_change="rerun") as box:
        if not box.open:
            return
        curves = lab.probes.initial_gradients(index, stack)  # built once per sample, stack and seed
        show(view(curves, "initialisation", (), lambda: cg.initialisation_gradients(curves)), "initialisation")
        st.caption(
            f"Each line is ‖∂L/∂h_t‖ of the first layer{' of the ' + stack if stack else ''} on this sample, "
            f"for a fresh copy of this network (seed {lab.setup.train.seed}, as Reset builds it) under one "
            "initialisation; the thick line is your network's own. Your model itself is not touched. "
            + (ADDING_INITIALISATION if measured_initialisation(lab.setup) else
               "An orthogonal or identity W_hh keeps h's size from step to step, so the gradient reaches "
               "further back; an LSTM's forget bias b opens the carousel, f_t starting near σ(b) (0.73 at 1, "
               "0.95 at 3).")
        )


def spectral_sweep(lab: Lab) -> None:
    """Pascanu et al.'s conditions, on fresh networks whose W_hh has the slider's ρ: outside the
    live fragment, and computed only while the expander is open (each curve once: spectral_sweep.Sweep)."""
    with st.expander("The spectral radius, swept: when the gradient vanishes or explodes", icon=":material/tune:",
                     key=state.SWEEP_OPEN, on_change="rerun") as box:
        if not box.open:
            return
        st.markdown(sw.CONDITIONS)
        sweep, rho, start = sweep_controls(lab)
        tanh, linear = (sweep.curve(activation, rho, start) for activation in sw.ACTIVATIONS)
        fan, ratios = view(sweep, "sweep", (rho, start), lambda: (  # 60 ms of the 0.34 s a slider's move took
            cs.fan(sweep.frame(sorted({*sw.FAN, rho}), start), rho),
            cs.ratios(sweep.ratios(start), rho, len(tanh.grad_norm_h), tanh.sigma_max / tanh.radius),
        ))
        show(fan, "sweep_fan")
        st.caption(sw.fan_words(sweep, tanh, linear, start))
        show(ratios, "sweep_ratios")
        st.caption(sw.ratio_words(sweep, start))


def sweep_controls(lab: Lab) -> tuple[sw.Sweep, float, str]:
    """The slider's ρ, W_hh's start, and the sweep of the adding problem or the student's own network."""
    problem = sw.own_problem(lab.model)
    slider, starts = st.columns([3, 2])
    rho = round(slider.slider("Spectral radius ρ of W_hh (largest |eigenvalue|)", sw.RHO_MIN, sw.RHO_MAX, 1.0,
                              sw.RHO_STEP, format="%.2f", key=state.SWEEP_RHO), 2)
    start = starts.radio("W_hh before scaling", tuple(sw.STARTS), format_func=sw.STARTS.get, key=state.SWEEP_START)
    own = st.toggle("Sweep your task and network instead of the adding problem", key=state.SWEEP_OWN,
                    disabled=problem is not None,
                    help=f"Only for a one-layer, one-direction RNN of up to {sw.OWN_MAX_HIDDEN} units: {problem}."
                    if problem else None)
    source = None
    if own and problem is None:
        source = sw.own_source(lab.model, lab.task, lab.probes.samples, lab.setup.train.seed, lab.setup.task)
    sweep = sw.sweep_for(state.get(state.SWEEP), source, state.probe_index())
    st.session_state[state.SWEEP] = sweep
    return sweep, rho, start


def gradient_table(rec, stack: str | None):
    """‖∂L/∂h_t‖ and, when recorded, ‖∂h_T/∂h_t‖ per layer, direction and t."""
    frame = rec.to_frame("grad_norm_h", stack).rename(columns={"value": "grad_norm_h"})
    if (rec.stacks[stack] if stack else rec.main).jacobian_norm is not None:
        frame["jacobian_norm"] = rec.to_frame("jacobian_norm", stack)["value"].to_numpy()
    return frame


def eigenvalue_table(rec, stack: str | None) -> pd.DataFrame:
    """W_hh's eigenvalues per layer, direction, block and index."""
    return rec.to_frame("eigenvalues", stack)


def truncation_table(full, cut, window: int) -> pd.DataFrame:
    """‖∂L/∂h_t‖ under full and truncated BPTT per layer, direction and t."""
    frame = full.to_frame("grad_norm_h").rename(columns={"value": "full_bptt"})
    frame["truncated"] = cut.to_frame("grad_norm_h")["value"].to_numpy()
    return frame.assign(window=window)


def downloads(lab: Lab) -> None:
    """Made when clicked, from the model as it is then, or as drawn last while a training step
    holds the lock (see exports.published_or_held)."""
    index = state.probe_index()
    recorded = exports.chosen_recording(lab)
    name = exports.stem(lab)
    with st.expander(exports.EXPANDER):
        cols = exports.button_row()
        cols.download_button(
            "Gradients per step (.csv)", lambda: gradient_table(*recorded()).to_csv(index=False),
            f"{name}-gradients.csv", mime="text/csv",
        )
        cols.download_button(
            "Eigenvalues of W_hh (.csv)", lambda: eigenvalue_table(*recorded()).to_csv(index=False),
            f"{name}-eigenvalues.csv", mime="text/csv", disabled=lab.probes.weight_spectra()[1] is not None,
        )
        cols.download_button(  # the log is read without the lock
            "Gradients over training (.csv)", lambda: lab.probes.log_frame().to_csv(index=False),
            f"{name}-gradient-log.csv", mime="text/csv",
        )
        cols.download_button(
            "Gradients per step, interactive (.html)",
            lambda: cg.gradient_through_time(*recorded(), theory=theory(*recorded())).to_html(
                include_plotlyjs=True
            ),
            f"{name}-gradients.html", mime="text/html",
        )
        window = look_window(lab, lab.recording(index).seq_len)  # the one the page shows, read now

        def truncated():
            pair = exports.published_or_held(
                lab, lambda: lab.probes.drawn_truncated(index, window),
                lambda: (lab.recording(index), lab.probes.truncated_recording(index, window)),
            )
            return truncation_table(*pair, window)

        def clipping_frame():
            return cg.clipping_frame(lab.trainer.history_frame())  # published after every step

        def initial():
            stack = recorded()[1]
            return exports.published_or_held(lab, lambda: lab.probes.drawn_initial(index, stack),
                                             lambda: lab.probes.initial_gradients(index, stack))

        more = exports.button_row()
        more.download_button(
            "Full vs truncated BPTT (.csv)", lambda: truncated().to_csv(index=False), f"{name}-truncated-bptt.csv",
            mime="text/csv", disabled=truncation_problem(lab) is not None,
        )
        more.download_button(
            "Clipping per step, thinned past 4,096 steps (.csv)", lambda: clipping_frame().to_csv(index=False),
            f"{name}-clipping.csv", mime="text/csv",
        )
        more.download_button(
            "Gradients at initialisation (.csv)", lambda: initial().to_csv(index=False),
            f"{name}-initialisation.csv", mime="text/csv",
        )
        st.caption(exports.PNG_NOTE)


run()
