"""Transfer learning, trained: the GWU lecture's recipe against training from scratch. No Streamlit here.

One char-level sentiment network is trained twice from the same seed on the same batches (one task,
each trainer drawing from its own seeded stream): "from scratch", every part from its random start;
and "pretrained", whose lower parts (the embedding, then layers from the bottom) are copied from a
shipped char language model (engine.transfer.transplant), with new layers and a new head on top
(the GWU lecture's "reuse the lower layers as the base, add extra layers on top"). The reused parts
start frozen; at a chosen step the top reused layer(s) unfreeze at a lower learning rate ("unfreeze
one or two top hidden layers ... and reduce the learning rate"). They train in turns as Compare
cells trains its cells (comparison.RoundRobin).

Every RECORD_EVERY steps each run logs its held-out loss and accuracy on every held-out review,
and each part's gradient norm at that step and distance from where it started: a frozen part
reads exactly 0 for both.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

import engine
from app.session.bag_of_words_verdict import verdict
from app.session.budget import check_runs
from app.session.comparison import RoundRobin, TrainedRun
from app.session.link import Setup
from app.session.memory import MemoryFull
from app.session.rows import BoundedRows
from engine.bag_of_words import bag_of_words_accuracy
from engine.tasks import ParsedReviews
from engine.transfer import Transplanted, part_norms, snapshot, transplant

# Shipped char LMs whose characters a review is written in. Not the transformer: two of its blocks
# over a review's 220 characters pass the size budget's activations (19 million against 16.8).
SOURCES = ("charlm-reviews", "charlm-lstm", "charlm-gru")
LR_SCALES = (1.0, 0.3, 0.1, 0.03, 0.01)  # the unfrozen layers' rate, as a share of the head's
MAX_LAYERS = 3
MAX_SCORED = 512  # held-out reviews scored every RECORD_EVERY steps (the shipped set holds out 390)
TRAIN = engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0)  # the char LMs' own


def lower_parts(model: nn.Module) -> tuple[str, ...]:
    """The parts a transfer can reuse, bottom first: everything but the head."""
    return tuple(part for part in model.param_groups() if part != "head")


def layers_of(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The hidden layers among parts (not the embedding or the position table)."""
    return tuple(part for part in parts if part.startswith("layer "))


@dataclass(frozen=True)
class Recipe:
    """What the pretrained run does. reused: how many of the source's lower parts it copies,
    bottom first (1 = the embedding); added: new layers stacked on them, under the new head;
    freeze: whether the reused parts start frozen; unfreeze_at: the step from which the top
    `unfrozen` reused layers train again at lr_scale x the learning rate (0: never);
    train_reviews: labelled reviews to train on (0: all), of the shipped set or an uploaded CSV
    (csv_digest names it)."""

    source: str = "charlm-reviews"
    reused: int = 2
    added: int = 1
    freeze: bool = True
    unfreeze_at: int = 100
    unfrozen: int = 1
    lr_scale: float = 0.1
    train_reviews: int = 0
    seed: int = 0
    csv_digest: str = ""  # the sha256 of an uploaded review CSV the runs read; "" for the shipped reviews

    def parts(self, source: nn.Module) -> tuple[str, ...]:
        """The parts copied, bottom first; ValueError when the source has fewer."""
        lower = lower_parts(source)
        if not 1 <= self.reused <= len(lower):
            raise ValueError(f"{self.source} has {len(lower)} parts below its head ({', '.join(lower)}); "
                             f"reuse 1 to {len(lower)} of them")
        return lower[: self.reused]

    def network(self, source: nn.Module) -> engine.ModelConfig:
        """The network both runs train: the source's, with its reused layers and `added` new ones."""
        layers = len(layers_of(self.parts(source))) + self.added
        if not 1 <= layers <= MAX_LAYERS:
            raise ValueError(f"the network would have {layers} layers; reuse a layer or add one (at most {MAX_LAYERS})")
        return dataclasses.replace(source.cfg, num_layers=layers)

    def thawed(self, source: nn.Module) -> tuple[str, ...]:
        """The reused layers unfrozen at unfreeze_at: the top `unfrozen` of them."""
        layers = layers_of(self.parts(source))
        return layers[len(layers) - min(self.unfrozen, len(layers)):] if self.unfrozen else ()


