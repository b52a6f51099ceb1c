"""One-click lessons, read from their data files: a setup, the page to open, what to do and look at
there, and the claims its card makes.

Each lesson is one TOML file in app/data/lessons/ (the file's name gives Home's order), which a
teacher can read, correct or add to without reading Python: its title, objective, page and budget,
the published result it reproduces, its card, its setup as the lesson's link carries it, and its
claims. A claim names a value measured on the lesson's runs (app/session/lesson_runs) and the
range it holds in over the lesson's ensemble, every seed and kernel path measured
(app/data/ensembles/<key>.json, made by benchmarks/lesson_ensembles.py). The card quotes claims by
name, `{{irnn.loss_end}}` for the range, `{{irnn.loss_end:low}}` or `:high` for one end, so the figures
a student reads are the ranges the tests check, never typed twice; so do the sentences a page adds
under a figure while it shows the lesson's runs (`[captions]`). Its `[question]`, asked before Play
(widgets/prediction.py), names one claim and the range of that claim's value each choice stands for,
so the claim's measured range decides which choice is right.

A claim's value is measured on one run of the lesson, or worked out from two measured on the same run
(`ratio = ["a", "b"]`: a over b, an ordering of two of the lesson's runs that share their start and
batches), so a card can say what every run shows where the values themselves spread over decades. A
run the lesson marks `[chaotic]` follows the seed and the CPU's rounding step by step (the undivided
softmax of Why √d_k): its card says so in the words the file gives, its claims are what holds across
runs (a range at the budget, an ordering), and the replay holds it to an envelope and its orderings
(`below`), never to the band one step at a time. No Streamlit here.
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from app.session import memory_span
from app.session.link import Setup, format_value, parse_query

FOLDER = Path(__file__).resolve().parents[1] / "data" / "lessons"
QUOTE = re.compile(r"\{\{\s*([\w.\-]+)(?::(low|high))?\s*\}\}")  # {{claim}}, {{claim:low}}, {{claim:high}}


def written(value: float, spec: str) -> str:
    """`value` in format `spec`, an exponent as a reader writes it: 5e-6, 8e3 (not 5e-06, 8e+03)."""
    text = format(value, spec)
    if not re.search(r"\de[+-]", text):
        return text
    if spec.endswith("g") and 1 <= abs(value) < 1e5:  # .1g writes 20 as 2e+01
        return f"{float(text):,.0f}"
    return re.sub(r"e0$", "", re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", text))  # 2e0 is 2


@dataclass(frozen=True)
class Claim:
    """A measured value's range over the lesson's ensemble: `low` <= value <= `high` (either may be
    None: no bound), or, with `or_never`, a step at which something happens that may never come
    within the budget (`never`: must not come). `format` is how the card writes the ends (a Python
    format spec: ".0%", ",.0f", ".0e")."""

    name: str
    low: float | None
    high: float | None
    format: str = "g"
    or_never: bool = False
    never: bool = False  # the step must never come within the budget (a run that must not diverge)
    ratio: tuple[str, str] | None = None  # the value is values[a] / values[b], two values of the same run

    def value(self, values: dict[str, float | None]) -> float | None:
        """This claim's value among a run's measured `values` (KeyError when the run lacks it); a ratio
        is None when either value is (never came), inf for a positive value over 0."""
        if self.ratio is None:
            return values[self.name]
        over, under = (values[name] for name in self.ratio)
        if over is None or under is None:
            return None
        if under == 0:
            return math.inf if over > 0 else None
        return over / under

    def holds(self, value: float | None) -> bool:
        if value is None:
            return self.or_never or self.never
        return not self.never and (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def quote(self, end: str | None = None) -> str:
        """The range as the card writes it: "0.003 to 0.009", "below 0.01", one end alone."""
        if self.never:
            return "never"
        low, high = (None if v is None else written(v, self.format) for v in (self.low, self.high))
        if end is not None:
            return low if end == "low" else high
        if low is None:
            return f"below {high}"
        if high is None:
            return f"above {low}"
        return low if low == high else f"{low} to {high}"


@dataclass(frozen=True)
class Choice:
    """One answer to a lesson's question and the values of its claim it stands for: `low` <= value <=
    `high`, or, with `never`, a step that never comes within the budget."""

    text: str
    low: float = -math.inf
    high: float = math.inf
    never: bool = False

    def holds(self, value: float | None) -> bool:
        if value is None:
            return self.never
        return not self.never and self.low <= value <= self.high

    def covers(self, claim: Claim) -> bool:
        """Whether every value `claim` allows is one this choice stands for (a claim that may or may
        not come, `or_never`, is covered by no one choice)."""
        if claim.never or claim.or_never:
            return self.never and claim.never
        low = -math.inf if claim.low is None else claim.low
        high = math.inf if claim.high is None else claim.high
        return not self.never and self.low <= low and high <= self.high


@dataclass(frozen=True)
class Question:
    """Asked before Play: `text` and its `choices`; `claim` names the lesson's claim whose measured range
    decides the answer, `measured` says in words what that claim's value is (for the reveal), and
    `answer` is the index of the one choice the claim's range lies in."""

    text: str
    choices: tuple[Choice, ...]
    claim: str
    measured: str
    answer: int

    @property
    def right(self) -> Choice:
        return self.choices[self.answer]


