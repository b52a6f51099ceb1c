"""BPTT and RTRL: the same gradient two ways, on the page's own small RNN or GRU and one sample
(issue 16, the GWU lecture's "pros and cons of BPTT and RTRL", measured): every entry by both, RTRL's
online gradient step by step, what each costs as H and T grow, and truncated BPTT's bias."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts import rtrl as charts
from app.session import rtrl as session
from app.session.rtrl import Settings, SideBySide
from app.widgets import state
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal

GRADIENT = (r"\frac{\partial L}{\partial \theta} = \sum_{t=1}^{T} \frac{\partial \ell_t}{\partial h_t}"
            r"\sum_{k=1}^{t} \frac{\partial h_t}{\partial h_k} \frac{\partial^+ h_k}{\partial \theta},"
            r"\qquad L = \sum_{t=1}^{T} \ell_t")
SENSITIVITY = (r"\begin{gathered} S_t = \frac{d h_t}{d\theta} = \mathrm{diag}\big(\phi'(a_t)\big)\Big(W_{hh} "
               r"S_{t-1} + \frac{\partial^+ a_t}{\partial \theta}\Big),\quad S_0 = 0, \\ "
               r"\frac{\partial \ell_t}{\partial \theta} = \frac{\partial \ell_t}{\partial h_t} S_t "
               r"\quad\text{as soon as } \ell_t \text{ is known} \end{gathered}")


def run() -> None:
    page_header("BPTT and RTRL")
    intro()
    settings = controls()
    view = current(settings)
    if view is None:
        return
    st.markdown(describe(view))
    same_gradient(view)
    online(view)
    cost(view.settings)
    truncation(view)


def intro() -> None:
    st.markdown(
        "The loss is a sum over the steps, and so is its gradient (Schmidt, eqs. 5 and 9): each loss term "
        "$\\ell_t$ reaches back to every earlier step $k$ through $\\partial h_t/\\partial h_k$, and "
        "$\\partial^+ h_k/\\partial\\theta$ is the immediate derivative, $h_{k-1}$ held fixed:")
    st.latex(GRADIENT)
    st.markdown(
        "**Backpropagation through time (BPTT)** takes the outer sum backwards from $T$: it keeps every $h_t$ "
        "until the sequence ends, then walks back through them, about $H^2$ multiply-adds a step. "
        "**Real-time recurrent learning (RTRL**, Williams & Zipser 1989) takes the inner sum forwards: it "
        "carries the sensitivity $S_t = dh_t/d\\theta$ of $h_t$ to the $P$ recurrent parameters, an "
        "$H \\times P$ matrix, and updates it from $S_{t-1}$ alone (a GRU's gates each follow the same rule):")
    st.latex(SENSITIVITY)
    st.markdown(
        "So RTRL has the gradient of the loss so far after every step and keeps nothing of the past, but "
        "$S_t$ holds $H \\cdot P \\approx H^3$ numbers and $W_{hh} S_{t-1}$ costs $H \\cdot H \\cdot P "
        "\\approx H^4$ multiply-adds a step. Below, both run on this page's own small network and one sample "
        "(not your model on Build & Train: RTRL's cost rules out most of them).")


def controls() -> Settings:
    """The page's model: cell, task, H, T and the training before looking."""
    cell, task = st.columns(2)
    hidden, length, trained = st.columns(3)
    arch = cell.radio("Cell", list(session.CELLS), format_func=session.CELLS.get, key=state.RTRL_ARCH,
                      horizontal=True, persist_state="session")
    name = task.selectbox("Task", list(session.TASKS), format_func=session.TASKS.get, key=state.RTRL_TASK,
                          persist_state="session")
    H = hidden.select_slider("Hidden units H", session.HIDDEN_SIZES, value=16, key=state.RTRL_HIDDEN,
                             persist_state="session")
    T = length.select_slider("Sequence length T", session.LENGTHS, value=50, key=state.RTRL_LENGTH,
                             persist_state="session")
    steps = trained.select_slider("Adam steps before looking", session.TRAINING_STEPS, value=0,
                                  key=state.RTRL_TRAINED, persist_state="session",
                                  help="0: as initialised; else trained first with the task's preset settings "
                                  "(Build & Train's), from the same seed")
    return Settings(arch=arch, task=name, hidden_size=H, seq_len=T, trained_steps=steps)


def current(settings: Settings) -> SideBySide | None:
    """This session's model and sample for these settings (kept until they change), or None with the
    reason on the page when they are over its budget."""
    view = state.get(state.RTRL)
    if view is None or view.settings != settings:
        try:
            with st.spinner("Building the network and its sample…"):
                view = SideBySide(settings)
        except ValueError as err:
            st.session_state.pop(state.RTRL, None)
            st.error(f"**Too large for this page.** {literal(err)}.", icon=":material/block:")
            return None
        st.session_state[state.RTRL] = view
    return view


