"""The Lab and its links, without a browser: what rebuilds, what retunes, what a link holds,
what an upload may replace."""
import dataclasses

import pytest
import torch

import engine
from app.session import probes
from app.session.lab import RENEW_FACTOR, Lab
from app.session.lessons import LESSONS
from app.session.link import DEFAULT, OFFERED, parse_query, preset_setup


@pytest.mark.parametrize("setup", [preset_setup(t) for t in OFFERED] + [lesson.setup for lesson in LESSONS],
                         ids=[f"preset-{t}" for t in OFFERED] + [f"lesson-{lesson.key}" for lesson in LESSONS])
def test_a_link_round_trips_every_preset_and_lesson(setup):
    query = setup.to_query()
    assert all(isinstance(v, str) for v in query.values())
    assert parse_query(query) == setup


TRANSFORMERS = [  # a transformer on a task of each shape: values in, tokens in, an encoder-decoder
    dataclasses.replace(preset_setup(task), model=engine.ModelConfig(
        arch="transformer", hidden_size=32, num_heads=4, num_layers=2, bidirectional=task == "sentiment",
        position_encoding="learned" if task == "charlm" else "sinusoidal"))
    for task in ("adding", "charlm", "sentiment", "reverse")
]


@pytest.mark.parametrize("setup", TRANSFORMERS, ids=[s.task for s in TRANSFORMERS])
def test_a_transformers_link_round_trips(setup):
    assert parse_query(setup.to_query()) == setup


def test_a_link_names_no_setting_that_means_nothing_for_its_model():
    """The address bar carried attention, heads, positional-encoding and scheduled-sampling
    settings that no page showed; now it names a setting only where the model has it (a
    transformer's heads, a recurrent decoder's attention), and a link still reproduces every
    setup (the tests above)."""
    from app.session.link import CONFIG_FIELDS

    def only(kinds: tuple[str, ...]) -> set[str]:  # the fields the engine says apply to these models only
        return {f.name for f in CONFIG_FIELDS if f.metadata.get("applies_to") in kinds}

    TRANSFORMER_ONLY = only(("transformer",))
    RECURRENT_ONLY = only(("recurrent", "recurrent decoder", "rnn", "lstm"))
    DECODER_ONLY = only(("any decoder", "recurrent decoder"))
    assert TRANSFORMER_ONLY == {"num_heads", "dim_feedforward", "position_encoding", "attention_scale"}
    assert DECODER_ONLY == {"attention", "reverse_source", "scheduled_sampling"}
    assert only(("recurrent",)) == {"embedding_dim", "init", "spectral_radius", "layer_norm", "zoneout"}
    assert only(("rnn",)) == {"activation"} and only(("lstm",)) == {"peephole", "forget_bias"}

    lessons = [lesson.setup for lesson in LESSONS]
    recurrent = [s for s in lessons if s.model.arch != "transformer"]
    assert len(recurrent) < len(lessons)  # the lessons of the Transformers pages are checked below
    presets = [preset_setup(t) for t in OFFERED]  # masked_lm's and word_lm's are transformers
    for setup in [s for s in presets if s.model.arch != "transformer"] + recurrent:
        named = set(setup.to_query())
        assert not named & set(TRANSFORMER_ONLY), setup.task
        assert ("activation" in named) == (setup.model.arch == "rnn"), setup.task  # a GRU's and LSTM's is tanh
        assert ("forget_bias" in named) == ("peephole" in named) == (setup.model.arch == "lstm"), setup.task
        assert ("attention" in named) == setup.decodes and ("scheduled_sampling" in named) == setup.decodes
    for setup in TRANSFORMERS + [s for s in presets + lessons if s.model.arch == "transformer"]:
        named = set(setup.to_query())
        assert {"num_heads", "position_encoding"} <= named and not named & set(RECURRENT_ONLY)
        assert not named & {"attention", "reverse_source"}
        assert (set(DECODER_ONLY) & named) == ({"scheduled_sampling"} if setup.decodes else set())


def test_a_link_that_names_a_setting_its_model_has_not_gets_the_configs_message():
    with pytest.raises(ValueError, match="num_heads applies to arch='transformer' only"):
        parse_query({"task": "adding", "num_heads": "4"})


