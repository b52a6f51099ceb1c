"""Transfer learning: a shipped char language model's lower layers reused for sentiment, frozen,
with a new head; then the top reused layer unfrozen at a lower learning rate (the GWU lecture's recipe),
trained side by side with the same network from scratch, from the same seed on the same batches."""
from __future__ import annotations

import dataclasses

import streamlit as st

from app.charts import transfer as charts
from app.session import pretrained
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.transfer import LESSON_RECIPE, LR_SCALES, SOURCES, TRAIN, Recipe, TransferRuns, setup_of
from app.widgets import lesson_band, part_runs, state
from app.widgets.controls import live_training, round_robin_controls, round_robin_progress, stopped_runs
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from app.widgets.pretrained import shipped_bytes
from app.widgets.uploads import parsed_reviews

STEPS = state.TRANSFER_STEPS
TRAIN_SECONDS = 1.0  # training per redraw, as on the other side-by-side pages
LESSON = BY_KEY["transfer"]
CODE_SOURCE, CODE_RUN = "charlm-lstm", "pretrained on Python source"  # the card's second source, its band's name
REUSE = {1: "embedding", 2: "embedding + layer 0"}  # the shipped sources have one layer
REVIEWS = {100: "100", 400: "400", 0: "all of them"}
ADDED = (0, 1, 2)


def run() -> None:
    lab = page_header("Transfer learning", own_runs="two runs of its own")
    st.markdown(
        "A model trained on one task has learnt features that other tasks can use. The course's recipe: "
        "**reuse the lower layers** of a pretrained network, **add a new head** for your task, **freeze** the "
        "reused layers (backpropagation does not change them) and train; then **unfreeze one or two top "
        "layers with a lower learning rate**, so the fine-tuning does not wreck what they learnt. Here the "
        "pretrained networks are character language models, and the new task is to read a film review character "
        "by character and say whether it is positive or negative. The more similar the pretraining data is to "
        "yours, the more layers are worth reusing: one source learnt from Python code, one from the reviews' "
        "own text (without their labels).")
    recipe, train = recipe_form()
    runs = current(recipe)
    if runs is None:
        return
    if train:
        play(runs, recipe)
    which_recipe(runs)
    round_robin_controls(runs, "transfer", STEPS, "Train each up to step", "run")
    live_training(runs, draw, STEPS, TRAIN_SECONDS)
    open_in_lab(runs, lab)
    downloads(runs)


def source_picker(recipe: Recipe) -> Recipe:
    """The source, applied as soon as it is picked (both runs start again): the lesson's switch. In
    the form, a new source waited for the form's button, and a Play pressed after it trained the old."""
    name = st.columns([3, 2])[0].selectbox(
        "Pretrained on", SOURCES, index=SOURCES.index(recipe.source), format_func=lambda n: pretrained.named(n).title,
        help="applies at once: both runs start again, the pretrained one from this model's parts")
    if name == recipe.source:
        return recipe
    st.session_state[state.TRANSFER_RECIPE] = recipe = dataclasses.replace(recipe, source=name)
    return recipe