def describe(view: SideBySide) -> str:
    s, spec = view.settings, view.task.spec
    P = session.recurrent_parameters(s.arch, s.hidden_size, spec.input_size)
    head = view.model.head.weight.numel() + view.model.head.bias.numel()
    trained = (f"after {s.trained_steps} Adam steps (the task's preset: lr {view.task.preset.train.lr:g}, batch "
               f"{view.task.preset.train.batch_size})" if s.trained_steps else "as initialised")
    return (f"**The network:** {session.CELLS[s.arch]}, H = {s.hidden_size}, seed {session.SEED}, {trained}; "
            f"P = {P:,} recurrent parameters and {head} in the read-out. **The sample:** one sequence of "
            f"T = {s.seq_len} steps of the {s.task} task ({spec.mapping}), batch 1.")


def same_gradient(view: SideBySide) -> None:
    st.subheader("1. The same gradient")
    with st.spinner("RTRL and autograd, in float32 and float64…"):
        entries, table = view.entries(), view.agreement
    show(charts.same_gradient(entries), "rtrl_same")
    worst = table.loc[table["float32"].idxmax()]
    largest = table["largest |gradient|"].max()
    st.caption(
        f"Every entry of every parameter's ∂L/∂θ, by RTRL (forward, no graph) and by autograd's BPTT through "
        f"PyTorch's kernel. The largest difference, {worst['float32']:.1e} in {worst['parameter']}, is "
        f"{worst['float32'] / largest:.0e} of the largest entry ({largest:.2e}): float32's rounding, since "
        f"the same weights and sample in float64 differ by at most {table['float64'].max():.0e}. Two orders "
        "of summing, one gradient.")
    st.table(agreement_table(table), hide_index=True)


def agreement_table(table: pd.DataFrame):
    frame = table.rename(columns={"float32": "largest |RTRL − BPTT|", "float64": "… in float64"})
    return frame.style.format({"largest |gradient|": "{:.2e}", "largest |RTRL − BPTT|": "{:.1e}",
                               "… in float64": "{:.1e}", "entries": "{:,}"})