@dataclass(frozen=True)
class Chaotic:
    """A run of the lesson whose curves follow the seed and the CPU's rounding step by step, so that no
    one step of it is replayed against the band: `says` is how the card says so (it contains the word
    "chaotic" and appears in the card as written), `series` those of its curves that are chaotic (all
    of them when empty), and `below` what holds at every step after the start on every run: series ->
    the run whose same series it lies below."""

    run: str
    says: str
    series: tuple[str, ...] = ()
    below: dict[str, str] = field(default_factory=dict)

    def covers(self, series: str) -> bool:
        return not self.series or series in self.series


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    objective: str
    setup: Setup
    page: str  # url_path of the page it opens
    steps: int  # train up to this many steps
    card: str  # the card as written, claims quoted by name
    published: str  # the result in the literature it reproduces
    claims: dict[str, Claim]
    compare_kind: str = "cells"  # on Compare cells: what the runs differ in (comparison.KINDS)
    captions: dict[str, str] = field(default_factory=dict)  # a figure's name -> its caption's measured sentence
    first_class: int | None = None  # its place on Home's suggested path for a first 90-minute class
    nlp_class: int | None = None  # its place on Home's path for the NLP half, a 90-minute class
    shipped: str | None = None  # a shipped model (pretrained/) the lesson opens, trained: its link is that model's
    question: Question | None = None  # asked before Play, answered by one of its claims
    chaotic: dict[str, Chaotic] = field(default_factory=dict)  # run -> how it is chaotic

    def derived(self, values: dict[str, float | None]) -> dict[str, float | None]:
        """The values of this lesson's ratio claims worked out from a run's measured `values` (those
        whose two values the run has)."""
        return {claim.name: claim.value(values) for claim in self.claims.values()
                if claim.ratio is not None and all(name in values for name in claim.ratio)}

    def is_chaotic(self, run: str, series: str) -> bool:
        return run in self.chaotic and self.chaotic[run].covers(series)

    @property
    def what_to_do(self) -> str:
        """The card with its claims' ranges written in."""
        return self.quoted(self.card)

    def caption(self, figure: str) -> str:
        """The sentence the page adds under `figure` while it shows this lesson's runs, ranges written in
        ("" when the lesson has none for it)."""
        return self.quoted(self.captions.get(figure, ""))

    def quoted(self, text: str) -> str:
        def fill(match: re.Match) -> str:
            name, end = match.groups()
            if name == "memory_spans":
                return memory_spans()
            return self.claims[name].quote(end)

        return QUOTE.sub(fill, text)


def link_text(value) -> str:
    """A TOML value as a link carries it ("true", "0.003", "none")."""
    return format_value(value) if isinstance(value, bool) else str(value)


def read(path: Path) -> Lesson:
    data = tomllib.loads(path.read_text())
    claims = {name: claim(path.name, name, c) for name, c in data.get("claims", {}).items()}
    lesson = Lesson(
        key=data["key"], title=data["title"], objective=data["objective"],
        setup=parse_query({name: link_text(value) for name, value in data["link"].items()}),
        page=data["page"], steps=data["steps"], card=" ".join(data["card"].split()),
        published=" ".join(data["published"].split()), claims=claims,
        compare_kind=data.get("compare_kind", "cells"),
        captions={figure: " ".join(text.split()) for figure, text in data.get("captions", {}).items()},
        first_class=data.get("first_class"), nlp_class=data.get("nlp_class"), shipped=data.get("shipped"),
        question=read_question(path.name, data["question"], claims) if "question" in data else None,
        chaotic=read_chaotic(path.name, data.get("chaotic", {})),
    )
    for chaotic in lesson.chaotic.values():
        if chaotic.says not in lesson.card:
            raise ValueError(f"{path.name} marks the run {chaotic.run!r} chaotic but its card does not say "
                             f"{chaotic.says!r}: a card says which of its runs is chaotic")
    texts = [lesson.card, *lesson.captions.values()]
    unknown = {name for text in texts for name, _ in QUOTE.findall(text)} - set(claims) - {"memory_spans"}
    if unknown:
        raise ValueError(f"{path.name} quotes {', '.join(sorted(unknown))}, which it claims nothing about")
    return lesson