# The lesson's recipe (the page opens with it), and its network: charlm-reviews's LSTM with one new
# layer on top (tests/app/test_transfer_page.py checks it against Recipe.network). Written out so
# that listing the lessons does not load a checkpoint.
LESSON_RECIPE = Recipe()
LESSON_NETWORK = engine.ModelConfig(arch="lstm", hidden_size=128, embedding_dim=32, num_layers=2)


def setup_of(recipe: Recipe, network: engine.ModelConfig) -> Setup:
    """The Lab's Setup for the runs' network on char-level sentiment, trained with the runs'
    settings (what a copy of a run opens with)."""
    return Setup(task="char_sentiment", model=network, train=dataclasses.replace(TRAIN, seed=recipe.seed),
                 task_params={"seq_len": engine.TASKS["char_sentiment"].seq_len, "train_reviews": recipe.train_reviews})


class ScratchRun(TrainedRun):
    """A run that also logs, at every measurement, each part's gradient norm at that step and its
    distance from where it started."""

    def __init__(self, name: str, cfg: engine.ModelConfig, task: engine.Task, train: engine.TrainConfig,
                 held_out: tuple[torch.Tensor, torch.Tensor]):
        self.parts_log = BoundedRows()  # rows only ever appended, each whole: read without the lock
        super().__init__(name, cfg, task, train, held_out)

    def starting_model(self, cfg: engine.ModelConfig, task: engine.Task, seed: int) -> nn.Module:
        model = super().starting_model(cfg, task, seed)
        self.start = snapshot(model)
        return model

    def measure(self) -> None:
        super().measure()
        for part, (grad, moved) in part_norms(self.model, self.start).items():
            self.parts_log.append({"run": self.name, "step": self.steps_done, "part": part,
                                   "state": self.state_of(part), "grad_norm": grad, "moved": moved})

    def state_of(self, part: str) -> str:
        return "trains"


class PretrainedRun(ScratchRun):
    """The run that starts from the source's lower parts and follows the recipe."""

    def __init__(self, name: str, source: nn.Module, recipe: Recipe, task: engine.Task,
                 train: engine.TrainConfig, held_out: tuple[torch.Tensor, torch.Tensor]):
        self.source, self.recipe = source, recipe
        self.reused, self.thawed = recipe.parts(source), recipe.thawed(source)
        super().__init__(name, recipe.network(source), task, train, held_out)
        if recipe.freeze:
            self.trainer.freeze(*self.reused)

    def starting_model(self, cfg: engine.ModelConfig, task: engine.Task, seed: int) -> nn.Module:
        """The seed's weights (the same as the scratch run's), with the reused parts copied in."""
        model = engine.build_model(cfg, task, seed=seed)
        self.transplanted: Transplanted = transplant(self.source, model, self.reused)
        self.start = snapshot(model)
        return model

    def advance(self, final: bool) -> None:
        if self.recipe.freeze and self.thawed and self.steps_done == self.recipe.unfreeze_at:
            self.trainer.unfreeze(*self.thawed)
            self.trainer.scale_lr(dict.fromkeys(self.thawed, self.recipe.lr_scale))
        super().advance(final)

    def state_of(self, part: str) -> str:
        """Frozen, training at a share of the rate, or training: as the next step will."""
        if self.recipe.freeze and part in self.reused:
            thawed = part in self.thawed and self.steps_done >= self.recipe.unfreeze_at > 0
            return f"trains at lr × {self.recipe.lr_scale:g}" if thawed else "frozen"
        return "trains"


