"""Pretrained word vectors fed into a sentiment LSTM, trained: random, frozen and fine-tuned starts
side by side ("train embedding as part of RNN or use pre-trained one", "Recurrent Architectures",
section NLP). No Streamlit here.

One LSTM reads real review sentences word by word (the `sentences` corpus: its held-out 596 fixed,
the training ones shuffled by the seed, the first `labelled` of them trained on; or a teacher's
IMDB-layout CSV, a fifth of it held out by the seed) and is trained three
times from the same seed on the same batches: "random", every part from the seed's start;
"frozen", its embedding rows for the words the vectors hold copied from word2vec
(engine.word_vectors.start_embedding) and never trained; "fine-tuned", the same start, trained with
the rest. They train in turns (comparison.RoundRobin), and every RECORD_EVERY steps each logs its
held-out loss and accuracy and each part's gradient norm and distance from its start (a frozen
embedding reads exactly 0 for both).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

import engine
from app.session.budget import check_runs
from app.session.link import Setup
from app.session.memory import MemoryFull
from app.session.transfer import PartRuns, ScratchRun
from engine.tasks import ParsedReviews
from engine.tasks.sentiment import longer_than, shipped_sentences, words_for_most
from engine.transfer import snapshot
from engine.word_vectors import STARTS, Covered, WordVectors, from_bytes, start_embedding

LABELLED = (100, 300, 1000, 0)  # training sentences a run may read (0: all 2,376)
MAX_SCORED = 600  # held-out reviews scored every RECORD_EVERY steps: all the shipped sentences' 596
TRAIN = engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0)
# 5,000 words: the most frequent of all 3,000 sentences, as the task ranks them (held-out ones included: 598
# words only they use take a slot, which no run can learn and no shipped vector covers), 4,998 of their 5,259.
TASK = {"corpus": "sentences", "max_vocab": 5000}  # and seq_len: the plan's words
# words_for_most of the real sentences (9 in 10 have at most 22 words; 21 of the 3,000 more than 40), written
# out so that a plan is made without reading them (a test checks it).
SENTENCE_WORDS = 40


@dataclass(frozen=True)
class Plan:
    """What the three runs read and are: `labelled` training sentences (0: all), the word vectors
    ("shipped", or the name of the student's own), the LSTM's hidden size, the seed; the
    embedding's size is the vectors'."""

    labelled: int = 300
    words: int = 0  # of each review the runs read, its last ones; 0: enough for 9 in 10 (engine's words_for_most)
    vectors: str = "shipped"
    hidden_size: int = 32
    seed: int = 0
    csv_digest: str = ""  # the sha256 of an uploaded review CSV the runs read; "" for the shipped sentences

    def seq_len(self, reviews: ParsedReviews | None) -> int:
        """The words the runs read of each review (of the shipped sentences without `reviews`)."""
        return self.words or (words_for_most(reviews) if reviews is not None else SENTENCE_WORDS)

    def network(self, vectors: WordVectors) -> engine.ModelConfig:
        return engine.ModelConfig(arch="lstm", hidden_size=self.hidden_size, embedding_dim=vectors.vectors.shape[1])


# The lesson's plan (the page opens with it) and its network with the shipped 50-dimensional vectors,
# written out so that listing the lessons does not load them (tests/app/test_word_vectors_page.py
# checks it against Plan.network).
LESSON_PLAN = Plan()
LESSON_NETWORK = engine.ModelConfig(arch="lstm", hidden_size=32, embedding_dim=50)


def setup_of(plan: Plan, network: engine.ModelConfig, reviews: ParsedReviews | None = None) -> Setup:
    """The Lab's Setup for the runs' network and data (what a copy of a run opens with)."""
    return Setup(task="sentiment", model=network, train=dataclasses.replace(TRAIN, seed=plan.seed),
                 task_params=TASK | {"train_reviews": plan.labelled, "seq_len": plan.seq_len(reviews)})


class VectorRun(ScratchRun):
    """A run whose embedding starts from the word vectors: frozen, or trained with the rest."""

    def __init__(self, start: str, vectors: WordVectors, cfg: engine.ModelConfig, task: engine.Task,
                 train: engine.TrainConfig, held_out: tuple[torch.Tensor, torch.Tensor]):
        self.vectors, self.frozen = vectors, start == "frozen"
        super().__init__(start, cfg, task, train, held_out)
        if self.frozen:
            self.trainer.freeze("embedding")

    def starting_model(self, cfg: engine.ModelConfig, task: engine.Task, seed: int) -> nn.Module:
        """The seed's weights (the random run's), with the vectors in the embedding's word rows."""
        model = engine.build_model(cfg, task, seed=seed)
        self.covered: Covered = start_embedding(model.embedding, task.vocab, self.vectors)
        self.start = snapshot(model)
        return model

    def state_of(self, part: str) -> str:
        return "frozen" if self.frozen and part == "embedding" else "trains"


