"""Bad input, everywhere (issue 15): one table of (page, input, value, the words its message must
hold) over every page's inputs and the link, with the values students and careless users try.
Each row gets a message on the page that says what to change, never an exception, and the
student's model and its history (trained a few steps first) survive it. Every resource limit is
named by the message on every path into a session: a link, the form, an upload, a checkpoint.

What other modules prove is referred to, not repeated: test_literal.py (a link key or file name
echoed as text, cut), test_safety_config.py (no traceback reaches the browser, the upload cap),
test_budget.py (the size budget on a lesson, the form, a checkpoint and a comparison),
tests/engine/test_checkpoint.py (forged headers field by field, pickles that never run),
tests/engine/test_validation.py (every config and task field), tests/engine/test_arguments.py
(the engine's public calls given the wrong kind of argument, the batch's memory), and
test_lab.py's parse_query cases. The link's parse is swept whole below, without AppTest.

The resource limits, and the rows that name them on each path: activations per step (a link, the
form, a checkpoint; a lesson in test_budget.py), a batch's memory (a link, the form), upload size
(a corpus over MAX_TEXT_CHARS; the server's cap in test_safety_config.py), vocabulary (a corpus of
300 distinct characters, max_vocab), sequence length (a link, the form, a date or text typed) and
the steps a lab is asked to train ("Train up to step", a box with its own range, below)."""
from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session.budget import MAX_STEP_COST
from app.session.link import DEFAULT, OFFERED, parse_query, preset_setup
from engine.tasks.base import MAX_BATCH_BYTES, MAX_SEQ_LEN
from engine.tasks.text import MAX_TEXT_CHARS

from .conftest import MAIN, shown

HUGE_TEXT = "k" * 100_000  # a 100 KB string
UNICODE = "日本語 ☃ 😀 é"


# ---------------------------------------------------------------- the student's work, before and after

@dataclass(frozen=True)
class Kept:
    """What a bad input must leave as it was: the lab, its step count, its history and its weights."""

    lab: object
    steps: int
    history: int
    weights: torch.Tensor

    @classmethod
    def of(cls, at: AppTest) -> Kept:
        lab = at.session_state["lab"]
        weights = torch.cat([p.detach().flatten() for p in lab.model.parameters()]).clone()
        return cls(lab, lab.trainer.steps_done, len(lab.trainer.history_frame()), weights)

    def still(self, at: AppTest) -> None:
        lab = at.session_state["lab"]
        assert lab is self.lab and lab.trainer.steps_done == self.steps == 3
        assert len(lab.trainer.history_frame()) == self.history
        assert torch.equal(torch.cat([p.detach().flatten() for p in lab.model.parameters()]), self.weights)


def opened(page: str, query: dict[str, str] | None = None) -> AppTest:
    """The app on `page`, its lab made from `query` and trained three steps."""
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params.update(query or {})
    at.run()
    for _ in range(3):
        at.session_state["lab"].step()
    return at.switch_page(nav.PATHS[page]).run()


def messages(at: AppTest) -> str:
    """Every error, warning and info on the page, as the browser shows it."""
    return " | ".join(shown(m.value) for kind in ("error", "warning", "info") for m in at.get(kind))


def uploader(at: AppTest, key: str):
    return next(u for u in at.get("file_uploader") if u.key == key)


# ---------------------------------------------------------------- the table

@dataclass(frozen=True)
class Row:
    page: str  # the page's url path, or "link" for a link opened afresh
    input: str  # what the student touches, as the page labels it
    value: str  # what they give, in words (the test's id)
    says: tuple[str, ...]  # words the message must hold: what to change, the limit
    feed: Callable[[AppTest], AppTest] | dict[str, str]  # gives the value (a link: its query)
    query: dict[str, str] | None = None  # the lab's setup before, as a link (None: the defaults)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.input}={self.value}"


def number(key: str, value) -> Callable[[AppTest], AppTest]:
    return lambda at: at.number_input(key=key).set_value(value).run()


def checked_number(key: str, value) -> Callable[[AppTest], AppTest]:
    """An optional number of the form (a checkbox turns it on) set to `value`."""
    def feed(at: AppTest) -> AppTest:
        at.checkbox(key=key + "_on").check().run()
        return at.number_input(key=key).set_value(value).run()
    return feed


def choose(key: str, value) -> Callable[[AppTest], AppTest]:
    return lambda at: at.selectbox(key=key).set_value(value).run()


