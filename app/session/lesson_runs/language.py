"""The Language models section's lesson on word vectors, measured as its page trains it."""
from __future__ import annotations

import dataclasses

from app.session.lesson_runs import Measured, measures_for
from app.session.lesson_runs.transformers import played
from app.session.lessons import BY_KEY
from app.session.word_vectors import LESSON_PLAN, VectorRuns, setup_of, shipped_vectors
from engine.word_vectors import STARTS

SHORT = {"random": "random", "frozen": "frozen", "fine-tuned": "tuned"}  # a claim's name for each run


@measures_for("pretrained-embeddings")
def pretrained_embeddings(seed: int) -> Measured:
    """The page's three runs (random, frozen, fine-tuned starts) of the lesson's plan, to its budget."""
    lesson = BY_KEY["pretrained-embeddings"]
    plan = dataclasses.replace(LESSON_PLAN, seed=seed)
    runs = played(VectorRuns(plan, shipped_vectors()), lesson.steps)
    log = runs.log_frame()
    out = Measured({"held_out_sentences": float(len(runs.held_out[1])),
                    "covered": runs.covered.found / runs.covered.words})
    end = {}
    for start in STARTS:
        run = log[log.run == start].set_index("step", drop=False)
        end[start] = float(run.metric.iloc[-1])
        out.values[f"{SHORT[start]}.accuracy_end"] = end[start]
        out.add_curves(start, run, ("metric",), setup_of(plan, runs.network) if start == "random" else None)
    out.values["tuned.gain"] = end["fine-tuned"] - end["random"]
    out.values["frozen.gain"] = end["frozen"] - end["random"]
    parts = runs.parts_frame()
    frozen = parts[(parts.run == "frozen") & (parts.part == "embedding")]
    out.values["frozen.embedding_never_moved"] = float(((frozen.moved == 0) & (frozen.grad_norm == 0)).all())
    return out
