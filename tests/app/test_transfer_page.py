"""Transfer learning: the two runs start from the same seed, the pretrained one with the source's
parts copied in and frozen (bit for bit, no gradient) until the recipe unfreezes its top reused
layer at the recipe's rate; the page plots the runs' own logs and refuses a recipe the source
cannot give, keeping the runs the student had."""
import dataclasses

import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.charts import transfer as charts
from app.session import pretrained
from app.session.transfer import LESSON_NETWORK, LESSON_RECIPE, Recipe, TransferRuns, setup_of
from app.widgets import state
from engine.bag_of_words import bag_of_words_accuracy
from engine.tasks import parse_reviews

from .conftest import MAIN, chart, plotted
from .test_page_reruns import tick

TRANSFER = nav.PATHS["transfer"]


def source(name: str = "charlm-reviews") -> torch.nn.Module:
    return pretrained.load(pretrained.read(name))[0]


def stepped(runs: TransferRuns, steps: int) -> TransferRuns:
    with runs.lock:
        while runs.advance(steps):
            pass
    return runs


def page() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    return at.run().switch_page(TRANSFER).run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


# ------------------------------------------------------------------ the runs

def test_the_lessons_network_is_the_recipes():
    assert LESSON_RECIPE.network(source()) == LESSON_NETWORK
    assert setup_of(LESSON_RECIPE, LESSON_NETWORK).make_task().spec.name == "char_sentiment"


def test_both_runs_start_from_the_seed_and_the_pretrained_one_from_the_sources_parts():
    lm = source()
    runs = TransferRuns(LESSON_RECIPE, lm)
    scratch, pre = (dict(run.model.named_parameters()) for run in runs.runs)
    copied = dict(lm.named_parameters())
    for name in runs.pretrained.model.param_groups()["layer 0"]:
        assert torch.equal(pre[name], copied[name]) and not torch.equal(scratch[name], copied[name]), name
    for part in ("layer 1", "head"):  # new: the seed's weights, the same in both runs
        for name in runs.pretrained.model.param_groups()[part]:
            assert torch.equal(pre[name], scratch[name]), name
    assert runs.pretrained.transplanted.shared_symbols == 24  # the reviews' characters less the padding
    x, y = (run.trainer.task.batch(4, run.trainer.batches) for run in runs.runs)
    assert torch.equal(x[0], y[0])  # the same batches, each from its own stream


def test_frozen_parts_stay_bit_for_bit_until_the_top_reused_layer_unfreezes_at_the_lower_rate():
    recipe = dataclasses.replace(LESSON_RECIPE, unfreeze_at=2, train_reviews=64)
    runs = stepped(TransferRuns(recipe, source()), 2)
    run = runs.pretrained
    start = {name: p.detach().clone() for name, p in run.model.named_parameters()}
    parts = runs.parts_frame().set_index(["run", "step", "part"])
    for part in ("embedding", "layer 0"):
        assert parts.loc[("pretrained", 2, part), "grad_norm"] == 0.0
        assert parts.loc[("pretrained", 2, part), "moved"] == 0.0
        assert parts.loc[("from scratch", 2, part), "grad_norm"] > 0
    assert parts.loc[("pretrained", 2, "layer 1"), "grad_norm"] > 0
    stepped(runs, 4)
    groups = run.model.param_groups()
    params = dict(run.model.named_parameters())
    for name in groups["embedding"]:  # never unfrozen
        assert torch.equal(params[name], start[name]) and params[name].grad is None
    assert any(not torch.equal(params[name], start[name]) for name in groups["layer 0"])
    rates = {g["part"]: g["lr"] for g in run.trainer.optimizer.param_groups}
    assert rates["layer 0"] == pytest.approx(3e-3 * 0.1) and rates["layer 1"] == rates["head"] == 3e-3
    assert runs.parts_frame().set_index(["run", "step", "part"]).loc[("pretrained", 4, "layer 0"), "state"] == \
        "trains at lr × 0.1"


def test_a_recipe_the_source_cannot_give_is_refused_with_what_it_has():
    with pytest.raises(ValueError, match=r"charlm-lstm has 2 parts below its head \(embedding, layer 0\)"):
        TransferRuns(Recipe(source="charlm-lstm", reused=3), source("charlm-lstm"))
    with pytest.raises(ValueError, match="3 layers are too many for a shared CPU here .* reuse or add fewer layers"):
        TransferRuns(Recipe(added=2), source())
    with pytest.raises(ValueError, match="reuse a layer or add one"):
        TransferRuns(Recipe(reused=1, added=0), source())