class VectorRuns(PartRuns):
    """The three starts of one plan on the real sentences, or on `reviews` (an uploaded CSV, parsed,
    which the plan's csv_digest names). `vectors` are read, never trained here."""

    def __init__(self, plan: Plan, vectors: WordVectors, reviews: ParsedReviews | None = None):
        super().__init__()
        if (reviews.digest if reviews is not None else "") != plan.csv_digest:
            raise ValueError("the reviews given are not the ones the plan names")
        self.plan, self.vectors, self.reviews = plan, vectors, reviews
        self.network = plan.network(vectors)
        setup = setup_of(plan, self.network, reviews)
        self.task = engine.make_task("sentiment", seed=plan.seed, csv_text=reviews, **setup.task_params)
        try:  # the three are held at once: each may cost what the Lab's model may, and all within its weights
            check_runs(dict.fromkeys(STARTS, setup), self.task)
        except MemoryFull:
            raise  # the server's memory, not the vectors' size: its own message says what to do
        except ValueError as err:  # what the student can change here is the vectors' size
            raise ValueError(f"vectors of {self.network.embedding_dim} numbers a word make these runs too large "
                             f"for a shared CPU here ({err}); train word2vec with fewer dimensions") from None
        self.train = dataclasses.replace(TRAIN, seed=plan.seed)
        self.build()

    def build(self) -> None:
        """Fresh runs from the seed, scored on every held-out sentence (the first MAX_SCORED of an
        upload's: the task shuffled them)."""
        self.held_out = tuple(t[:MAX_SCORED] for t in self.task.test_set())
        random = ScratchRun(STARTS[0], self.network, self.task, self.train, self.held_out)
        self.runs = [random, *(VectorRun(start, self.vectors, self.network, self.task, self.train, self.held_out)
                               for start in STARTS[1:])]
        self.seconds = 0.0

    helps = "More labelled sentences (or reviews) and more steps are what this page can change."

    @property
    def what(self) -> str:
        return "sentences" if self.reviews is None else "reviews"

    def remark(self, scores: dict[str, float]) -> str:
        """Fine-tuned behind frozen, said where it is (Kim's gain from fine-tuning is no rule at few labels)."""
        if scores.get("fine-tuned", 1) < scores.get("frozen", 0):
            return (" Fine-tuned is behind frozen here: with few labels, training the vectors on them need not help "
                    "(Kim 2014's gain from fine-tuning came with thousands of labelled sentences).")
        return ""

    @property
    def covered(self) -> Covered:
        return self.runs[1].covered

    @functools.cached_property
    def cut_counts(self) -> tuple[int, int]:
        """(reviews longer than the words the runs read, reviews in all): each of those is read from its end."""
        reviews = self.reviews if self.reviews is not None else shipped_sentences()[0]
        return longer_than(reviews, self.task.seq_len), len(reviews.labels)


SHIPPED = Path(__file__).resolve().parents[2] / "pretrained" / "vectors" / "word2vec-sentences.safetensors"


@functools.cache
def shipped_vectors() -> WordVectors:
    """The shipped word2vec vectors (pretrained/word_vectors.py), read once a process and shared
    read-only: the runs copy rows out of them, never into them."""
    found = from_bytes(SHIPPED.read_bytes())
    found.vectors.requires_grad_(False)
    return found