@pytest.mark.parametrize("query, fragments", [
    ({"task": "chess"}, ["task='chess' is not a task", "adding"]),
    ({"lr": "0"}, ["lr must be in [1e-08, 100.0]"]),
    ({"bidirectional": "maybe"}, ["bidirectional must be true or false"]),
    ({"hidden_size": "6.5"}, ["hidden_size must be a whole number"]),
    ({"task": "recall", "lag": "0"}, ["lag must be between 1"]),
    ({"text": "x"}, ["text is not a setting"]),
    ({"lr": "x", "arch": "transformer!"}, ["lr must be a number"]),
])
def test_a_bad_link_says_what_is_wrong(query, fragments):
    with pytest.raises(ValueError) as info:
        parse_query(query)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_a_link_with_only_some_settings_takes_the_rest_from_the_task_preset():
    setup = parse_query({"task": "recall", "arch": "gru", "forget_bias": "none"})
    assert setup.model.arch == "gru" and setup.model.forget_bias is None
    assert setup.train == engine.TASKS["recall"].preset.train and setup.task_params["lag"] == 50


def test_training_settings_carry_on_and_model_settings_rebuild():
    lab = Lab(DEFAULT)
    lab.trainer.step(2)
    faster = dataclasses.replace(DEFAULT, train=dataclasses.replace(DEFAULT.train, lr=0.01))
    assert lab.change(faster) == "retuned" and lab.trainer.steps_done == 2
    wider = dataclasses.replace(faster, model=dataclasses.replace(DEFAULT.model, hidden_size=8))
    assert lab.change(wider) == "rebuilt" and lab.trainer.steps_done == 0
    assert lab.change(wider) == "unchanged"


def test_a_new_seed_builds_the_model_its_data_and_samples_from_it():
    """A seed draws the start, the training batches and the probe and held-out samples: with the old
    model kept, Compare cells' "those Build & Train scores" were of another seed's held-out set."""
    lab = Lab(DEFAULT)
    lab.trainer.step(2)
    reseeded = dataclasses.replace(DEFAULT, train=dataclasses.replace(DEFAULT.train, seed=7))
    assert lab.change(reseeded) == "rebuilt" and lab.trainer.steps_done == 0
    fresh = Lab(reseeded)
    assert all(torch.equal(a, b) for a, b in zip(lab.model.parameters(), fresh.model.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(lab.probes.samples, fresh.probes.samples))
    assert torch.equal(lab.held_out.x, fresh.held_out.x) and torch.equal(lab.held_out.y, fresh.held_out.y)


def test_a_refused_change_leaves_the_lab_untouched():
    lab = Lab(DEFAULT)
    lab.trainer.step(1)
    model = lab.model
    broken = dataclasses.replace(DEFAULT, task_params={"seq_len": 1})
    with pytest.raises(ValueError, match="seq_len"):
        lab.change(broken)
    assert lab.model is model and lab.setup == DEFAULT and lab.trainer.steps_done == 1


def test_train_for_stops_at_the_target_step_and_pauses():
    lab = Lab(DEFAULT)
    lab.playing = True
    lab.train_for(seconds=30, until=5)
    assert lab.trainer.steps_done == 5 and not lab.playing


def test_train_for_counts_its_time_on_the_clock_it_is_given():
    """A tick passes its thread's CPU clock: a clock that moves 0.1 s per reading stops a 0.35 s
    budget after the readings before steps 1-4 (0.1, 0.2, 0.3 and 0.4 past the start), whatever
    the wall clock says."""
    readings = iter(i / 10 for i in range(100))
    lab = Lab(DEFAULT)
    lab.playing = True
    assert lab.train_for(seconds=0.35, until=100, clock=lambda: next(readings)) == 3
    assert lab.trainer.steps_done == 3 and lab.playing


def test_an_uploaded_checkpoint_replaces_the_model_and_brings_its_task():
    source = Lab(preset_setup("parity"))
    source.trainer.step(3)
    lab = Lab(DEFAULT)
    lab.load_model(engine.to_bytes(source.model))
    assert lab.setup.task == "parity" and lab.trainer.steps_done == 0
    for k, v in lab.model.state_dict().items():
        assert torch.equal(v, source.model.state_dict()[k])


@pytest.mark.parametrize("data, fragment", [
    (b"\x80\x04\x95 not really a pickle", "pickle"),
    (b"hello, this is a text file", "not a .safetensors"),
])
def test_a_bad_upload_is_refused_and_nothing_is_lost(data, fragment):
    lab = Lab(DEFAULT)
    lab.trainer.step(2)
    model = lab.model
    with pytest.raises(ValueError, match=fragment):
        lab.load_model(data)
    assert lab.model is model and lab.trainer.steps_done == 2


def test_a_checkpoint_whose_task_parameters_differ_says_which_to_set():
    source = Lab(dataclasses.replace(preset_setup("recall"), task_params={"lag": 50, "symbols": 6, "distractors": 4}))
    lab = Lab(preset_setup("recall"))
    with pytest.raises(ValueError, match="set the task's parameters"):
        lab.load_model(engine.to_bytes(source.model))


def test_a_click_during_a_playing_loop_waits_for_its_step_and_stops_it():
    """Streamlit can start the next run (a Step click) while a fragment's loop still trains in
    another thread: the two never step at once, and the loop stops at the next step boundary.
    The click is made to arrive while the loop is inside its third step (events, not sleeps)."""
    import threading

    lab = Lab(DEFAULT)
    real_step, inside, most, calls = lab.trainer.step, [0], [0], [0]
    in_third_step, clicked = threading.Event(), threading.Event()

    def watched_step(n=1):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        calls[0] += 1
        if calls[0] == 3:
            in_third_step.set()
            assert clicked.wait(timeout=30)  # the click has started while this step holds the lock
        try:
            return real_step(n)
        finally:
            inside[0] -= 1

    lab.trainer.step = watched_step
    lab.playing = True
    loop = threading.Thread(target=lab.train_for, args=(60.0, 10**6))
    loop.start()
    assert in_third_step.wait(timeout=30)
    click = threading.Thread(target=lambda: (clicked.set(), lab.step()))  # the Step button: pause, then one step
    click.start()
    click.join(timeout=30)
    loop.join(timeout=30)
    assert not loop.is_alive() and not click.is_alive() and not lab.playing
    assert most[0] == 1
    steps = [s.step for s in lab.trainer.history]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) > 3