# ------------------------------------------------------------------ the figures

def test_the_accuracy_figure_plots_the_log_and_marks_the_unfreezing():
    log = pd.DataFrame({"run": ["from scratch", "from scratch", "pretrained", "pretrained"], "step": [0, 25, 0, 25],
                        "metric": [0.5, 0.6, 0.5, 0.8]})
    fig = charts.accuracy_over_training(log, 100, "layer 0 unfrozen").to_plotly_json()
    for name, values in (("from scratch", [0.5, 0.6]), ("pretrained", [0.5, 0.8])):
        (trace,) = [t for t in fig["data"] if t["name"] == name]
        assert plotted(trace["y"]) == values and plotted(trace["x"]) == [0, 25]
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [100]


def test_the_gradient_figure_draws_a_frozen_parts_exact_zero_at_the_floor_and_marks_it():
    parts = pd.DataFrame({"run": "pretrained", "step": [25, 25, 50, 50], "part": ["layer 0", "head"] * 2,
                          "grad_norm": [0.0, 0.2, 0.3, 0.1]})
    fig = charts.part_gradients(parts, "pretrained", 30, "unfrozen").to_plotly_json()
    (layer,) = [t for t in fig["data"] if t["name"] == "layer 0"]
    assert plotted(layer["customdata"]) == [0.0, 0.3] and plotted(layer["y"])[0] == pytest.approx(0.01)
    [zeros] = [t for t in fig["data"] if t["name"].startswith("exactly 0")]
    assert list(zeros["marker"]["color"]) == [layer["line"]["color"]]  # the 0 is layer 0's, in its colour


# ------------------------------------------------------------------ the page

def test_the_page_opens_on_the_lessons_recipe_and_a_step_trains_both_runs():
    at = page()
    no_exception(at)
    runs = at.session_state[state.TRANSFER]
    assert runs.recipe == LESSON_RECIPE
    at.button(key="transfer_step").click().run()
    no_exception(at)
    assert [run.steps_done for run in runs.runs] == [1, 1]
    log = runs.log_frame()
    spec = chart(at, "Held-out accuracy of each run")
    assert chart(at, "Each part's gradient (pretrained)")
    for trace in (t for t in spec["data"] if t["name"] in ("from scratch", "pretrained")):
        assert plotted(trace["y"]) == pytest.approx(log[log["run"] == trace["name"]]["metric"].tolist())
    task = runs.task  # the line to beat: a bag of the characters the runs read, scored on the runs' rows
    bag = bag_of_words_accuracy(task.train_x, task.train_y, *task.test_set(), len(task.vocab), 2, task.spec.pad_id)
    [line] = [t for t in spec["data"] if t["name"].startswith("bag of characters, same characters")]
    assert plotted(line["y"]) == [bag, bag] and 0.5 < bag < 0.7
    at_1 = log[log.step == 1].set_index("run").metric
    best = at_1.max()  # the better run's score (which run, on a tie, says the same)
    assert best < bag  # after one step: the bag of characters is ahead, and the page says why
    said = (f"**The bag of characters is ahead** ({bag:.1%} against the ", f" run's {best:.1%}). Counting characters",
            f"from {len(task.train_y):,} labelled reviews of {task.median_read:,.0f} characters on median")
    assert any("At step 1: " in c.value and all(part in c.value for part in said) for c in at.caption)
    table = at.table[0].value
    frozen = table[(table["run"] == "pretrained") & (table["part"].isin(["embedding", "layer 0"]))]
    assert (frozen["now"] == "frozen").all() and (frozen["‖∂L/∂θ‖ at that step"] == 0).all()


def test_a_refused_recipe_says_why_and_keeps_the_runs():
    at = page()
    runs = at.session_state[state.TRANSFER]
    labelled = {box.label: box for box in at.selectbox}
    labelled["Pretrained on"].set_value("charlm-lstm")
    labelled["New layers on top"].set_value(2)  # three LSTM layers of 128 over 220 characters: over the budget
    at.button[0].click()  # the form's submit button
    at.run()
    no_exception(at)
    assert any("This recipe cannot be trained" in e.value for e in at.error)
    assert at.session_state[state.TRANSFER] is runs


def train_button(at: AppTest):
    [button] = [b for b in at.button if b.label == "Train with this recipe"]
    return button