def upload(key: str, name: str, data: bytes, then: str | None = None) -> Callable[[AppTest], AppTest]:
    """Upload `data` as `name`; `then` is a button to press after (Open it)."""
    def feed(at: AppTest) -> AppTest:
        uploader(at, key).set_value((name, data, "application/octet-stream")).run()
        return at.button(key=then).click().run() if then else at
    return feed


def typed(key: str, value: str) -> Callable[[AppTest], AppTest]:
    return lambda at: at.text_input(key=key).set_value(value).run()


def prompt(value: str, **numbers) -> Callable[[AppTest], AppTest]:
    """Generate text's form: the prompt and its numbers, then Generate."""
    def feed(at: AppTest) -> AppTest:
        at.text_area(key="gen_prompt").set_value(value)
        for key, number_value in numbers.items():
            at.number_input(key=key).set_value(number_value)
        return at.get("form_submit_button")[0].click().run()
    return feed


def transfer_csv(data: bytes) -> Callable[[AppTest], AppTest]:
    def feed(at: AppTest) -> AppTest:
        uploader(at, "transfer_csv").set_value(("reviews.csv", data, "text/csv"))
        return at.get("form_submit_button")[0].click().run()
    return feed


def arch_choice(length: int | None = None, parameters: int | None = None) -> Callable[[AppTest], AppTest]:
    def feed(at: AppTest) -> AppTest:
        if length is not None:
            at.number_input(key="arch_length").set_value(length)
        if parameters is not None:
            at.number_input(key="arch_parameters").set_value(parameters)
        return at.button(key="arch_apply").click().run()
    return feed


def checkpoint(model: torch.nn.Module) -> bytes:
    return engine.to_bytes(model)


def forged(header: dict, body: bytes = b"", length: int | None = None) -> bytes:
    """A safetensors file: its 8-byte header length (or `length`, a lie), the JSON header, the body."""
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + body


def huge_shapes() -> bytes:
    """A header declaring an LSTM of 10^5 units (160 GB of float32) over a body of 8 bytes."""
    shapes = {"lstm.weight_ih_l0": [400_000, 2], "lstm.weight_hh_l0": [400_000, 100_000]}
    return forged({k: {"dtype": "F32", "shape": v, "data_offsets": [0, 8]} for k, v in shapes.items()}, b"\0" * 8)


def absurd_config() -> bytes:
    """A real checkpoint whose config asks for 10^9 hidden units."""
    data = checkpoint(engine.build_model(DEFAULT.model, DEFAULT.make_task(), seed=0))
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + length])
    config = json.loads(header["__metadata__"]["model_config"])
    header["__metadata__"]["model_config"] = json.dumps({**config, "hidden_size": 10**9})
    return forged(header, data[8 + length:])


def distinct_words_csv(n: int) -> bytes:
    """A review CSV of n distinct words (2,000 reviews of n / 2,000 words each), made in memory."""
    per = n // 2000
    lines = [f"{' '.join(f'w{i * per + j}' for j in range(per))},{'positive' if i % 2 else 'negative'}"
             for i in range(2000)]
    return ("review,sentiment\n" + "\n".join(lines)).encode()


def over_budget_checkpoint() -> bytes:
    """An LSTM of 512 units both ways for the adding problem at 1000 steps: over the step budget."""
    task = engine.make_task("adding", seq_len=1000)
    return checkpoint(engine.build_model(engine.ModelConfig(hidden_size=512, bidirectional=True), task, seed=0))


CSV_WITHOUT_COLUMNS = b"text,label\n" + b"a fine film,1\n" * 50
LATIN_1 = "café crème, déjà vu, naïve ".encode("latin-1") * 20
BINARY = bytes(range(256)) * 4
CHARLM = {"task": "charlm"}
SENTIMENT = {"task": "sentiment"}
DATES = {"task": "dates"}
CHAR_TRANSFORMER = {"task": "charlm", "arch": "transformer", "hidden_size": "32", "num_heads": "2"}
OVER = "over this app's limit"