def recipe_form() -> tuple[Recipe, bool]:
    """The recipe the student asks for, and whether to train it now: the source applies when it is
    picked, the rest with the form's button, which also plays both runs (a new recipe restarts them)."""
    recipe = source_picker(state.get(state.TRANSFER_RECIPE) or LESSON_RECIPE)
    with st.form("transfer_form", border=True):
        reviews = st.columns([3, 2])[0]
        train_reviews = reviews.selectbox("Labelled reviews", tuple(REVIEWS),
                                          index=tuple(REVIEWS).index(recipe.train_reviews), format_func=REVIEWS.get,
                                          help="to train on; the held-out fifth is scored either way. Transfer "
                                               "learning matters most when labels are few.")
        csv = st.file_uploader("Your own reviews (optional): a review,sentiment CSV, as Kaggle's IMDB 50K", type="csv",
                               key=state.TRANSFER_CSV, help="Read by characters: lower-cased, HTML line breaks and "
                               "punctuation dropped, the last 220 characters of each. Leave empty for the shipped "
                               "reviews.")
        reuse, add, frozen_box = st.columns([3, 2, 2], vertical_alignment="bottom")
        reused = reuse.selectbox("Reuse", tuple(REUSE), index=tuple(REUSE).index(recipe.reused),
                                 format_func=REUSE.get, help="the lower parts copied from the pretrained model")
        added = add.selectbox("New layers on top", ADDED, index=ADDED.index(recipe.added),
                              help="new layers of the same cell between the reused ones and the new head")
        frozen = frozen_box.checkbox("Freeze them", value=recipe.freeze,
                                     help="the reused parts; off: every part trains at the full rate from the first "
                                          "step (fine-tuning all)")
        at, scale = st.columns([3, 4], vertical_alignment="bottom")
        unfreeze_at = at.number_input("Unfreeze the top reused layer at step", min_value=0, max_value=100_000,
                                      value=recipe.unfreeze_at, step=50, help="0: never (feature extraction only)")
        lr_scale = scale.select_slider("at a learning rate of × (the head's)", LR_SCALES, value=recipe.lr_scale)
        button, said = st.columns([3, 5], vertical_alignment="center")
        # Said on the page, not in a tooltip: what the box holds reaches the page only with this button.
        said.caption("Applies the settings in this box and plays both runs (a changed recipe starts them again). "
                     "Play alone trains the runs as they are.")
        if button.form_submit_button("Train with this recipe", type="primary", icon=":material/play_circle:"):
            try:
                reviews = parsed_reviews(csv.getvalue()) if csv is not None else None  # parsed once per server
            except ValueError as err:
                st.error(f"Your reviews could not be read: {literal(err)}. The runs you had are unchanged.",
                         icon=":material/block:")
                return recipe, False
            asked = Recipe(source=recipe.source, reused=reused, added=added, freeze=frozen,
                           unfreeze_at=int(unfreeze_at), lr_scale=lr_scale, train_reviews=train_reviews,
                           csv_digest=reviews.digest if reviews is not None else "")
            st.session_state[state.TRANSFER_REVIEWS] = reviews
            st.session_state[state.TRANSFER_RECIPE] = asked
            return asked, True
    return recipe, False


def play(runs: TransferRuns, asked: Recipe) -> None:
    """"Train with this recipe" trains: the runs play, unless the recipe was refused (current()
    kept the runs the student had, and said why) or both runs stopped."""
    if runs.recipe == asked and not all(run.stopped for run in runs.runs) and not state.get(state.CLASS_PAUSED, False):
        runs.playing = True  # not while the teacher has paused the class


def current(recipe: Recipe) -> TransferRuns | None:
    """This session's two runs of `recipe`, made anew when the recipe changes; None, with the reason
    on the page (and the runs the student had kept), when it cannot be run."""
    runs = state.get(state.TRANSFER)
    if runs is not None and runs.recipe == recipe:
        return runs
    source, _ = pretrained.load(shipped_bytes(recipe.source))  # a fresh copy: the shared bytes stay as they are
    return part_runs.renewed(runs, lambda: TransferRuns(recipe, source, state.get(state.TRANSFER_REVIEWS)),
                             (state.TRANSFER, state.TRANSFER_RECIPE, STEPS), LESSON,
                             lambda old: old.recipe if old is not None else LESSON_RECIPE, "This recipe")


def which_recipe(runs: TransferRuns) -> None:
    recipe, run = runs.recipe, runs.pretrained
    card = pretrained.named(recipe.source)
    moved = run.transplanted
    reused = " and ".join(run.reused)
    plan = (f"frozen, then {' and '.join(run.thawed)} unfrozen at step {recipe.unfreeze_at:,} at lr × "
            f"{recipe.lr_scale:g}" if recipe.freeze and recipe.unfreeze_at and run.thawed
            else "frozen throughout" if recipe.freeze else "trained at the full rate from the start")
    st.markdown(
        f"**Pretrained:** {reused} of *{card.title}* ({card.fields['training']['steps']:,} steps; "
        f"{moved.shared_symbols} of the {moved.symbols} input symbols found in its vocabulary, the rest "
        f"start at random) · {plan} · {new_parts(runs)}. **From scratch:** the same network "
        f"({runs.network.num_layers} layer{'s' * (runs.network.num_layers > 1)} of {runs.network.hidden_size}), "
        f"every part from the seed. Both: {TRAIN.optimizer} lr {TRAIN.lr:g}, batch {TRAIN.batch_size}, "
        f"clip norm {TRAIN.clip_norm:g}, "
        f"seed {recipe.seed}, {len(runs.task.train_y):,} labelled reviews, the last {runs.task.seq_len} characters "
        "of each.")


