"""The app shell and the Build & Train page, driven through AppTest."""
import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session.lessons import BY_KEY
from app.session.link import DEFAULT

from .conftest import MAIN, chart, plotted, shown
from .test_page_reruns import tick

BUILD = nav.PATHS["build"]


def app(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()


def build_page(at: AppTest) -> AppTest:
    return at.switch_page(BUILD).run()


def lab(at: AppTest):
    return at.session_state["lab"]


def test_every_page_in_the_navigation_loads_without_exception():
    at = app()
    assert not at.exception
    for path in nav.PATHS.values():
        at.switch_page(path).run()
        assert not at.exception, path
        assert at.title, path


@pytest.mark.parametrize("key", list(BY_KEY))
def test_a_lesson_button_loads_its_preset_and_opens_its_page(key):
    at = app()
    at.button(key=f"lesson.{key}").click().run()
    assert not at.exception
    lesson = BY_KEY[key]
    titles = {url_path: title for entries in nav.SECTIONS.values() for _, title, url_path, _ in entries}
    assert at.title[0].value.startswith(titles[lesson.page].split()[0])
    assert lab(at).setup == lesson.setup
    assert lab(at).trainer.steps_done == 0
    assert lab(at).origin == lesson.shipped  # a lesson on a shipped model opens it trained (Generate's)
    # A page that trains its own runs has its own "up to step"; Generate trains nothing.
    own_steps = {"scaling": "scaling_steps", "transfer": "transfer_steps", "compare": "compare_steps",
                 "word-vectors": "vectors_steps", "bert-gpt": "bert_steps"}
    if lesson.page == "generate":
        assert not [n for n in at.number_input if n.key in ("target_steps", *own_steps.values())]
    else:
        assert at.number_input(key=own_steps.get(lesson.page, "target_steps")).value == lesson.steps
    assert lesson.title in at.info[0].value
    if lesson.page == "build":  # the widgets show the lesson's settings, and the link carries them
        assert at.selectbox(key="form.model.arch").value == lesson.setup.model.arch
        assert at.query_params["arch"] == lesson.setup.model.arch


def test_step_runs_exactly_one_training_step_and_the_curves_plot_it():
    at = build_page(app())
    at.button(key="step").click().run()
    assert lab(at).trainer.steps_done == 1
    at.button(key="step").click().run()
    trainer = lab(at).trainer
    assert trainer.steps_done == 2
    spec = chart(at, "Training: loss")
    loss = next(t for t in spec["data"] if t.get("name") == "training loss")
    assert plotted(loss["x"]) == [1, 2]
    assert plotted(loss["y"]) == pytest.approx([s.loss for s in trainer.history])


def test_play_trains_until_paused_and_pause_lands_between_whole_steps():
    at = build_page(app())
    at.button(key="play").click().run()
    assert lab(at).playing
    tick(at)  # the live fragment's own run: it draws, then trains
    first = lab(at).trainer.steps_done
    assert first > 0
    tick(at)
    assert lab(at).trainer.steps_done > first
    at.button(key="play").click().run()  # now Pause
    paused = lab(at).trainer.steps_done
    assert not lab(at).playing
    at.run()
    assert lab(at).trainer.steps_done == paused
    loss = next(t for t in chart(at, "Training: loss")["data"] if t.get("name") == "training loss")
    assert plotted(loss["x"]) == list(range(1, paused + 1))  # the curves show every step trained
    assert plotted(loss["y"]) == pytest.approx([s.loss for s in lab(at).trainer.history])


def trace_named(spec: dict, name: str) -> dict:
    return next(t for t in spec["data"] if t.get("name", "").startswith(name))


def test_the_curves_show_the_held_out_log_and_the_button_goes_back_to_the_best_step():
    at = build_page(app())
    held_out = next(t for t in chart(at, "Training: loss")["data"] if t.get("name") == "held-out loss")
    assert plotted(held_out["x"]) == [0]  # evaluated before the first step
    for _ in range(60):
        lab(at).advance()
    at.run()
    log, best = lab(at).held_out.frame(), lab(at).held_out.best
    spec = chart(at, "Training: loss")
    held_out = trace_named(spec, "held-out loss")
    assert plotted(held_out["x"]) == [0, 25, 50] and plotted(held_out["y"]) == log["loss"].tolist()
    assert held_out["line"]["dash"] == "dash"
    assert plotted(trace_named(spec, "best step")["x"]) == [best.step]
    button = at.button(key="restore_best")
    assert button.label == f"Go back to the best step ({best.step})" and not button.disabled
    assert any(lab(at).held_out.describe() in c.value for c in at.caption)

    button.click().run()
    assert not at.exception and lab(at).trainer.steps_done == 60
    for name, value in lab(at).model.state_dict().items():
        assert torch.equal(value, best.weights[name])
    assert at.button(key="restore_best").disabled
    spec = chart(at, "Training: loss")
    assert f"back to step {best.step}'s weights" in [a.get("text") for a in spec["layout"]["annotations"]]
    assert plotted(trace_named(spec, "held-out loss")["x"])[-1] == 60


def test_a_learning_rate_changed_mid_run_is_marked_on_the_curves():
    at = build_page(app())
    for _ in range(3):
        at.button(key="step").click().run()
    at.number_input(key="form.train.lr").set_value(0.0003).run()
    spec = chart(at, "Training: loss")
    [mark] = [a for a in spec["layout"]["annotations"] if "→" in a.get("text", "")]
    assert mark["text"] == f"lr {DEFAULT.train.lr:g} → 0.0003" and mark["x"] == 3
    dotted = [s for s in spec["layout"]["shapes"] if s["line"].get("dash") == "dot"]
    assert {(s["x0"], s["xref"]) for s in dotted} == {(3, "x"), (3, "x2")}


def test_reset_restores_the_fresh_model_of_the_seed():
    at = build_page(app())
    fresh = {k: v.clone() for k, v in lab(at).model.state_dict().items()}
    for _ in range(3):
        at.button(key="step").click().run()
    assert not torch.equal(lab(at).model.rnn.weight_hh_l0, fresh["rnn.weight_hh_l0"])
    at.button(key="reset").click().run()
    assert lab(at).trainer.steps_done == 0
    for k, v in lab(at).model.state_dict().items():
        assert torch.equal(v, fresh[k])


def test_a_divergent_setting_shows_the_diverged_panel_not_a_traceback():
    at = app()
    at.button(key="lesson.exploding").click().run()
    for _ in range(2):
        at.button(key="step").click().run()
    assert not at.exception
    trainer = lab(at).trainer
    assert trainer.diverged_at == 2
    assert any("diverged at step 2" in e.value for e in at.error)
    assert at.button(key="step").disabled and at.button(key="play").disabled
    assert all(torch.isfinite(p).all() for p in lab(at).model.parameters())


def test_changing_the_model_rebuilds_it_but_changing_training_carries_on():
    at = build_page(app())
    at.button(key="step").click().run()
    at.number_input(key="form.train.lr").set_value(0.01).run()
    assert lab(at).trainer.steps_done == 1 and lab(at).setup.train.lr == 0.01
    assert lab(at).trainer.optimizer.param_groups[0]["lr"] == 0.01
    at.number_input(key="form.model.hidden_size").set_value(16).run()
    assert lab(at).trainer.steps_done == 0 and lab(at).model.rnn.hidden_size == 16
    assert at.query_params["hidden_size"] == "16"


def test_a_refused_setting_says_why_and_keeps_the_model():
    at = build_page(app())
    at.button(key="step").click().run()
    model = lab(at).model
    at.number_input(key="form.train.lr").set_value(-1.0).run()
    assert not at.exception
    assert any("lr must be in [1e-08, 100.0]" in shown(e.value) for e in at.error)
    assert lab(at).model is model and lab(at).trainer.steps_done == 1
    assert at.number_input(key="form.train.lr").value == -1.0  # what the student typed stays


def test_switching_task_loads_that_tasks_preset_into_every_widget():
    at = build_page(app())
    at.selectbox(key="form.task.name").set_value("recall").run()
    at.run()  # the page reruns itself to show the new preset; AppTest needs telling
    setup = lab(at).setup
    assert setup.task == "recall" and setup.model.forget_bias == 3.0
    assert at.number_input(key="form.task.lag").value == 50
    assert at.number_input(key="form.train.lr").value == engine.TASKS["recall"].preset.train.lr


def test_a_task_parameter_with_named_values_offers_the_tasks_own_choices(monkeypatch):
    """The form reads the values from the task (Task.choices), not from a list of its own: given
    in another order, the radio offers them in that order."""
    choices = tuple(reversed(engine.TASKS["sine"].choices["mode"]))
    monkeypatch.setattr(engine.TASKS["sine"], "choices", {"mode": choices})
    at = build_page(app())
    at.selectbox(key="form.task.name").set_value("sine").run()
    at.run()  # the page reruns itself to show the new preset; AppTest needs telling
    radio = at.radio(key="form.task.mode")
    assert radio.options == list(choices) and radio.value == lab(at).setup.task_params["mode"]
    radio.set_value(choices[-1]).run()
    assert not at.exception
    assert lab(at).setup.task_params["mode"] == choices[-1] == lab(at).task.mode

def test_a_link_reproduces_the_settings_and_a_bad_link_falls_back_with_a_message():
    setup = BY_KEY["bidirectional"].setup
    at = build_page(app(setup.to_query()))
    assert lab(at).setup == setup
    at = app({"task": "adding", "lr": "fast", "hidden_sise": "64"})
    assert not at.exception
    warning = shown(at.warning[0].value)
    assert "lr must be a number" in warning and "hidden_sise is not a setting" in warning
    assert lab(at).setup == DEFAULT


def test_two_sessions_train_their_own_models():
    one, two = build_page(app()), build_page(app())
    two.number_input(key="form.model.hidden_size").set_value(32).run()
    for _ in range(2):
        one.button(key="step").click().run()
    assert lab(one) is not lab(two)
    assert lab(one).trainer.steps_done == 2 and lab(two).trainer.steps_done == 0
    assert lab(one).model.rnn.hidden_size == 64 and lab(two).model.rnn.hidden_size == 32
    fresh_two = engine.build_model(lab(two).setup.model, lab(two).task, seed=lab(two).setup.train.seed)
    for k, v in lab(two).model.state_dict().items():  # untouched by the other session's training
        assert torch.equal(v, fresh_two.state_dict()[k])


def uploader(at: AppTest, key: str):
    return next(u for u in at.get("file_uploader") if u.key == key)


def test_a_refused_model_upload_says_why_and_keeps_the_model():
    at = build_page(app())
    at.button(key="step").click().run()
    model = lab(at).model
    uploader(at, "torch_upload.file").set_value(("model.pt", b"\x80\x04\x95 a pickle", "application/octet-stream")
                                                ).run()
    assert not at.exception
    assert any("model.pt" in e.value and "pickle" in e.value for e in at.error)
    assert lab(at).model is model and lab(at).trainer.steps_done == 1


def test_an_uploaded_corpus_trains_and_stays_with_its_task():
    at = build_page(app({"task": "charlm"}))
    text = "def f(x):\n    return x + 1\n" * 40  # 1,080 characters: seq_len 100 needs 1,001 (10% held out)
    uploader(at, "upload.charlm").set_value(("mine.py", text.encode(), "text/plain")).run()
    assert lab(at).task.vocab == tuple(sorted(set(text)))
    at.button(key="step").click().run()
    assert lab(at).trainer.steps_done == 1
    uploader(at, "upload.charlm").set_value(("bad.txt", b"\xff\xfe not utf-8", "text/plain")).run()
    assert any("not UTF-8" in e.value for e in at.error)
    at.selectbox(key="form.task.name").set_value("sentiment").run()
    at.run()
    assert not at.exception and not at.error  # the corpus was not handed to the sentiment task
    assert lab(at).setup.task == "sentiment"


def test_leaving_the_page_and_coming_back_keeps_every_setting():
    at = app()
    at.button(key="lesson.lstm-gates").click().run()
    build_page(at)
    at.number_input(key="target_steps").set_value(5000).run()
    at.switch_page(nav.PATHS["home"]).run()
    at.switch_page(BUILD).run()
    assert not at.exception and not at.error
    assert lab(at).setup == BY_KEY["lstm-gates"].setup
    assert at.number_input(key="form.model.hidden_size").value == 64
    assert at.number_input(key="target_steps").value == 5000
    at.button(key="step").click().run()
    assert lab(at).trainer.steps_done == 1 and not at.error


def as_a_browser_mounts(box) -> int:
    """What a browser shows in a number box it mounts for the first time (the box's id includes the
    page, so each page's is new): the value the script sent with it, else the box's default. AppTest
    sends the session's value back instead, which hid the drop of "Train up to step" to 1."""
    return int(box.proto.value if box.proto.set_value else box.proto.default)


@pytest.mark.parametrize("key", ["gru-update-gate", "vanishing"])
def test_after_a_gates_or_gradients_lesson_build_and_train_keeps_the_target_and_an_lstm_plays_to_it(key):
    """The cards' "on Build & Train set the cell to LSTM, Reset and Play" trained one step: the
    browser showed "Train up to step" 1 there and sent it back."""
    at = app()
    at.button(key=f"lesson.{key}").click().run()
    build_page(at)
    box = at.number_input(key="target_steps")
    box.set_value(as_a_browser_mounts(box))
    at.selectbox(key="form.model.arch").set_value("lstm").run()
    at.button(key="reset").click().run()
    at.button(key="play").click().run()
    for _ in range(3):
        if not lab(at).playing:  # it reached its target
            break
        tick(at)
    assert not at.exception
    assert at.session_state["target_steps"] == BY_KEY[key].steps
    assert lab(at).setup.model.arch == "lstm" and lab(at).trainer.steps_done > 1 and lab(at).playing


def test_the_link_carries_the_step_target_and_a_link_with_one_opens_with_it():
    at = build_page(app({"task": "adding", "seq_len": "30", "steps": "300"}))
    assert not at.exception and not at.warning
    assert lab(at).setup.task_params["seq_len"] == 30
    assert at.number_input(key="target_steps").value == 300 and at.query_params["steps"] == "300"
    at.number_input(key="target_steps").set_value(700).run()
    assert at.query_params["steps"] == "700"
    lesson = BY_KEY["gru-update-gate"]  # a teacher's target over the lesson's own
    at = app({**lesson.setup.to_query(), "lesson": lesson.key, "steps": "300"})
    assert at.session_state["target_steps"] == 300 and at.session_state["lesson"] == lesson.key
    at = app({"task": "adding", "seq_len": "30", "steps": "0"})
    assert "steps must be between 1 and 1000000, got 0" in at.warning[0].value
    assert lab(at).setup == DEFAULT and at.session_state["lab"].trainer.steps_done == 0


def test_a_hidden_setting_comes_back_as_it_was():
    at = app()
    at.button(key="lesson.lstm-gates").click().run()  # opens the Gates page
    build_page(at)
    at.selectbox(key="form.model.arch").set_value("gru").run()
    assert lab(at).setup.model.forget_bias is None  # a GRU has no forget gate
    at.selectbox(key="form.model.arch").set_value("lstm").run()
    assert lab(at).setup.model.forget_bias == 3.0


@pytest.mark.parametrize("query", [{"arch": "transformer", "num_heads": "2", "hidden_size": "16"},
                                   {"task": "reverse", "attention": "additive"}])
def test_a_link_to_a_transformer_or_an_attention_model_opens_it_and_the_form_shows_it(query):
    at = build_page(app(query))
    assert not at.exception and not at.warning
    cfg = lab(at).setup.model
    assert cfg.arch == query.get("arch", "lstm") and cfg.attention == query.get("attention")
    if cfg.arch == "transformer":
        assert at.number_input(key="form.model.num_heads").value == 2
        assert at.number_input(key="form.model.hidden_size").value == 16
    else:
        assert at.selectbox(key="form.model.attention").value == "additive"
        assert at.number_input(key="form.train.scheduled_sampling").value == 0.0
    at.button(key="step").click().run()
    assert not at.exception and lab(at).trainer.steps_done == 1


def test_the_form_builds_a_transformer_and_refuses_heads_that_do_not_divide_d_model_keeping_the_model():
    at = build_page(app({"task": "charlm"}))
    at.selectbox(key="form.model.arch").set_value("transformer").run()
    assert not at.exception
    cfg = lab(at).setup.model
    assert cfg.arch == "transformer" and cfg.init == "default" and cfg.forget_bias is None
    assert lab(at).model.cfg == cfg
    kept = lab(at).model
    at.number_input(key="form.model.num_heads").set_value(3).run()
    assert "num_heads=3 does not divide hidden_size (d_model) = 128" in shown(at.error[0].value)
    assert "The model you had is unchanged" in at.error[0].value and lab(at).model is kept
    at.number_input(key="form.model.num_heads").set_value(4).run()
    assert not at.error and lab(at).setup.model.num_heads == 4
    at.checkbox(key="form.model.attention_scale").uncheck().run()  # why sqrt(d_k): the scaling removed
    assert not at.exception and lab(at).model.cfg.attention_scale is False
    assert at.query_params["attention_scale"] == "false"


def test_a_link_whose_settings_cannot_train_together_falls_back_with_a_message():
    at = app({"bidirectional": "true", "bptt_window": "5"})
    assert not at.exception
    assert "bidirectional" in at.warning[0].value
    assert lab(at).setup == DEFAULT


def test_an_empty_uploader_keeps_the_file_the_lab_trains_on():
    """After a reload (or back from another page) the file uploader is empty: the lab kept its
    upload and model; the page rebuilt them on the shipped data, losing the student's training."""
    from app.session.lab import Lab
    from app.session.link import preset_setup
    from app.widgets.uploads import task_data

    csv = "review,sentiment\n" + "".join(f"a fine film {i},positive\nnot good {i},negative\n" for i in range(30))
    setup = preset_setup("sentiment")
    lab = Lab(setup, task_data(setup.upload_param, csv.encode()))
    lab.trainer.step(3)
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params.update(setup.to_query())
    at.session_state["lab"], at.session_state["lab_id"] = lab, "a-lab-id"
    at.run()
    at.switch_page(BUILD).run()
    assert not at.exception
    assert at.session_state["lab"] is lab and lab.upload is not None and lab.trainer.steps_done == 3
    assert any("Training on your own file (60 reviews)" in c.value for c in at.caption)
    at.button(key="shipped_data").click().run()
    assert lab.upload is None and lab.trainer.steps_done == 0


def test_build_and_train_offers_the_runs_pytorch_script_or_says_why_not(monkeypatch):
    from app.widgets import export_script

    made = {}
    monkeypatch.setattr(export_script.st, "download_button",  # st's own is bound before the fixture patches
                        lambda label, data, *args, **kwargs: made.setdefault(label, data))
    at = AppTest.from_file(MAIN, default_timeout=60).run().switch_page(nav.PATHS["build"]).run()
    lab = at.session_state["lab"]
    assert made[export_script.LABEL]() == export_script.script_for(lab.setup, lab.upload)  # the adding preset
    made.clear()
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params.update({"task": "reverse", "arch": "transformer", "hidden_size": "16", "num_heads": "2"})
    at = at.run().switch_page(nav.PATHS["build"]).run()
    assert not made
    assert any("No PyTorch script for this run" in c.value and "transformer" in c.value for c in at.caption)


def test_sentiment_draws_the_bag_of_words_baseline_of_its_own_split():
    at = build_page(app({"task": "sentiment"}))
    assert not at.exception
    what, value = lab(at).task.baseline_metric
    spec = chart(at, "Training: loss and accuracy")
    (line,) = [t for t in spec["data"] if t["name"] == f"{what} (held-out)"]
    assert plotted(line["y"]) == [value, value] and line["xaxis"] == "x2"  # the accuracy panel
    captions = " ".join(c.value for c in at.caption)
    assert f"scores {value:.1%} on the same held-out ones" in captions
    network = lab(at).held_out.frame().metric.iloc[-1]  # the untrained network, scored at step 0: the line to pass
    assert f"At step 0 the network, untrained, scores {network:.1%}; the bag of words, {value:.1%}, is the line it " \
        "must pass." in captions


def test_an_uploaded_csvs_lengths_say_how_much_of_each_review_the_network_reads():
    from app.widgets.uploads import lengths_text, longer_read
    from engine.tasks import parse_reviews

    rows = ["review,sentiment"] + [f'"{" ".join(["fine"] * (100 + i))}",positive' for i in range(100)]
    reviews = parse_reviews("\n".join(rows))  # 100 to 199 words each
    text = lengths_text(reviews, 40)
    assert "a median of 150 words (90% have 189 or fewer)" in text and "so 100% of them are cut" in text
    assert longer_read(reviews, 40) == 190  # the 90th percentile, 189.1, rounded up: 90 of the 100 read whole
    assert longer_read(reviews, 150) is None  # half of them cut, not more


def long_reviews(words: int) -> bytes:
    """A review CSV of 60 distinct reviews of `words` to `words` + 59 words, half positive."""
    rows = ["review,sentiment"] + [f'"{" ".join(f"w{(7 * i + j) % 50}" for j in range(words + i))}",'
                                   f'{"positive" if i % 2 else "negative"}' for i in range(60)]
    return "\n".join(rows).encode()


def test_a_button_makes_the_network_read_most_uploaded_reviews_whole_or_says_why_it_cannot():
    from app.widgets.state import upload_key

    at = build_page(app({"task": "sentiment"}))
    uploader = next(u for u in at.get("file_uploader") if u.key == upload_key("sentiment"))
    uploader.set_value(("reviews.csv", long_reviews(100), "text/csv")).run()
    assert lab(at).setup.task_params["seq_len"] == 40 and len(lab(at).upload) == 60
    assert any("so 100% of them are cut" in c.value for c in at.caption)
    at.button(key="read_longer").click().run()
    assert not at.exception and lab(at).setup.task_params["seq_len"] == 154  # 90th percentile of 100..159: 153.1
    assert len(lab(at).upload) == 60 and lab(at).task.seq_len == 154  # the same upload, read longer
    assert at.number_input(key="form.task.seq_len").value == 154  # the form shows it
    assert any("so 8% of them are cut" in c.value for c in at.caption)  # 155 to 159 words: 5 of 60
    assert "read_longer" not in [b.key for b in at.button]  # most are read whole: nothing more to offer

    at = build_page(app({"task": "sentiment", "hidden_size": "256"}))  # within budget at 40 words, not at 1,954
    uploader = next(u for u in at.get("file_uploader") if u.key == upload_key("sentiment"))
    uploader.set_value(("reviews.csv", long_reviews(1900), "text/csv")).run()
    before = lab(at).model
    at.button(key="read_longer").click().run()
    assert not at.exception and lab(at).model is before and lab(at).setup.task_params["seq_len"] == 40
    assert "over this app's limit" in at.error[0].value and "The model you had is unchanged" in at.error[0].value


def test_the_form_builds_a_layer_normalised_gru_with_zoneout():
    at = build_page(app())
    at.selectbox(key="form.model.arch").set_value("gru").run()
    at.checkbox(key="form.model.layer_norm").check().run()
    at.number_input(key="form.model.zoneout").set_value(0.2).run()
    assert not at.exception and not at.error
    cfg = lab(at).setup.model
    assert (cfg.arch, cfg.layer_norm, cfg.zoneout) == ("gru", True, 0.2)
    assert "rnn.gain_ih_l0" in dict(lab(at).model.named_parameters())  # the layer's own gains
    assert at.query_params["layer_norm"] == "true" and at.query_params["zoneout"] == "0.2"


def test_the_recall_task_shows_the_measured_memory_span_of_every_cell_and_the_students_lag():
    """The chart plots the shipped runs (the mean over seeds of each run's best held-out accuracy),
    each cell's legend entry and the caption name its longest lag learned, the dashed line is the
    lab's own lag; the recall-lag lesson opens it; other tasks do not show it."""
    from app.session import memory_span

    at = build_page(app({"task": "recall", "lag": "30"}))
    assert not at.exception
    means, meta = memory_span.measured()
    spans = memory_span.spans(means, meta["settings"])
    spec = chart(at, "Short-term memory")
    *lines, lag_line = spec["data"]
    lines = {t["name"].split(":")[0]: t for t in lines}
    assert list(lines) == list(meta["settings"]["cells"])
    for cell, line in lines.items():
        rows = means[means.cell == cell].sort_values("lag")
        assert plotted(line["x"]) == list(rows.lag)
        assert plotted(line["y"]) == pytest.approx(list(rows.best * 100), rel=1e-9)
        assert line["name"] == f"{cell}: up to lag {spans[cell]}"
    assert lab(at).task.lag == 30 and plotted(lag_line["x"]) == [30, 30] and lag_line["name"] == "your lag (30)"
    caption = next(c.value for c in at.caption if c.value.startswith("Each line: the recall-lag lesson's network"))
    assert all(f"{cell} up to lag {span}" in caption for cell, span in spans.items()) and "your lag (30)" in caption
    assert "Your setup is not one of these four" not in caption  # the recall preset: the forget-bias-3 LSTM
    smaller = build_page(app({"task": "recall", "lag": "30", "hidden_size": "32"}))
    assert any("Your setup is not one of these four" in c.value for c in smaller.caption)
    assert not [e for e in at.expander if "Short-term memory" in e.label][0].proto.expanded  # folded: no lesson

    lesson = app()
    lesson.button(key="lesson.recall-lag").click().run()
    assert [e for e in lesson.expander if "Short-term memory" in e.label][0].proto.expanded

    adding = build_page(app({"task": "adding"}))
    assert not [c for c in adding.get("plotly_chart") if "Short-term memory" in c.proto.spec]


def test_a_link_whose_lab_this_process_does_not_hold_says_the_model_was_lost():
    """A killed app process: the proxy sends the reconnecting page to the other process, whose store
    has no such lab. The page said nothing and showed step 0; it says what was lost, and builds the
    link's settings (with its lesson) afresh."""
    lesson = BY_KEY["recall-lag"]
    at = AppTest.from_file(MAIN, default_timeout=60)
    for key, value in (lesson.setup.to_query() | {"lesson": lesson.key, "lab": "AAAAAAAAAAAAAAAAAAAAAA"}).items():
        at.query_params[key] = value
    at.run()
    [lost] = [w.value for w in at.warning if "is not on this server any more" in w.value]
    assert lost.startswith("The model this tab had (lab AAAAAAAAAAAAAAAAAAAAAA) is not on this server any more")
    lab = at.session_state["lab"]
    assert lab.setup == lesson.setup and lab.trainer.steps_done == 0 and at.session_state["lesson"] == lesson.key
    at.run()
    assert not [w for w in at.warning if "is not on this server" in w.value]  # said once


def test_a_reload_with_settings_edited_in_the_address_bar_applies_them_and_says_so():
    """The tab's lab comes back on a reload (its id in the link, its owner this browser); an edited
    setting beside the id was ignored silently. A model setting builds a new model; the link as
    the page wrote it changes nothing."""
    first = AppTest.from_file(MAIN, default_timeout=60).run()
    lab, lab_id, owner = (first.session_state[key] for key in ("lab", "lab_id", "unrolled_owner"))
    lab.step()

    def reload(query: dict) -> AppTest:
        at = AppTest.from_file(MAIN, default_timeout=60)
        at.session_state["unrolled_owner"] = owner  # the browser's cookie, as owner_token reads it
        for key, value in (query | {"lab": lab_id}).items():
            at.query_params[key] = value
        return at.run()

    same = reload(lab.setup.to_query())
    assert same.session_state["lab"] is lab and lab.trainer.steps_done == 1 and not same.warning
    wider = reload(lab.setup.to_query() | {"hidden_size": "32"})
    assert wider.session_state["lab"] is lab and lab.setup.model.hidden_size == 32 and lab.trainer.steps_done == 0
    assert any("differ from this tab's model" in w.value and "a new model was built" in w.value for w in wider.warning)


def test_a_link_streamlit_dropped_for_its_length_is_said_and_the_page_works():
    """Streamlit reads no query string of over 1,000 parameters; the page's script reopens it as
    ?link_dropped=<parameters>.<characters> (widgets/address.py), which the page says, building the
    defaults. A value the script did not write is not echoed, and beside settings it is ignored."""
    at = app({"link_dropped": "1001.7000"})
    assert not at.exception and at.session_state["lab"].setup == DEFAULT
    [said] = [shown(w.value) for w in at.warning if "The link you opened held" in w.value]
    assert "1,001 parameters and 7,000 characters" in said and "none of its settings were used" in said
    assert "link_dropped" not in at.query_params  # the page's own link replaced it
    for forged in ("<b>9" * 50, "²", "1001"):
        said = " ".join(w.value for w in app({"link_dropped": forged}).warning)
        assert "more parameters or characters than Streamlit reads" in said and "<b>" not in said
    beside = app({"link_dropped": "5.40", "hidden_size": "32"})
    assert not beside.warning and beside.session_state["lab"].setup.model.hidden_size == 32
