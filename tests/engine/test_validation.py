"""Every bad input raises a ValueError whose message names what to change (the field, the limit
or the fix), so a student typing into a form learns what went wrong."""
import dataclasses

import pytest
import torch

import engine


def raises_saying(call, *fragments):
    """call() raises ValueError and its message contains every fragment."""
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


# ---------------------------------------------------------------- ModelConfig

MODEL_CASES = [
    (dict(hidden_size=0), ["hidden_size", "between 1 and 1024", "got 0"]),
    (dict(hidden_size=-5), ["hidden_size", "between 1 and 1024"]),
    (dict(hidden_size=1025), ["hidden_size", "between 1 and 1024", "got 1025"]),
    (dict(num_layers=0), ["num_layers", "between 1 and 8"]),
    (dict(num_layers=9), ["num_layers", "between 1 and 8", "got 9"]),
    (dict(embedding_dim=0), ["embedding_dim", "between 1 and 512"]),
    (dict(embedding_dim=513), ["embedding_dim", "between 1 and 512", "got 513"]),
    (dict(hidden_size=64.0), ["hidden_size", "whole number"]),
    (dict(hidden_size="64"), ["hidden_size", "whole number"]),
    (dict(hidden_size=True), ["hidden_size", "whole number"]),
    (dict(num_layers=1.5), ["num_layers", "whole number"]),
    (dict(embedding_dim=None), ["embedding_dim", "whole number"]),
    (dict(arch="gpt"), ["arch", "rnn, lstm, gru, transformer", "'gpt'"]),
    (dict(arch="LSTM"), ["arch", "rnn, lstm, gru"]),
    (dict(arch="rnn", activation="gelu"), ["activation", "tanh, relu, sigmoid, linear", "'gelu'"]),
    (dict(init="xavier"), ["init", "default, orthogonal, identity, scaled"]),
    (dict(arch="lstm", activation="relu"), ["activation='relu'", "arch='rnn' only", "activation='tanh'"]),
    (dict(arch="gru", activation="sigmoid"), ["arch='rnn' only", "activation='tanh'"]),
    (dict(arch="gru", peephole=True), ["peephole", "arch='lstm'", "peephole=False"]),
    (dict(arch="rnn", peephole=True), ["peephole", "arch='lstm'"]),
    (dict(dropout=0.2, num_layers=1), ["dropout", "num_layers >= 2", "dropout=0"]),
    (dict(dropout=0.95, num_layers=2), ["dropout", "0.9"]),
    (dict(dropout=-0.1, num_layers=2), ["dropout", "[0.0, 0.9]"]),
    (dict(arch="gru", forget_bias=1.0), ["forget_bias", "arch='lstm'", "None"]),
    (dict(arch="rnn", forget_bias=1.0), ["forget_bias", "arch='lstm'"]),
    (dict(arch="lstm", forget_bias=float("nan")), ["forget_bias", "finite"]),
    (dict(init="scaled", spectral_radius=0.0), ["spectral_radius", "(0.0, 10.0]", "got 0.0"]),
    (dict(init="scaled", spectral_radius=-1.0), ["spectral_radius", "(0.0, 10.0]"]),
    (dict(init="scaled", spectral_radius=float("inf")), ["spectral_radius", "finite"]),
    (dict(bidirectional="yes"), ["bidirectional", "True or False"]),
]


@pytest.mark.parametrize("kwargs, fragments", MODEL_CASES, ids=[repr(k) for k, _ in MODEL_CASES])
def test_model_config_rejects(kwargs, fragments):
    raises_saying(lambda: engine.ModelConfig(**kwargs), *fragments)


@pytest.mark.parametrize("kwargs", [
    dict(hidden_size=1), dict(hidden_size=1024), dict(num_layers=8), dict(embedding_dim=512),
    dict(arch="rnn", activation="relu"), dict(arch="lstm", peephole=True), dict(num_layers=2, dropout=0.5),
    dict(arch="lstm", forget_bias=1.0), dict(init="scaled", spectral_radius=10.0),
])
def test_model_config_accepts_the_limits(kwargs):
    cfg = engine.ModelConfig(**kwargs)
    assert engine.ModelConfig.from_dict(cfg.to_dict()) == cfg