ROWS = [
    # The link: a new session opens the defaults and says what in the link was wrong.
    Row("link", "hidden_size", "zero", ("hidden_size must be between 1 and 1024, got 0",), {"hidden_size": "0"}),
    Row("link", "num_layers", "negative", ("num_layers must be between 1 and 8",), {"num_layers": "-2"}),
    Row("link", "hidden_size", "huge", ("hidden_size must be between 1 and 1024",), {"hidden_size": "10" * 9}),
    Row("link", "lr", "NaN", ("lr must be a finite number",), {"lr": "nan"}),
    Row("link", "lr", "inf", ("lr must be a finite number",), {"lr": "inf"}),
    Row("link", "batch_size", "empty", ("batch_size must be a whole number",), {"batch_size": ""}),
    Row("link", "seq_len", "text", ("seq_len must be a whole number",), {"seq_len": "fifty"}),
    Row("link", "seed", "100 KB of digits", ("seed must be a whole number",), {"seed": "9" * 100_000}),
    Row("link", "arch", "unknown value", ("arch must be one of rnn, lstm, gru, transformer",), {"arch": "gpt4"}),
    Row("link", "activation", "unicode", ("activation must be one of",), {"arch": "rnn", "activation": UNICODE}),
    Row("link", "task", "unknown value", ("is not a task of this app", "adding"), {"task": "chess"}),
    Row("link", "an unknown key", "1", ("hidden_sise is not a setting",), {"hidden_sise": "1"}),
    Row("link", "an unknown key", "100 KB", ("is not a setting", "(100,000 characters)"), {HUGE_TEXT: "1"}),
    Row("link", "seed", "repeated key", ("'seed' is given 2 times ('1', '2')", "give each setting once"),
        {"seed": ["1", "2"]}),
    Row("link", "lesson", "unknown value", ("lesson='nope' is not a lesson of this app", "Home lists them"),
        {"lesson": "nope"}),
    Row("link", "steps", "zero", ("steps must be between 1 and 1000000, got 0",), {"steps": "0"}),
    Row("link", "steps", "text", ("steps must be a whole number",), {"steps": "many"}),
    Row("link", "text", "a corpus in the link", ("text is not a setting",), {"task": "charlm", "text": "abc"}),
    Row("link", "seq_len", "over the sequence limit", ("seq_len must be between 2 and 2000",),
        {"seq_len": str(MAX_SEQ_LEN + 1)}),
    Row("link", "batch_size, hidden_size", "over the step budget", (OVER, f"{MAX_STEP_COST:,} for a shared CPU"),
        {"hidden_size": "512", "num_layers": "2", "batch_size": "1024"}),
    Row("link", "recall's lag, symbols", "over the batch memory", (f"limit of {MAX_BATCH_BYTES // 2**20} MB a batch",),
        {"task": "recall", "lag": "1999", "symbols": "64", "distractors": "64", "hidden_size": "1",
         "batch_size": "1024"}),
    # Build & Train's form: the number boxes have no range of their own, so every value reaches the configs.
    Row("build", "Hidden units H", "zero", ("hidden_size must be between 1 and 1024, got 0", "unchanged"),
        number("form.model.hidden_size", 0)),
    Row("build", "Layers", "negative", ("num_layers must be between 1 and 8", "unchanged"),
        number("form.model.num_layers", -1)),
    # A browser's number box cannot send NaN or inf; sent anyway, NaN reaches the page as 0.0, which the range refuses.
    Row("build", "Learning rate", "NaN", ("lr must be in [1e-08, 100.0], got 0.0",),
        number("form.train.lr", float("nan"))),
    Row("build", "Learning rate", "zero", ("lr must be in [1e-08, 100.0]",), number("form.train.lr", 0.0)),
    Row("build", "Batch size", "huge", ("batch_size must be between 1 and 1024",),
        number("form.train.batch_size", 10**9)),
    Row("build", "Clip gradient norm", "zero", ("clip_norm must be in (0.0",),
        checked_number("form.train.clip_norm", 0.0)),
    Row("build", "Truncated BPTT window", "negative", ("bptt_window must be between 0 and",),
        number("form.train.bptt_window", -1)),
    Row("build", "Seed", "huge", ("seed must be between 0 and 2147483647",), number("form.train.seed", 2**40)),
    Row("build", "seq len", "a sequence of length 1", ("seq_len must be between 2 and 2000",),
        number("form.task.seq_len", 1)),
    Row("build", "seq len", "over the sequence limit", ("seq_len must be between 2 and 2000",),
        number("form.task.seq_len", 10**6)),
    Row("build", "Hidden units H", "over the step budget", (OVER, "lower the batch size"),
        number("form.model.hidden_size", 1024)),
    Row("build", "lag", "over the batch memory", (f"limit of {MAX_BATCH_BYTES // 2**20} MB a batch", "at most"),
        number("form.task.lag", 1999), {"task": "recall", "symbols": "64", "distractors": "64", "hidden_size": "1",
                                         "batch_size": "1024"}),
    Row("build", "Attention heads", "not dividing d_model", ("num_heads=3 does not divide", "Use num_heads in"),
        number("form.model.num_heads", 3), {"arch": "transformer", "hidden_size": "32", "num_heads": "2"}),
    Row("build", "max vocab", "over the vocabulary limit", ("max_vocab must be between",),
        number("form.task.max_vocab", 10**7), SENTIMENT),
    Row("build", "Embedding size", "zero", ("embedding_dim must be between 1 and 512",),
        number("form.model.embedding_dim", 0), CHARLM),
    # Uploads a task reads: the char LM's corpus and the sentiment task's reviews.
    Row("build", "Your own text", "0 bytes", ("corpus", "empty"), upload("upload.charlm", "empty.txt", b""), CHARLM),
    Row("build", "Your own text", "binary", ("not UTF-8", "save it as UTF-8"),
        upload("upload.charlm", "data.bin", BINARY), CHARLM),
    Row("build", "Your own text", "Latin-1", ("not UTF-8", "save it as UTF-8"),
        upload("upload.charlm", "latin.txt", LATIN_1), CHARLM),
    Row("build", "Your own text", "a sequence of length 1", ("1 characters", "seq_len + 1 = 101"),
        upload("upload.charlm", "one.txt", b"x"), CHARLM),
    Row("build", "Your own text", "over the vocabulary", ("distinct characters", "256"),
        upload("upload.charlm", "wide.txt", "".join(chr(0x100 + i) for i in range(300)).encode() * 2), CHARLM),
    Row("build", "Your own text", "over the upload size", (f"the limit is {MAX_TEXT_CHARS:,}",),
        upload("upload.charlm", "big.txt", b"x" * (MAX_TEXT_CHARS + 1)), CHARLM),
    Row("build", "Your own reviews", "0 bytes", ("CSV file", "empty"),
        upload("upload.sentiment", "empty.csv", b""), SENTIMENT),
    Row("build", "Your own reviews", "binary", ("not UTF-8",), upload("upload.sentiment", "x.csv", BINARY), SENTIMENT),
    Row("build", "Your own reviews", "a CSV without the columns", ("columns 'review' and 'sentiment'",),
        upload("upload.sentiment", "kaggle.csv", CSV_WITHOUT_COLUMNS), SENTIMENT),
    Row("build", "Your own reviews", "10^6 distinct words", ("distinct",),
        upload("upload.sentiment", "words.csv", distinct_words_csv(10**6)), SENTIMENT),
    # A checkpoint or a PyTorch state_dict, opened from Build & Train.
    Row("build", "Open your own model", "0 bytes", ("empty",), upload("torch_upload.file", "none.safetensors", b"")),
    Row("build", "Open your own model", "a pickle", ("pickle",),
        upload("torch_upload.file", "model.pt", b"\x80\x04\x95 a pickle")),
    Row("build", "Open your own model", "forged: huge shapes",
        ("100000 units", "hidden_size must be between 1 and 1024"),
        upload("torch_upload.file", "huge.safetensors", huge_shapes())),
    Row("build", "Open your own model", "forged: header length past the end", ("cut short", "download it again"),
        upload("torch_upload.file", "cut.safetensors", forged({"a": 1}, length=10**6))),
    Row("build", "Open your own model", "forged: a config of 10^9 units", ("hidden_size must be between 1 and 1024",),
        upload("torch_upload.file", "absurd.safetensors", absurd_config(), then="torch_upload.open")),
    Row("build", "Open your own model", "over the step budget", (OVER,),
        upload("torch_upload.file", "wide.safetensors", over_budget_checkpoint(), then="torch_upload.open"),
        {"seq_len": "1000", "hidden_size": "8"}),
    # Text a student types for a model to read.
    Row("attention", "Or type a source", "unicode", ("do not occur in the date formats",),
        typed("attention_source_text", UNICODE), DATES),
    Row("attention", "Or type a source", "100 KB", ("A date has 1 to 18 characters", "got 100,010 characters"),
        typed("attention_source_text", "21 November 2026 " * 5_883), DATES),
    Row("self-attention", "Or type text", "unicode", ("not in this corpus",), typed("sa_text", UNICODE),
        CHAR_TRANSFORMER),
    Row("self-attention", "Or type text", "a sequence of length 1", ("Type at least two characters",),
        typed("sa_text", "x"),
        CHAR_TRANSFORMER),
    Row("generate", "Prompt", "empty", ("the prompt is empty", "type at least one character"), prompt(""), CHARLM),
    Row("generate", "Prompt", "unicode", ("not in this corpus",), prompt(UNICODE), CHARLM),
    # Page forms whose numbers reach a session's runs.
    Row("transfer", "Your own reviews", "0 bytes", ("CSV file", "empty"), transfer_csv(b"")),
    Row("transfer", "Your own reviews", "Latin-1", ("not UTF-8",), transfer_csv(b"review,sentiment\n" + LATIN_1)),
    Row("transfer", "Your own reviews", "a CSV without the columns", ("columns 'review' and 'sentiment'",),
        transfer_csv(CSV_WITHOUT_COLUMNS)),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_bad_input_gets_a_message_saying_what_to_change_and_the_model_survives(row):
    if row.page == "link":
        at = AppTest.from_file(MAIN, default_timeout=60)
        at.query_params.update(row.feed)
        at.run()
        assert not at.exception, at.exception
        assert "could not be used" in messages(at) and at.session_state["lab"].setup == DEFAULT
    else:
        at = opened(row.page, row.query)
        kept = Kept.of(at)
        at = row.feed(at)
        assert not at.exception, at.exception
        kept.still(at)
    said = messages(at)
    assert all(words in said for words in row.says), said


# ---------------------------------------------------------------- the link's parse, swept whole

BAD_VALUES = {"zero": "0", "negative": "-1", "huge": "1" + "0" * 30, "NaN": "nan", "inf": "inf", "empty": "",
              "text": "abc", "unicode": UNICODE, "100 KB": HUGE_TEXT}


@pytest.mark.parametrize("task", OFFERED)
def test_every_link_parameter_of_every_task_with_every_bad_value_is_refused_naming_it_or_taken(task):
    """parse_query, for every setting a task's link has and every value above: a ValueError whose
    message names the setting, or a setup the configs accept (0 is a fine seed)."""
    names = [name for name in preset_setup(task).to_query() if name != "task"]
    for name in names:
        for value in BAD_VALUES.values():
            try:
                parse_query({"task": task, name: value})
            except ValueError as err:
                assert name in str(err), (name, value[:20], str(err)[:200])


# ---------------------------------------------------------------- boxes with a range of their own

@dataclass(frozen=True)
class Bounded:
    """A box that declares its range (or its length) to the browser, which keeps a student inside
    it; a value from outside, sent anyway, never reaches the page: Streamlit puts it back in range."""

    page: str
    key: str
    value: object
    query: dict[str, str] | None = None
    submit: bool = False  # the box is in a form: its button sends it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.key}={str(self.value)[:12]}"


BOUNDED = [
    Bounded("build", "target_steps", 10**9),  # "Train up to step": the steps a lab is asked to keep training
    Bounded("build", "form.model.zoneout", 0.95),
    Bounded("unroll", "unroll_unit", 10**6),
    Bounded("unroll", "probe_index", -5),
    Bounded("compare", "compare_steps", 10**9),
    Bounded("architectures", "arch_length", MAX_SEQ_LEN + 1, submit=True),
    Bounded("architectures", "arch_parameters", 0, submit=True),
    Bounded("positions", "pe_position_box", 10**6),
    Bounded("positions", "pe_pair_box", -2),
    Bounded("generate", "gen_length", 10**9, CHARLM, submit=True),
    Bounded("generate", "gen_width", 0, CHARLM, submit=True),
    Bounded("generate", "gen_prompt", HUGE_TEXT, CHARLM, submit=True),  # 500 characters at most
    Bounded("self-attention", "sa_text", HUGE_TEXT, CHAR_TRANSFORMER),  # 513 characters at most
]


def widget(at: AppTest, key: str):
    return next(w for kind in ("number_input", "text_input", "text_area") for w in at.get(kind) if w.key == key)


@pytest.mark.parametrize("box", BOUNDED, ids=[box.id for box in BOUNDED])
def test_a_value_outside_a_boxs_own_range_never_reaches_the_page(box):
    at = opened(box.page, box.query)
    kept = Kept.of(at)
    widget(at, box.key).set_value(box.value)
    at = at.get("form_submit_button")[0].click().run() if box.submit else at.run()
    assert not at.exception, at.exception
    now = widget(at, box.key)
    if isinstance(box.value, str):
        assert 0 < now.proto.max_chars and len(now.value) <= now.proto.max_chars
    else:
        assert now.min <= now.value <= now.max and now.value != box.value
    kept.still(at)