def play_a_little(at: AppTest) -> TransferRuns:
    """Two ticks of the live fragment (only ticks train); the runs trained."""
    for _ in range(2):
        tick(at)
    no_exception(at)
    return at.session_state[state.TRANSFER]


def test_train_with_this_recipe_applies_it_and_trains_both_runs():
    at = page()
    runs = at.session_state[state.TRANSFER]
    train_button(at).click().run()  # the recipe the runs have: the same runs, playing
    no_exception(at)
    assert at.session_state[state.TRANSFER] is runs and runs.playing
    at.button(key="transfer_play").click().run()  # Pause
    {box.label: box for box in at.selectbox}["Labelled reviews"].set_value(100)
    train_button(at).click().run()
    no_exception(at)
    runs = at.session_state[state.TRANSFER]
    assert runs.recipe == dataclasses.replace(LESSON_RECIPE, train_reviews=100) and len(runs.task.train_y) == 100
    assert runs.playing and at.button(key="transfer_play").label == "Pause"
    assert all(run.steps_done > 0 for run in play_a_little(at).runs)


def test_play_after_a_new_source_trains_the_new_source():
    """Inside the form, a changed source waited for its button: Play trained the old source."""
    at = page()
    {box.label: box for box in at.selectbox}["Pretrained on"].set_value("charlm-lstm").run()  # as a browser: at once
    no_exception(at)
    at.button(key="transfer_play").click().run()
    runs = play_a_little(at)
    assert runs.recipe == dataclasses.replace(LESSON_RECIPE, source="charlm-lstm")
    assert all(run.steps_done > 0 for run in runs.runs)
    trained, copied = dict(runs.pretrained.model.named_parameters()), dict(source("charlm-lstm").named_parameters())
    for name in runs.pretrained.model.param_groups()["layer 0"]:  # frozen until step 100: still the source's
        assert torch.equal(trained[name], copied[name]), name


def test_open_in_the_lab_copies_the_pretrained_runs_model():
    at = page()
    at.button(key="transfer.open").click().run()
    no_exception(at)
    runs, lab = at.session_state[state.TRANSFER], at.session_state[state.LAB]
    assert lab.setup.task == "char_sentiment" and lab.setup.model == LESSON_NETWORK
    for key, weight in runs.pretrained.model.state_dict().items():
        assert torch.equal(lab.model.state_dict()[key], weight), key
    assert lab.model is not runs.pretrained.model
    # opened while its reused parts are frozen (step 0): in the Lab all of it trains, as the button says
    assert not all(p.requires_grad for p in runs.pretrained.model.parameters())
    assert all(p.requires_grad for p in lab.model.parameters())
    embedding = lab.model.embedding.weight.detach().clone()
    lab.step()
    assert not torch.equal(lab.model.embedding.weight.detach(), embedding)


def imdb_csv(n: int = 60) -> bytes:
    """An IMDB-format CSV: capitals, HTML line breaks, punctuation and an extra column."""
    rows = ["review,sentiment,id"]
    for i in range(n):
        good = i % 2 == 0
        text = f"Film {i} was {'GREAT' if good else 'not great'}!<br /><br />I'd see it {'again' if good else 'never'}."
        rows.append(f'"{text}",{"positive" if good else "negative"},{i}')
    return "\n".join(rows).encode()


def test_an_uploaded_csv_is_read_by_characters_and_named_by_its_digest():
    reviews = parse_reviews(imdb_csv())
    recipe = dataclasses.replace(LESSON_RECIPE, csv_digest=reviews.digest)
    runs = TransferRuns(recipe, source(), reviews)
    assert len(runs.task.train_y) + len(runs.task.test_y) == 60
    assert runs.task.decode(runs.task.test_x[0]).startswith("film ")  # lower-cased, the <br /> and "!" gone
    with pytest.raises(ValueError, match="not the ones the recipe names"):
        TransferRuns(LESSON_RECIPE, source(), reviews)  # the shipped reviews' recipe, another file's reviews


def test_the_accuracy_axis_reaches_down_to_a_run_below_40_percent():
    log = pd.DataFrame({"run": ["from scratch", "pretrained"], "step": [0, 0], "metric": [0.0, 0.8]})
    assert charts.accuracy_over_training(log, None, "").layout.yaxis.range[0] == 0.0
    log["metric"] = [0.55, 0.8]
    assert charts.accuracy_over_training(log, None, "").layout.yaxis.range[0] == 0.4