def test_a_checkpoint_refused_by_the_trainer_replaces_nothing():
    truncated = dataclasses.replace(DEFAULT, train=dataclasses.replace(DEFAULT.train, bptt_window=5))
    lab = Lab(truncated)
    model, trainer = lab.model, lab.trainer
    bidirectional = Lab(dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, bidirectional=True)))
    with pytest.raises(ValueError, match="bidirectional"):
        lab.load_model(engine.to_bytes(bidirectional.model))
    assert lab.setup == truncated and lab.model is model and lab.trainer is trainer
    lab.reset()  # still a working lab


def test_a_setup_too_heavy_for_a_shared_cpu_is_refused_with_the_numbers():
    heavy = dataclasses.replace(
        DEFAULT,
        task_params={"seq_len": 1000},
        model=dataclasses.replace(DEFAULT.model, hidden_size=512),
        train=dataclasses.replace(DEFAULT.train, batch_size=64),
    )
    lab = Lab(DEFAULT)
    with pytest.raises(ValueError, match="batch 64 x 1000 steps x 512 units"):
        lab.change(heavy)
    assert lab.setup == DEFAULT


def test_a_transformer_checkpoint_opens_with_its_weights_and_a_link_that_reproduces_its_settings():
    task = engine.make_task("parity")
    transformer = engine.build_model(engine.ModelConfig(arch="transformer", hidden_size=16, num_heads=2), task, seed=3)
    lab = Lab(DEFAULT)
    lab.load_model(engine.to_bytes(transformer))
    assert lab.setup.task == "parity" and lab.setup.model == transformer.cfg
    for (name, ours), theirs in zip(lab.model.state_dict().items(), transformer.state_dict().values(), strict=True):
        assert torch.equal(ours, theirs), name
    assert parse_query(lab.setup.to_query()) == lab.setup


def test_each_probe_sample_is_recorded_once_per_model_version(monkeypatch):
    lab = Lab(preset_setup("parity"))
    first, second = lab.recording(0), lab.recording(1)
    calls = []
    real = engine.record
    monkeypatch.setattr(engine, "record", lambda *a, **k: calls.append(k.get("index")) or real(*a, **k))
    assert lab.recording(0) is first and lab.recording(1) is second and not calls  # going back redraws
    lab.step()
    again = lab.recording(0)
    assert calls[-1] == 0 and again is not first  # trained: recorded anew
    assert torch.equal(again.hidden, real(lab.model, *lab.probes.samples, index=0).hidden)