def test_model_config_from_dict_names_unknown_fields():
    raises_saying(lambda: engine.ModelConfig.from_dict({"hidden": 8}), "unknown ModelConfig fields", "'hidden'",
                  "hidden_size")


# ---------------------------------------------------------------- TrainConfig

TRAIN_CASES = [
    (dict(lr=0.0), ["lr", "[1e-08, 100.0]", "got 0.0"]),
    (dict(lr=-1e-3), ["lr", "[1e-08, 100.0]"]),
    (dict(lr=1e-300), ["lr", "[1e-08, 100.0]", "got 1e-300"]),
    (dict(lr=float("nan")), ["lr", "finite"]),
    (dict(lr=float("inf")), ["lr", "finite"]),
    (dict(lr=float("-inf")), ["lr", "finite"]),
    (dict(lr="0.01"), ["lr", "must be a number"]),
    (dict(optimizer="adagrad"), ["optimizer", "sgd, momentum, adam, rmsprop", "'adagrad'"]),
    (dict(batch_size=0), ["batch_size", "between 1 and 1024", "got 0"]),
    (dict(batch_size=1025), ["batch_size", "between 1 and 1024"]),
    (dict(batch_size=32.0), ["batch_size", "whole number"]),
    (dict(clip_norm=0.0), ["clip_norm", "(0.0,"]),
    (dict(clip_norm=-1.0), ["clip_norm", "(0.0,"]),
    (dict(clip_value=0.0), ["clip_value", "(0.0,"]),
    (dict(bptt_window=-1), ["bptt_window", "between 0 and 10000", "got -1"]),
    (dict(seed=-1), ["seed", "between 0 and"]),
]


@pytest.mark.parametrize("kwargs, fragments", TRAIN_CASES, ids=[repr(k) for k, _ in TRAIN_CASES])
def test_train_config_rejects(kwargs, fragments):
    raises_saying(lambda: engine.TrainConfig(**kwargs), *fragments)


def test_train_config_accepts_the_limits():
    cfg = engine.TrainConfig(lr=100.0, batch_size=1024, clip_norm=1e-6, bptt_window=0)
    assert engine.TrainConfig.from_dict(cfg.to_dict()) == cfg


# ---------------------------------------------------------------- make_task and seq_len

def test_make_task_unknown_name():
    raises_saying(lambda: engine.make_task("addition"), "unknown task 'addition'",
                  "adding, recall, parity, sine, charlm, sentiment")


@pytest.mark.parametrize("name, param, expected", [
    ("adding", "seqlen", "seq_len"),
    ("recall", "seq_len", "lag"),
    ("sine", "amplitude", "mode"),
])
def test_make_task_unknown_parameter(name, param, expected):
    raises_saying(lambda: engine.make_task(name, **{param: 5}), f"no parameter {param}", expected)


SEQ_TASKS = ["adding", "parity", "sine", "charlm", "sentiment"]


@pytest.mark.parametrize("name", SEQ_TASKS)
@pytest.mark.parametrize("seq_len", [1, 0, -3, 2001])
def test_seq_len_out_of_range(name, seq_len):
    raises_saying(lambda: engine.make_task(name, seq_len=seq_len), "seq_len", "between 2 and 2000", f"got {seq_len}")


@pytest.mark.parametrize("name", SEQ_TASKS)
def test_seq_len_not_whole(name):
    raises_saying(lambda: engine.make_task(name, seq_len=10.5), "seq_len", "whole number")


@pytest.mark.parametrize("kwargs, fragments", [
    (dict(lag=0), ["lag", "between 1 and 1999"]),
    (dict(lag=2000), ["lag", "between 1 and 1999"]),
    (dict(symbols=1), ["symbols", "between 2 and 64"]),
    (dict(distractors=0), ["distractors", "between 1 and 64"]),
])
def test_recall_parameters(kwargs, fragments):
    raises_saying(lambda: engine.make_task("recall", **kwargs), *fragments)


