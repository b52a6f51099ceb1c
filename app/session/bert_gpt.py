"""BERT beside GPT, trained: one transformer size trained twice on the same words of Austen's prose,
from the same seed on the same windows, once with BERT's objective (guess the masked 15% of the words
from both sides; Devlin et al. 2019) and once with GPT's (guess each next word from the words before
it; Radford et al. 2018), in turns (comparison.RoundRobin). No Streamlit here.

The two differ in their objective and, with it, their attention mask: the masked model's every word
attends to every other, the causal model's to itself and the words before it only.

Their read-outs (engine.contextual, engine.context_bank) run on models that never train while read:
a copy of each run, or the shipped checkpoints masked-lm-prose and word-lm-prose, loaded once a
process and kept in eval mode (never put back in training mode, so sessions can share them), one
read at a time (Readers.lock: a read hooks the blocks).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import threading
from dataclasses import dataclass, field

from torch import nn

import engine
from app.session import pretrained
from app.session.budget import check_runs
from app.session.comparison import RoundRobin, TrainedRun
from app.session.link import Setup
from app.session.memory import MemoryFull
from engine.tasks.masked_lm import ProseWordsTask, chosen_count

RUNS = {"masked (BERT)": "masked_lm", "causal (GPT)": "word_lm"}  # run name -> its task
MASKED, CAUSAL = RUNS
SHIPPED = {MASKED: "masked-lm-prose", CAUSAL: "word-lm-prose"}  # run name -> the shipped checkpoint of its kind
TRAIN = engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=64, clip_norm=1.0)  # the tasks' presets'
TASK = {"seq_len": 32, "max_vocab": 4000}
SIZES, LAYERS, HEADS = (32, 64, 96), (1, 2, 3), (2, 4)  # d_model, blocks and heads a student may pick


@dataclass(frozen=True)
class Plan:
    """The one network both runs are (d_model, blocks, heads) and their seed."""

    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    seed: int = 0

    def network(self, task: str) -> engine.ModelConfig:
        """The transformer for `task`: an encoder (no mask) for the masked task, causal for the other."""
        return engine.ModelConfig(arch="transformer", hidden_size=self.hidden_size, num_layers=self.num_layers,
                                  num_heads=self.num_heads, bidirectional=task == "masked_lm")


LESSON_PLAN = Plan()  # the tasks' presets: 2 blocks, 4 heads, d_model 64
# The lesson's word and sentences ("Recurrent Architectures": "We went to the river bank" against "I need to go to
# the bank to make a deposit", in words Austen's prose knows: it has no "river" or "deposit"), and a second
# sentence the lesson asks for next: the first's words up to "bank", then others, which only a model that reads
# rightwards can tell apart.
LESSON_WORD = "bank"
LESSON_SENTENCES = ("she sat down on a dry bank under the trees", "he put the money in the bank")
SAME_START = "she sat down on a dry bank and took out the money"


def words_predicted(name: str, card: pretrained.Card) -> int:
    """How many words shipped model `name` ("masked (BERT)" or "causal (GPT)") predicted in training, from its card:
    the 15% of each window's words hidden, or each next word (Devlin et al.'s masked LM learns from fewer a step)."""
    training = card.fields["training"]
    per_window = chosen_count(TASK["seq_len"]) if name == MASKED else TASK["seq_len"]
    return training["steps"] * training["train"]["batch_size"] * per_window


def setup_of(plan: Plan, name: str) -> Setup:
    """The Lab's Setup for run `name` (what a copy of it opens with)."""
    task = RUNS[name]
    return Setup(task=task, model=plan.network(task), train=dataclasses.replace(TRAIN, seed=plan.seed),
                 task_params=dict(TASK))


class ObjectiveRuns(RoundRobin):
    """The masked and the causal run of one plan, each scored every RECORD_EVERY steps on its task's
    128 held-out windows (the masked task's chosen words, the causal task's next words)."""

    def __init__(self, plan: Plan):
        super().__init__()
        self.plan = plan
        self.tasks = {name: engine.make_task(task, seed=plan.seed, **TASK) for name, task in RUNS.items()}
        try:  # both read the same words, so either task prices them; both are held at once
            check_runs({name: setup_of(plan, name) for name in RUNS}, self.tasks[MASKED])
        except MemoryFull:
            raise  # the server's memory, not the plan: its own message says what to do
        except ValueError as err:  # the batch and windows are the lesson's: a student here changes the size
            raise ValueError(f"pick a smaller d_model or fewer blocks: d_model {plan.hidden_size} with "
                             f"{plan.num_layers} blocks is too large for a shared CPU here ({err})") from None
        self.build()

    def build(self) -> None:
        setups = {name: setup_of(self.plan, name) for name in RUNS}
        self.runs = [TrainedRun(name, setup.model, self.tasks[name], setup.train, self.tasks[name].test_set())
                     for name, setup in setups.items()]
        self.seconds = 0.0

    @property
    def task(self) -> ProseWordsTask:
        """The words both runs read (the masked task: the same vocabulary and windows)."""
        return self.tasks[MASKED]

    def copies(self) -> dict[str, nn.Module]:
        """Each run's model as it stands, copied between two steps, in eval mode: read, never trained."""
        with self.hold():
            models = {run.name: copy.deepcopy(run.model) for run in self.runs}
        return {name: model.eval().requires_grad_(False) for name, model in models.items()}


@dataclass(frozen=True)
class Readers:
    """The two models the read-outs use, with the words they read and what they are."""

    models: dict[str, nn.Module]  # run name -> a model in eval mode, never trained
    task: ProseWordsTask
    about: str  # e.g. "your runs at step 500", "the shipped models (the masked one 32,000 steps, ...)"
    key: tuple  # names these models: the same key, the same weights
    # Held around every read: a read hooks the model's blocks (engine.hooks), and the shipped models are
    # every session's, so two sessions' reads at once would each catch the other's activations.
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False)


@functools.cache
def shipped_readers() -> Readers:
    """The shipped masked and causal models, loaded once a process and shared read-only in eval mode
    (their dropout off for every reader: nothing puts them back in training mode). Their words are the
    masked checkpoint's (both were built on one vocabulary), so they read a sentence without the prose;
    what needs the prose itself (a word's other contexts in the held-out text) reads it when asked,
    engine.datasets.CorpusMissing until it is on this machine."""
    models, steps = {}, {}
    for name, checkpoint in SHIPPED.items():
        model, card = pretrained.load(pretrained.read(checkpoint))
        models[name] = model.eval().requires_grad_(False)
        steps[name] = card.fields["training"]["steps"]
    masked = models[MASKED]
    task = engine.tasks.header_task("masked_lm", masked.spec, masked.vocab, **TASK)
    trained = f"the masked one {steps[MASKED]:,} steps, the causal one {steps[CAUSAL]:,}, dropout 0.1"
    return Readers(models, task, f"the shipped models ({trained})", ("shipped",))


def readers_of(runs: ObjectiveRuns) -> Readers:
    """Copies of the runs' models as they stand."""
    step = min(run.steps_done for run in runs.runs)
    return Readers(runs.copies(), runs.task, f"your runs at step {step:,}", ("yours", id(runs), runs.steps_taken))

