"""The lessons on word vectors, on contextual ones (BERT beside GPT) and on decoding rules, measured as their
pages train or write them."""
from __future__ import annotations

import dataclasses

from app.session import bert_gpt, generation, pretrained
from app.session.lab import Lab
from app.session.lesson_runs import Measured, measures_for
from app.session.lesson_runs.transformers import played
from app.session.lessons import BY_KEY
from app.session.word_vectors import LESSON_PLAN, VectorRuns, setup_of, shipped_vectors
from engine.context_bank import context_bank, self_similarity
from engine.contextual import compare_contexts
from engine.repetition import seq_rep
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


@measures_for("contextual-embeddings")
def contextual_embeddings(seed: int) -> Measured:
    """The page's masked and causal runs of the lesson's plan, to its budget, then read as the page
    reads them: the word's cosine across the lesson's two sentences at every layer, and each layer's
    self-similarity over held-out prose (Ethayarajh 2019) in the masked model."""
    lesson = BY_KEY["contextual-embeddings"]
    plan = dataclasses.replace(bert_gpt.LESSON_PLAN, seed=seed)
    runs = played(bert_gpt.ObjectiveRuns(plan), lesson.steps)
    log = runs.log_frame()
    out = Measured()
    readers = bert_gpt.readers_of(runs)
    first, second = bert_gpt.LESSON_SENTENCES
    for name, short in ((bert_gpt.MASKED, "masked"), (bert_gpt.CAUSAL, "causal")):
        run = log[log.run == name].set_index("step", drop=False)
        out.values[f"{short}.accuracy_end"] = float(run.metric.iloc[-1])
        out.values[f"{short}.baseline"] = runs.tasks[name].baseline_metric[1]
        out.add_curves(name, run, ("metric",), bert_gpt.setup_of(plan, name))
        model = readers.models[name]
        cosines = compare_contexts(model, readers.task, bert_gpt.LESSON_WORD, first, second).cosines  # [L+1]
        for layer in range(1, len(cosines)):
            out.values[f"{short}.cosine.layer{layer - 1}"] = float(cosines[layer])
        out.values[f"{short}.cosine_falls"] = float(bool((cosines.diff() < 0).all()))
        same_start = compare_contexts(model, readers.task, bert_gpt.LESSON_WORD, first, bert_gpt.SAME_START).cosines
        out.values[f"{short}.same_start.lowest"] = float(same_start.min())
    similarity = self_similarity(context_bank(readers.models[bert_gpt.MASKED], readers.task))
    for at, row in enumerate(similarity.itertuples()):  # the claims' names: embedding, layer0, layer1
        out.values[f"masked.adjusted.{'embedding' if at == 0 else f'layer{at - 1}'}"] = row.adjusted
    out.values["masked.adjusted_falls"] = float(bool((similarity.adjusted.diff().dropna() < 0).all()))
    return out


@measures_for("generation")
def decoding_rules(seed: int) -> Measured:
    """The shipped model the lesson opens writes after its prompt by each rule its card compares, as the Generate
    page writes (generation.write, `seed` drawing the sampled texts); seq-rep-4 of each continuation."""
    lesson = BY_KEY["generation"]
    lab = Lab(lesson.setup)
    pretrained.install_into(lab, lesson.shipped)
    out = Measured()
    for name, sampling in generation.LESSON_RULES.items():
        written = generation.write(lab, generation.LESSON_PROMPT, generation.LESSON_LENGTH, sampling, seed)
        out.values[f"{name}.seq_rep_4"] = seq_rep(written.continuation)
    return out