def new_parts(runs: TransferRuns) -> str:
    added = runs.recipe.added
    first = len(runs.pretrained.reused) - 1  # the embedding is not a layer
    layers = [f"layer {first + k}" for k in range(added)]
    return f"new {' and '.join(layers)} and a new head" if added else "a new head"


def unfreeze_text(runs: TransferRuns) -> tuple[int | None, str]:
    recipe, thawed = runs.recipe, runs.pretrained.thawed
    if not (recipe.freeze and recipe.unfreeze_at and thawed):
        return None, ""
    return recipe.unfreeze_at, f"{' and '.join(thawed)} unfrozen, lr × {recipe.lr_scale:g}"


def lesson_runs(runs: TransferRuns, log) -> None:
    """The lesson's band behind the runs when they are its recipe's (any seed), from either source
    its card names: the code LM's pretrained run is its own band."""
    recipe = dataclasses.replace(runs.recipe, source=LESSON_RECIPE.source, seed=LESSON_RECIPE.seed)
    if recipe != LESSON_RECIPE or runs.recipe.source not in (LESSON_RECIPE.source, CODE_SOURCE):
        return
    if runs.recipe.source == CODE_SOURCE:
        log = log[log["run"] == "pretrained"].assign(run=CODE_RUN)
    lesson_band.for_runs(runs, log, runs.task.metric_name, charts.COLOURS)


def draw(runs: TransferRuns) -> None:
    until = state.get(STEPS)
    round_robin_progress(runs, until, "run")
    stopped_runs(runs)
    log, parts = runs.log_frame(), runs.parts_frame()
    if state.get(state.LESSON) == LESSON.key:
        lesson_runs(runs, log)
    at, what = unfreeze_text(runs)
    left, right = st.columns(2)
    show(charts.accuracy_over_training(log, at, what, baseline=runs.baseline), "transfer_accuracy", left)
    left.caption(f"Both runs scored on the same {len(runs.held_out[1]):,} held-out reviews every 25 steps and after "
                 f"each Step. Dotted: a {runs.task.baseline_name} (logistic regression on how often each "
                 f"character occurs) fitted on the same training reviews scores {runs.baseline[1]:.1%}, the line to "
                 f"beat.{runs.standing(log)}")
    show(charts.part_gradients(parts, "pretrained", at, what), "transfer_gradients", right)
    right.caption("‖∂L/∂θ‖ of each part of the pretrained run at each measured step. A frozen part gets no gradient "
                  "at all: exactly 0, drawn at the floor and marked ▼. Its weights stay bit for bit as copied "
                  "(the table: moved 0).")
    st.table(parts_table(parts), hide_index=True)
    if not runs.playing and runs.finished(until) and not runs.stopped():
        st.success(f"Both runs reached step {until:,}. Raise 'Train each up to step' to go on.")


def parts_table(parts):
    """The latest measurement of every part of both runs."""
    if not len(parts):
        return parts
    latest = parts[parts["step"] == parts.groupby("run")["step"].transform("max")]
    frame = latest[["run", "part", "state", "step", "grad_norm", "moved"]].rename(columns={
        "grad_norm": "‖∂L/∂θ‖ at that step", "moved": "‖θ − θ_start‖", "state": "now"})
    return frame.style.format({"‖∂L/∂θ‖ at that step": "{:.3g}", "‖θ − θ_start‖": "{:.3g}", "step": "{:,}"})


def open_in_lab(runs: TransferRuns, lab: Lab) -> None:
    """The pretrained run's model, copied into the Lab, to look inside it on the other pages."""
    part_runs.open_in_lab(runs, runs.pretrained, setup_of(runs.recipe, runs.network), lab, "transfer.open",
                          "Open the pretrained run's model in the Lab",
                          "Replaces your model on Build & Train with a copy of this one (all of it trains there); "
                          "Unroll and Gates then open it up on a review.")


def downloads(runs: TransferRuns) -> None:
    part_runs.downloads(runs, "Both runs'", "transfer")

run()
