"""What every student of the load harness does it on (benchmarks/load.py, tests/browser/test_load.py):
the adding problem's LSTM on Build & Train, as the "rnn-forgets" card's second half opens it ("set
the cell to LSTM and play again"), the issue's own measurement; or (load.py --page bert-gpt) the
heaviest page, BERT and GPT's two transformers of the "contextual-embeddings" lesson (issue 43,
finding 6)."""
import dataclasses
from urllib.parse import urlencode

from app.session.lessons import BY_KEY
from app.widgets import state

LESSON = "rnn-forgets"
PAGE = "build"
CONTROL = "Train up to step"
FAR = 1_000_000  # the control's largest value: no session reaches it, so all play to the end


def lesson_query() -> str:
    lesson = BY_KEY[LESSON]
    setup = dataclasses.replace(lesson.setup, model=dataclasses.replace(lesson.setup.model, arch="lstm"))
    return urlencode({**setup.to_query(), state.LESSON_PARAM: LESSON})


@dataclasses.dataclass(frozen=True)
class Playing:
    """A page every student opens with `query`, sets `control` to FAR on, and plays."""

    page: str
    control: str
    query: str


def playing(page: str) -> Playing:
    """"build" (the adding problem's LSTM) or "bert-gpt" (the masked and causal transformers)."""
    if page == "bert-gpt":
        return Playing("bert-gpt", "Train each up to step", urlencode({state.LESSON_PARAM: "contextual-embeddings"}))
    return Playing(PAGE, CONTROL, lesson_query())