@pytest.mark.parametrize("name, kwargs, fragments", [
    ("sine", dict(mode="predict"), ["mode", "forecast, generate"]),
    ("sine", dict(noise=-0.1), ["noise", "[0.0, 1.0]"]),
    ("parity", dict(running="yes"), ["running", "True or False"]),
    ("adding", dict(seed=-1), ["seed", "between 0 and"]),
])
def test_other_task_parameters(name, kwargs, fragments):
    raises_saying(lambda: engine.make_task(name, **kwargs), *fragments)


def test_batch_size_must_be_positive():
    task = engine.make_task("adding", seq_len=5)
    raises_saying(lambda: task.batch(0), "batch_size", "between 1 and")


# ---------------------------------------------------------------- charlm text

@pytest.mark.parametrize("text, fragments", [
    ("", ["corpus", "empty"]),
    (b"", ["corpus", "empty"]),
    ("  \n\t \n", ["corpus", "empty"]),
    (b"caf\xe9 au lait " * 10, ["not UTF-8", "byte 3", "save it as UTF-8"]),
    (b"\xff\xfeh\x00i\x00" * 20, ["not UTF-8", "byte 0"]),  # UTF-16
    ("x" * 49, ["49 characters", "seq_len + 1 = 51", "shorten seq_len"]),
    ("x" * 50, ["50 characters", "seq_len"]),
    ("".join(chr(0x100 + i) for i in range(300)), ["300 distinct characters", "256"]),
    (12345, ["corpus", "must be text", "int"]),
], ids=["empty", "empty-bytes", "whitespace", "latin-1", "utf-16", "seq_len-1", "seq_len", "300-chars", "int"])
def test_charlm_bad_text(text, fragments):
    raises_saying(lambda: engine.make_task("charlm", text=text, seq_len=50), *fragments)


def test_charlm_vocabulary_at_the_cap_is_accepted():
    text = "".join(chr(0x100 + i) for i in range(256)) * 2
    assert engine.make_task("charlm", text=text, seq_len=50).spec.input_size == 256


def test_charlm_encode_unknown_character():
    task = engine.make_task("charlm", text="abc" * 11, seq_len=3)
    raises_saying(lambda: task.encode("abz"), "'z'", "not in this corpus")


# ---------------------------------------------------------------- sentiment CSV

def csv_rows(n: int, header: str = "review,sentiment", label: str = "positive") -> str:
    return "\n".join([header] + [f"review number r{i},{label if i % 2 else 'negative'}" for i in range(n)])


@pytest.mark.parametrize("data, fragments", [
    (csv_rows(20, header="text,label"), ["columns 'review' and 'sentiment'", "IMDB", "['text', 'label']"]),
    (csv_rows(20, header="review"), ["columns 'review' and 'sentiment'"]),
    ("   ", ["CSV file", "empty"]),
    (csv_rows(20, label="great"), ["line 3", "'great'", "positive/negative"]),
    (csv_rows(20) + "\nlast review,", ["line 22", "''", "positive/negative"]),
    (csv_rows(9), ["are 9 distinct ones", "at least 10"]),
    # repeats count once
    (csv_rows(12).replace("r1,", "r0,").replace("r3,", "r0,").replace("r5,", "r0,"),
     ["are 9 distinct ones", "at least 10"]),
    (csv_rows(20).encode("utf-8") + b"\nun film tr\xe8s bon,positive", ["CSV file", "not UTF-8", "save it as UTF-8"]),
    (b"\x00\x01\x02", ["columns 'review' and 'sentiment'"]),
], ids=["other-columns", "one-column", "blank", "bad-label", "empty-label", "9-rows", "9-distinct-rows",
        "latin-1", "binary"])
def test_sentiment_bad_csv(data, fragments):
    raises_saying(lambda: engine.make_task("sentiment", csv_text=data), *fragments)


@pytest.mark.parametrize("max_vocab", [2, 0, 20001])
def test_sentiment_max_vocab(max_vocab):
    raises_saying(lambda: engine.make_task("sentiment", max_vocab=max_vocab), "max_vocab", "between 3 and 20000")