def claim(name: str, claimed: str, table: dict) -> Claim:
    """Claim `claimed` of lesson file `name`; a ratio names two values measured on the same run."""
    ratio = table.get("ratio")
    if ratio is not None and not (isinstance(ratio, list) and len(ratio) == 2
                                  and all(isinstance(n, str) and n for n in ratio)):
        raise ValueError(f"{name}'s claim {claimed} has ratio = {ratio!r}: give the names of two measured "
                         'values, ratio = ["over", "under"]')
    if ratio is not None and (table.get("or_never", False) or table.get("never", False)):
        raise ValueError(f"{name}'s claim {claimed} is a ratio: it has a value whenever both of its own do")
    return Claim(claimed, table.get("low"), table.get("high"), table.get("format", "g"), table.get("or_never", False),
                 table.get("never", False), tuple(ratio) if ratio is not None else None)


CHAOTIC_KEYS = ("says", "series", "below")


def read_chaotic(name: str, table: dict) -> dict[str, Chaotic]:
    """The [chaotic."<run>"] tables of lesson file `name`: says = "the card's words, which say chaotic",
    series = [the chaotic curves; all when left out], below = {series = "the run it lies below"}."""
    runs = {}
    for run, entry in table.items():
        unknown = sorted(set(entry) - set(CHAOTIC_KEYS))
        says, series, below = entry.get("says"), entry.get("series", []), entry.get("below", {})
        if unknown or not (isinstance(says, str) and "chaotic" in says.lower()):
            raise ValueError(f"{name}'s [chaotic.\"{run}\"] takes says = \"the card's words for it, which say "
                             f"chaotic\", series = [...] and below = {{series = \"run\"}}"
                             + (f"; it has {', '.join(unknown)}" if unknown else ""))
        if not (isinstance(series, list) and all(isinstance(s, str) for s in series)
                and isinstance(below, dict) and all(isinstance(r, str) for r in below.values())):
            raise ValueError(f"{name}'s [chaotic.\"{run}\"] needs series as a list of names and below as "
                             "{series = \"run\"}")
        runs[run] = Chaotic(run, " ".join(says.split()), tuple(series), dict(below))
    return runs


QUESTION_KEYS = ("text", "choices", "bounds", "claim", "measured")
QUESTION_FORMAT = ('text = "the question", choices = ["one", "two", ...] (2 to 4), bounds = [[low, high], ...] '
                   '(one per choice, in their order: the values of the claim it stands for, inf or -inf for no '
                   'end, or "never" for a step that never comes), claim = "the name of one of its [claims]", '
                   'measured = "what that claim\'s value is, in words"')