@st.fragment
def online(view: SideBySide) -> None:
    """Its own fragment: moving t reruns this section only (one backward pass over t steps)."""
    st.subheader("2. Online: the gradient after every step")
    frame, w_hh = view.online
    T = view.settings.seq_len
    if state.get(state.RTRL_STEP, 1) > T:
        st.session_state[state.RTRL_STEP] = T
    t = st.slider("Step t: the inputs read so far", 1, T, value=max(1, T // 2), key=state.RTRL_STEP,
                  persist_state="session")
    grad, saved = view.bptt_so_far(t)  # [rows, H]
    show(charts.online_gradient(frame, t, grad.norm().item()), "rtrl_online")
    carried = rtrl_state_bytes(view)
    difference = (w_hh[t - 1] - grad).abs().max().item()
    st.caption(online_caption(view, t, carried, saved, difference))


def rtrl_state_bytes(view: SideBySide) -> int:
    """What RTRL carries from step to step: h_t, S_t and the running gradient of every parameter."""
    frame, _ = view.online
    numbers = view.settings.hidden_size + sum(p.numel() for p in view.model.parameters())
    return int(frame["sensitivity_bytes"].iloc[0]) + 4 * numbers  # float32


def online_caption(view: SideBySide, t: int, carried: int, saved: int, difference: float) -> str:
    T, H = view.settings.seq_len, view.settings.hidden_size
    frame, _ = view.online
    text = (f"Blue: ‖∂(ℓ₁+…+ℓ_t)/∂W_hh‖ as RTRL has it right after reading x_t, for every t. After step {t} it "
            f"is {frame['norm'].iloc[t - 1]:.4g}; BPTT through steps 1..{t} gives the same (the diamond; largest "
            f"entry difference {difference:.1e}). To get it, RTRL carried only h_t, S_t ({H} x P) and the "
            f"gradient so far: {carried / 1024:,.1f} KB, the same at every step. ")
    if view.task.spec.mapping == "seq2vec":
        return text + (f"This task has one loss term, after the last step, so the gradient is 0 until t = {T} "
                       "and BPTT has nothing to go back from before then; RTRL still updates S_t every step, "
                       "ready for ℓ_T when it comes.")
    return text + (f"BPTT must have kept what autograd saves for those {t} steps, {saved / 1024:,.1f} KB (h_1..h_{t} "
                   f"among it), and must walk back through all {t} again to have the gradient after step "
                   f"{t + 1}. At {saved / t / 1024:.2f} KB a step, BPTT's store passes RTRL's {carried / 1024:,.1f} KB "
                   f"after about {carried * t / saved:,.0f} steps: only on longer streams does RTRL save memory. "
                   "After step 1 the W_hh gradient is 0: W_hh has only met h_0 = 0.")


@st.cache_data(show_spinner=False, max_entries=64)
def measured(arch: str, task: str, H: int, T: int, round_: int) -> tuple[pd.DataFrame, str]:
    """The cost grid for these settings, timed once per server (and again on "Measure again": round_):
    timings of fresh weights on a fixed grid, the same for every session."""
    return session.measure_cost(Settings(arch=arch, task=task, hidden_size=H, seq_len=T))


def cost(settings: Settings) -> None:
    st.subheader("3. What each costs, measured here")
    with st.spinner("Timing RTRL and BPTT on a grid around your settings…"):
        frame, when = measured(settings.arch, settings.task, settings.hidden_size, settings.seq_len,
                               state.get(state.RTRL_ROUND, 0))
    show(charts.cost_figure(frame, "memory"), "rtrl_memory")
    show(charts.cost_figure(frame, "time"), "rtrl_time")
    st.table(cost_table(frame), hide_index=True)
    st.caption(cost_caption(frame, settings, when))
    if st.button("Measure again", key="rtrl_measure", icon=":material/timer:"):
        st.session_state[state.RTRL_ROUND] = state.get(state.RTRL_ROUND, 0) + 1
        st.rerun()


def cost_table(frame: pd.DataFrame):
    """The grid, by H then T (the sweep each row belongs to shows in which of the two changes)."""
    table = frame.assign(ratio=frame["rtrl_ms"] / frame["bptt_ms"]).sort_values(["H", "T"]).drop(columns="sweep")
    table = table.rename(columns={"rtrl_ms": "RTRL ms/step", "bptt_ms": "BPTT ms/step", "ratio": "RTRL / BPTT",
                                  "rtrl_kb": "RTRL S_t KB", "bptt_kb": "BPTT saved KB"})
    return table.style.format({"RTRL ms/step": "{:.3f}", "BPTT ms/step": "{:.3f}", "RTRL / BPTT": "{:.0f}x",
                               "RTRL S_t KB": "{:,.1f}", "BPTT saved KB": "{:,.1f}", "P": "{:,}"})


def cost_caption(frame: pd.DataFrame, settings: Settings, when: str) -> str:
    H, T = settings.hidden_size, settings.seq_len
    by_t, by_h = charts.along(frame, "T"), charts.along(frame, "H")
    own = frame[frame["sweep"] == "both"].iloc[0]
    text = (f"Fresh weights of your cell, batch 1, {when}. RTRL: engine.rtrl's whole pass over the sample, no "
            "graph; BPTT: the forward pass on PyTorch's kernel and autograd's backward. Times are medians of "
            f"{session.TIMING_REPEATS} interleaved repeats divided by T; memory is RTRL's S_t and the bytes "
            "autograd saves for BPTT (weights and input left out). Memory: from T = "
            f"{by_t['T'].iloc[0]} to {T}, BPTT's grows from {by_t['bptt_kb'].iloc[0]:,.1f} to {own['bptt_kb']:,.1f} "
            f"KB while RTRL's S_t stays {own['rtrl_kb']:,.1f} KB; it grows with H instead, as H·P ≈ H³. ")
    if len(by_h) > 1:
        k_rtrl, k_bptt = (session.growth(by_h, column, "H")[-1] for column in ("rtrl_ms", "bptt_ms"))
        text += (f"Time: from H = {by_h['H'].iloc[-2]} to {H}, RTRL's time per step grew as H^{k_rtrl:.1f} and "
                 f"BPTT's as H^{k_bptt:.1f} (dashed: the H⁴ and H² of their multiply-adds); at small H both are "
                 "mostly a fixed cost per step, which is why the measured growth falls short of the arithmetic. ")
    return text + (f"At your settings RTRL took {own['rtrl_ms'] / own['bptt_ms']:.0f}x BPTT's time per step. The "
                   "machine is shared: read the growth and the orders of magnitude, not single milliseconds.")


def truncation(view: SideBySide) -> None:
    st.subheader("4. Truncated BPTT's bias")
    with st.spinner("Truncated BPTT with each window…"):
        frame, T = view.truncation, view.settings.seq_len
    show(charts.truncation_bias(frame, T), "rtrl_truncation")
    st.caption(truncation_caption(frame, T, view.task.spec.mapping))


def truncation_caption(frame: pd.DataFrame, T: int, mapping: str) -> str:
    first, full = frame.iloc[0], frame[frame["window"] == T].iloc[0]
    cut = frame[frame["window"] < T]
    text = (f"Truncated BPTT cuts the sequence into chunks of k steps and passes h on detached, so each ℓ_t "
            "reaches back only to its own chunk's start (as Build & Train's window trains). Against the exact "
            f"∂L/∂W_hh (RTRL's, in float64): with k = 1 the relative error is {first['relative_error']:.2g} "
            f"(cosine {first['cosine']:.3f}); ")
    if len(cut) > 1:
        best = cut.loc[cut["relative_error"].idxmin()]
        text += (f"the smallest below T is {best['relative_error']:.2g} at k = {int(best['window'])}, and it "
                 "need not fall steadily, since moving k moves every chunk border; ")
    text += (f"at k = T = {T} it is {full['relative_error']:.0e}, rounding: full BPTT, RTRL's gradient. "
             "RTRL is exact and online at once; truncated BPTT is online only by being biased.")
    if mapping == "seq2vec":
        text += " Here the only loss comes after the last step, so the steps before the last chunk get nothing."
    return text


run()