# ---------------------------------------------------------------- Trainer and record

def test_trainer_refuses_truncated_bptt_on_a_bidirectional_model():
    task = engine.make_task("adding", seq_len=10)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4, bidirectional=True), task)
    raises_saying(lambda: engine.Trainer(model, task, engine.TrainConfig(bptt_window=5)),
                  "bptt_window=0", "bidirectional=False")
    engine.Trainer(model, task, engine.TrainConfig(bptt_window=0))  # full BPTT is fine


def test_trainer_refuses_truncated_bptt_on_vec2seq():
    task = engine.make_task("sine", seq_len=10, mode="generate")
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), task)
    raises_saying(lambda: engine.Trainer(model, task, engine.TrainConfig(bptt_window=5)), "bptt_window=0", "vec2seq")


@pytest.mark.parametrize("rows", [7, 0, 10_000_001, 64.0, None])
def test_trainer_history_rows(rows):
    task = engine.make_task("adding", seq_len=6)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=2), task)
    raises_saying(lambda: engine.Trainer(model, task, engine.TrainConfig(), history_rows=rows), "history_rows")


@pytest.mark.parametrize("seed, purpose, fragments", [
    (0, "probes", ["purpose", "init, batches, coins, dropout, held_out, probe", "'probes'"]),
    (-1, "probe", ["seed", "between 0 and"]),
    (1.5, "probe", ["seed", "whole number"]),
])
def test_random_stream_arguments(seed, purpose, fragments):
    raises_saying(lambda: engine.rng.stream(seed, purpose), *fragments)


@pytest.mark.parametrize("index", [4, 100, -1])
def test_record_index_outside_the_batch(index):
    task = engine.make_task("adding", seq_len=6)
    torch.manual_seed(0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=4), task)
    x, y = task.batch(4)
    raises_saying(lambda: engine.record(model, x, y, index=index), "index", "between 0 and 3", "4 samples",
                  f"got {index}")


@pytest.mark.parametrize("kwargs", [dict(init="scaled"), dict(spectral_radius=1.2),
                                    dict(init="orthogonal", spectral_radius=0.9)])
def test_spectral_radius_and_scaled_init_go_together(kwargs):
    raises_saying(lambda: engine.ModelConfig(**kwargs), "spectral_radius goes with init='scaled'")


def test_a_csv_with_an_unclosed_quote_says_what_to_fix():
    rows = "review,sentiment\n" + "".join(f"fine film {i},positive\n" for i in range(12))
    broken = rows + '"this review never closes its quote,negative\n' + "x" * 140_000 + "\n"
    raises_saying(lambda: engine.make_task("sentiment", csv_text=broken), "quote")


def test_encoder_decoder_limits_name_the_users_own_fields():
    raises_saying(lambda: engine.make_task("reverse", seq_len=2000), "seq_len", "1999")
    task = engine.make_task("reverse", seq_len=4)
    cfg = engine.ModelConfig(hidden_size=1024, bidirectional=True)
    raises_saying(lambda: engine.build_model(cfg, task), "hidden_size <= 512")


@pytest.mark.parametrize("task_name", ["charlm", "word_lm"])
@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_a_language_model_that_would_read_the_token_it_predicts_is_refused(task_name, arch):
    task = engine.make_task(task_name)
    cfg = engine.ModelConfig(arch=arch, hidden_size=16, bidirectional=True, **({"num_heads": 2} if arch == "transformer"
                                                                                 else {}))
    with pytest.raises(ValueError, match=f"this {task_name} task predicts each next token .* set bidirectional=False"):
        engine.build_model(cfg, task)
    with pytest.raises(ValueError, match="set bidirectional=False"):  # a checkpoint's header: the spec alone
        engine.build_model(cfg, task.spec)
    engine.build_model(dataclasses.replace(cfg, bidirectional=False), task)  # reading leftwards only is a model
    masked = engine.make_task("masked_lm")  # guessing a hidden word from both sides is BERT's objective
    engine.build_model(dataclasses.replace(cfg, arch="transformer", num_heads=2), masked)