def test_a_tick_keeps_the_recording_until_renewing_it_is_due(monkeypatch):
    """A playing page's tick (lab.ticking) draws the kept recording until RENEW_FACTOR times the last
    renewal's drawing has passed; a whole-page run, or a tick after that, records the weights as they
    are, and says at which step (probes.recorded_at)."""
    clock = [100.0]
    monkeypatch.setattr(probes.time, "monotonic", lambda: clock[0])
    lab = Lab(preset_setup("parity"))
    first = lab.recording(0)
    lab.drawn(0.2)  # a drawing of a new recording cost 0.2 s: the next renewal waits RENEW_FACTOR x 0.2 s
    assert lab.renewal_cost == 0.2 and lab.probes.recorded_at == 0
    lab.step()
    lab.ticking = True
    clock[0] += RENEW_FACTOR * 0.2 - 0.01
    assert lab.recording(0) is first and lab.probes.recorded_at == 0  # kept: the tick sends its figures as they were
    lab.drawn(0.01)  # a tick that drew the kept figures: not what a renewal costs
    assert lab.renewal_cost == 0.2
    clock[0] += 0.02
    renewed = lab.recording(0)
    assert renewed is not first and lab.probes.recorded_at == 1
    assert torch.equal(renewed.hidden, engine.record(lab.model, *lab.probes.samples, index=0).hidden)
    lab.step()
    lab.ticking = False
    assert lab.recording(0) is not renewed and lab.probes.recorded_at == 2  # a whole-page run: as the weights are


def test_a_model_setting_change_keeps_the_task_and_its_parsed_data(monkeypatch):
    """Rebuilding the model for a new hidden size must not parse an uploaded corpus again (an
    IMDB-size CSV took 22.8 s each time); a new task parameter or upload does make a new task."""
    from app.widgets.uploads import task_data

    csv = "review,sentiment\n" + "".join(f"a fine film {i},positive\nnot a good film {i},negative\n" for i in range(40))
    setup = preset_setup("sentiment")
    parsed = task_data(setup.upload_param, csv.encode())
    assert task_data(setup.upload_param, csv.encode()) is parsed  # one parse for every session
    lab = Lab(setup, parsed)
    made, real = [], engine.make_task
    monkeypatch.setattr(engine, "make_task", lambda *a, **k: made.append(a) or real(*a, **k))
    task = lab.task
    wider = dataclasses.replace(setup, model=dataclasses.replace(setup.model, hidden_size=setup.model.hidden_size + 8))
    assert lab.change(wider, parsed) == "rebuilt"
    assert lab.task is task and made == [] and lab.model.cfg.hidden_size == setup.model.hidden_size + 8
    longer = dataclasses.replace(wider, task_params={**wider.task_params, "seq_len": 30})
    assert lab.change(longer, parsed) == "rebuilt" and lab.task is not task and len(made) == 1


def test_a_download_gets_the_lock_between_two_steps_of_a_playing_loop():
    """Python's locks are not fair: a loop that takes the lab's lock again right after each step
    kept a download of the model waiting; hold() gets it at the next step boundary."""
    import threading

    lab = Lab(DEFAULT)
    real_advance, fifth = lab.advance, threading.Event()

    def advance(until=None):
        took = real_advance(until)
        if lab.trainer.steps_done == 5:
            fifth.set()
        return took

    lab.advance = advance
    lab.playing = True
    loop = threading.Thread(target=lab.train_for, args=(60.0, 10**6))
    loop.start()
    waited = []  # steps the loop took between asking for the lock and getting it
    try:
        assert fifth.wait(timeout=30)
        for _ in range(30):  # with the plain lock, some of these waited for 200 steps and more
            asked = lab.trainer.steps_done
            with lab.hold():
                waited.append(lab.trainer.steps_done - asked)
    finally:
        lab.playing = False
        loop.join(timeout=30)
    assert not loop.is_alive() and max(waited) <= 1, waited


def test_the_sidebar_summary_gives_the_latest_held_out_score_and_its_step():
    lab = Lab(preset_setup("reverse"))
    assert lab.summary()["held-out accuracy"] == f"{lab.held_out.frame()['metric'].iloc[-1]:.1%} (step 0)"
    with lab.lock:
        for _ in range(26):
            lab.advance()
    last = lab.held_out.frame().iloc[-1]
    assert last["step"] == 25 and lab.summary()["held-out accuracy"] == f"{last['metric']:.1%} (step 25)"
    sine = Lab(preset_setup("sine"))
    assert sine.summary()["held-out R²"] == f"{sine.held_out.frame()['metric'].iloc[-1]:.3g} (step 0)"