class PartRuns(RoundRobin):
    """Runs on a review task (self.task, scored on self.held_out) that each log their parts (ScratchRun's
    parts_log)."""

    @functools.cached_property
    def baseline(self) -> tuple[str, float]:
        """(what, held-out accuracy) of a bag of the task's tokens (logistic regression on their counts;
        engine.bag_of_words) fitted on the runs' training reviews and scored on the held-out ones they are scored
        on, each read as the runs read it: the line a recurrent run must beat to have learned more than which
        tokens occur."""
        accuracy = bag_of_words_accuracy(self.task.train_x, self.task.train_y, *self.held_out, len(self.task.vocab),
                                         len(self.task.class_names), self.task.spec.pad_id)
        return f"{self.task.baseline_name}, same {self.task.token_name}", accuracy

    what = "reviews"  # what the runs read, as a caption names them
    helps = ""  # what the page offers a run behind the bag of words (a sentence)

    def standing(self, log: pd.DataFrame) -> str:
        """Where the runs stand at the latest step all were scored at (log: run, step, metric), and the best of them
        against the bag of the task's tokens."""
        by_run = log.pivot_table(index="step", columns="run", values="metric").dropna() if len(log) else log
        if not len(by_run):
            return ""
        step, row = int(by_run.index[-1]), by_run.iloc[-1]
        scores = {run.name: float(row[run.name]) for run in self.runs if run.name in row}
        best = max(scores, key=scores.get)  # a tie: the first run; its score is the same
        return (f" At step {step:,}: " + ", ".join(f"{run} {score:.1%}" for run, score in scores.items())
                + f" of the held-out {self.what} right." + self.remark(scores)
                + verdict(None, step > 0, scores[best], self.baseline[1], len(self.task.train_y), self.task.median_read,
                          self.task.token_name, self.what, f"the {best} run", self.helps))

    def remark(self, scores: dict[str, float]) -> str:
        """What the page says of the runs' scores beside one another (a sentence, or none)."""
        return ""

    def parts_frame(self) -> pd.DataFrame:
        """Every part measurement of the runs: run, step, part, state, grad_norm, moved."""
        return pd.DataFrame([row for run in self.runs for row in run.parts_log.rows()])


class TransferRuns(PartRuns):
    """The two runs of a recipe on the char-level sentiment task. `source` is a fresh copy of the
    shipped char LM (the caller loads it from the shared bytes), never trained here."""

    helps = "More labelled reviews, more steps, or unfreezing the reused layers sooner are what this page can change."

    def __init__(self, recipe: Recipe, source: nn.Module, reviews: ParsedReviews | None = None):
        super().__init__()
        if (reviews.digest if reviews is not None else "") != recipe.csv_digest:
            raise ValueError("the reviews given are not the ones the recipe names")
        self.recipe, self.source = recipe, source
        self.network = recipe.network(source)  # a ValueError now rather than in a run
        self.task = engine.make_task("char_sentiment", train_reviews=recipe.train_reviews, seed=recipe.seed,
                                     csv_text=reviews)
        try:  # each run may cost what the Lab's model may, and both are held at once
            check_runs(dict.fromkeys(("from scratch", "pretrained"), setup_of(recipe, self.network)), self.task)
        except MemoryFull:
            raise  # the server's memory, not the layers: its own message says what to do
        except ValueError as err:  # what the page can change is the number of layers
            raise ValueError(f"{self.network.num_layers} layers are too many for a shared CPU here ({err}); "
                             "reuse or add fewer layers") from None
        self.train = dataclasses.replace(TRAIN, seed=recipe.seed)
        self.build()

    def build(self) -> None:
        """Fresh runs from the seed, scored on the held-out reviews (all of the shipped set's, the
        first MAX_SCORED of an upload's: the task shuffled them)."""
        self.held_out = tuple(t[:MAX_SCORED] for t in self.task.test_set())
        self.runs = [ScratchRun("from scratch", self.network, self.task, self.train, self.held_out),
                     PretrainedRun("pretrained", self.source, self.recipe, self.task, self.train, self.held_out)]
        self.seconds = 0.0

    @property
    def pretrained(self) -> PretrainedRun:
        return self.runs[1]