def read_question(name: str, table: dict, claims: dict[str, Claim]) -> Question:
    """The [question] of lesson file `name`, checked: its choices' ranges do not overlap, and exactly one
    of them holds every value its claim allows."""
    def refuse(problem: str) -> ValueError:
        return ValueError(f"{name}'s [question] {problem}. It takes {QUESTION_FORMAT}")

    unknown = sorted(set(table) - set(QUESTION_KEYS))
    missing = [key for key in QUESTION_KEYS if key not in table]
    if unknown or missing:
        raise refuse("has " + "; ".join(filter(None, [unknown and f"{', '.join(unknown)}, which it does not know",
                                                       missing and f"no {', '.join(missing)}"])))
    if not all(isinstance(table[key], str) and table[key].strip() for key in ("text", "claim", "measured")):
        raise refuse("needs text, claim and measured written as non-empty strings")
    texts = table["choices"]
    if not (isinstance(texts, list) and 2 <= len(texts) <= 4 and all(isinstance(t, str) and t.strip() for t in texts)
            and len(set(texts)) == len(texts)):
        raise refuse(f"has choices = {texts!r}: give 2 to 4 different, non-empty strings")
    bounds = table["bounds"]
    if not isinstance(bounds, list) or len(bounds) != len(texts):
        raise refuse(f"has {len(texts)} choices but bounds = {bounds!r}: give one [low, high] (or \"never\") each")
    choices = tuple(choice(" ".join(text.split()), bound) for text, bound in zip(texts, bounds))
    for text, bound, made in zip(texts, bounds, choices):
        if made is None:
            raise refuse(f"has bounds {bound!r} for \"{text}\": give [low, high], two numbers with low <= high, "
                         "or \"never\"")
    for i, a in enumerate(choices):
        for b in choices[i + 1:]:
            if (a.never and b.never) or (not (a.never or b.never) and max(a.low, b.low) < min(a.high, b.high)):
                raise refuse(f"has choices \"{a.text}\" and \"{b.text}\" whose bounds overlap: a value may "
                             "be in one choice only (ends may touch)")
    claim = claims.get(table["claim"])
    if claim is None:
        raise refuse(f"asks about {table['claim']!r}, which the lesson claims nothing about: name one of "
                     f"{', '.join(claims)}")
    covering = [i for i, c in enumerate(choices) if c.covers(claim)]
    if len(covering) != 1:
        where = "more than one choice's bounds" if covering else "no one choice's bounds"
        raise refuse(f"asks about {claim.name}, whose claimed range ({claim.quote()}"
                     f"{', or never' if claim.or_never else ''}) lies whole in {where}: set the bounds so that "
                     "exactly one choice holds all of it")
    return Question(" ".join(table["text"].split()), choices, claim.name, " ".join(table["measured"].split()),
                    covering[0])


def choice(text: str, bound) -> Choice | None:
    """One choice and its bound, [low, high] (numbers, low <= high) or "never"; None for any other bound."""
    if bound == "never":
        return Choice(text, never=True)
    numbers = isinstance(bound, list) and len(bound) == 2 and all(
        isinstance(end, int | float) and not isinstance(end, bool) and not math.isnan(end) for end in bound)
    if not numbers or bound[0] > bound[1]:
        return None
    return Choice(text, float(bound[0]), float(bound[1]))


# The cells of the memory-span measurement (benchmarks/memory_span.py's CELLS) in a sentence.
SPAN_CELLS = {"tanh RNN": "a tanh RNN", "GRU": "a GRU", "LSTM": "an LSTM as PyTorch starts it",
              "LSTM, forget bias 3": "an LSTM whose forget gate starts open (bias 3)"}


def memory_spans() -> str:
    """The longest lag each cell learns within the recall-lag lesson's budget, as measured once
    (app/data/memory_span.json, re-measured in tests/engine/test_memory_span.py), in a sentence."""
    settings = memory_span.shipped()[1]["settings"]
    longest = max(settings["lags"])

    def reach(lag: int | None) -> str:
        if lag is None:
            return f"none (not even {min(settings['lags'])})"
        return f"{lag} (every lag measured)" if lag == longest else f"{lag}"

    cells = [f"{reach(lag)} for {SPAN_CELLS[cell]}" for cell, lag in memory_span.shipped_spans().items()]
    return (f"Open 'Short-term memory, measured' under the curves: with this budget, the longest lag all "
            f"{len(settings['seeds'])} seeds learned is {', '.join(cells[:-1])} and {cells[-1]}; single seeds reach "
            "further or fail sooner (each lag's range is drawn).")


LESSONS = [read(path) for path in sorted(FOLDER.glob("*.toml"))]
BY_KEY = {lesson.key: lesson for lesson in LESSONS}


def on_path(place: str) -> list[Lesson]:
    """The lessons of one of Home's 90-minute paths, in its order: `place` is the lessons' field giving theirs
    ("first_class", "nlp_class")."""
    chosen = [lesson for lesson in LESSONS if getattr(lesson, place) is not None]
    return sorted(chosen, key=lambda lesson: getattr(lesson, place))


def first_class() -> list[Lesson]:
    """The suggested path for a first 90-minute class, in its order."""
    return on_path("first_class")


def nlp_class() -> list[Lesson]:
    """Home's path for the NLP half, a 90-minute class, in its order."""
    return on_path("nlp_class")


def by_objective() -> list[tuple[str, list[Lesson]]]:
    """(objective, its lessons), in the order of the files."""
    groups: dict[str, list[Lesson]] = {}
    for lesson in LESSONS:
        groups.setdefault(lesson.objective, []).append(lesson)
    return list(groups.items())
