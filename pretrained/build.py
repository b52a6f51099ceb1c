"""Build the shipped checkpoints from scratch: `python -m pretrained.build` (every one), or
`python -m pretrained.build --only sentiment-lstm` (repeatable).

Each is trained as the app trains (engine.make_task, engine.build_model, engine.Trainer), on one
thread from fixed seeds, on a named kernel path (pretrained/kernels.py: avx2 unless UNROLLED_KERNELS
names another). A build gives the same weights byte for byte only on the same path, CPU model and
torch version: MKL and oneDNN also choose code by a CPU's vendor and caches (an Intel AVX-512 machine
on the avx2 path rebuilt sentiment-lstm, built on an AMD EPYC on that path, to other bytes,
2026-11-27). It writes <name>.safetensors (engine.to_bytes: the ModelConfig, task spec and
vocabulary in its header) and <name>.json, its card: what it is, what it was trained on and how, what
it scores on held-out data (pretrained/heldout.py), and when, on what CPU, with what kernels, in how
long.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

import engine
from engine import datasets
from engine.tasks.charlm import CharLMTask
from engine.tasks.reviews import REVIEWS_CSV
from engine.tasks.text import CHARLM_CORPUS
from pretrained import kernels
from pretrained.heldout import BEAMS, HELD_OUT_FILE, METRICS, PROSE_WORDS, CorpusHead, held_out, held_out_start, scores

FOLDER = Path(__file__).resolve().parent
ROOT = FOLDER.parent
THREADS = 1  # one thread: the fastest for models this small, and the same sums in the same order every build


@dataclass(frozen=True)
class Recipe:
    name: str
    title: str
    shows: str  # what a class sees in it, one sentence
    task: str
    model: engine.ModelConfig
    train: engine.TrainConfig
    steps: int
    task_params: dict = field(default_factory=dict)  # as make_task takes them, without seed (train.seed is used)
    threads: int = THREADS  # the translator's 12 M weights train 1.8 times faster on two (the two cores)
    stored_as: torch.dtype = torch.float32  # float16 halves a big model's file; the card scores the stored weights
    beams: tuple[int, ...] = (1, 3)  # a translator's card BLEU, by these beam widths (1: greedy)
    lesson: str | None = None  # the lesson whose ensemble it is one run of: shown there, not among Home's cards


def char_lm(arch: str, title: str, shows: str, corpus: str = "python", **model) -> Recipe:
    """The char LMs on code and on Shakespeare differ only in their corpus and network: the same windows,
    batch, optimiser, steps and seed."""
    named = "" if corpus == "python" else f"{corpus}-"
    return Recipe(
        name=f"charlm-{named}{arch}", title=title, shows=shows, task="charlm", steps=2000,
        task_params={"seq_len": 100} | ({} if corpus == "python" else {"corpus": corpus}),
        model=engine.ModelConfig(arch=arch, **model),
        train=engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0, seed=0),
    )


# The masked model learns from the 5 words a window of 32 hides (15%), the causal one from all 32 next words: trained
# to the same number of words predicted, 10,240,000 each, the masked model takes 32 / 5 times the causal one's steps.
CAUSAL_STEPS = 5000
MASKED_STEPS = CAUSAL_STEPS * 32 // 5


def prose_lm(task: str, title: str, shows: str, bidirectional: bool, steps: int) -> Recipe:
    """BERT's and GPT's objectives on the prose's words: the same network, one attention mask apart, the same
    windows, batch, optimiser and seed, each trained to the same number of words predicted (Devlin et al.'s masked
    LM predicts 15% of a window, so it takes more steps). Longer than the page's 500 steps, and with dropout (Devlin
    et al.'s 0.1): the causal model's 5,000 steps of 64 windows read the training words about 25 times, the masked
    model's 32,000 about 160 times, a fresh 15% of them hidden each time."""
    return Recipe(
        name=f"{task.replace('_', '-')}-prose", title=title, shows=shows, task=task, steps=steps,
        model=engine.ModelConfig(arch="transformer", hidden_size=64, num_layers=2, num_heads=4,
                                 bidirectional=bidirectional, dropout=0.1),
        train=engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=64, clip_norm=1.0, seed=0),
    )


def length_translator(attention: str | None, seed: int) -> Recipe:
    """One run of the length lesson's ensemble (Bahdanau et al. 2015, Figure 2): a translator small enough to
    train on a page, with dot attention or none, on the 2017 file's sentences of 1-20 words. The two differ in
    the attention switch alone; three seeds of each are the ensemble (each seed its own held-out split). Scored
    greedily only: the lesson reads BLEU by length, and a beam would add minutes a model."""
    with_or_without = "with" if attention else "without"
    return Recipe(
        name=f"translate-small-{attention or 'none'}-seed{seed}",
        title=f"Small English-to-French translator {with_or_without} attention, seed {seed}",
        task="translate", steps=2500, task_params={"corpus": "eng-fra-2017", "max_words": 20, "min_count": 5},
        shows=f"A bidirectional GRU encoder (128 units a direction) and a GRU decoder {with_or_without} dot "
              "attention, trained 2,500 steps: one run of the length lesson, whose BLEU by sentence length is set "
              "beside its twin's",
        model=engine.ModelConfig(arch="gru", hidden_size=128, embedding_dim=96, bidirectional=True,
                                 attention=attention),
        train=engine.TrainConfig(optimizer="adam", lr=2e-3, batch_size=128, clip_norm=1.0, seed=seed),
        stored_as=torch.float16, beams=(1,), lesson="length",
    )


LENGTH_SEEDS = (0, 1, 2)
RECIPES = (
    char_lm("lstm", "Char-LSTM on Python source",
            "Next-character predictions on real code: sample from it, or look for the units that follow quotes, "
            "brackets and indentation", hidden_size=128, embedding_dim=32),
    char_lm("gru", "Char-GRU on Python source",
            "The char-LSTM's task and training with a GRU of the same width: one gate fewer, a fifth fewer "
            "weights", hidden_size=128, embedding_dim=32),
    char_lm("transformer", "Decoder-only transformer on Python source",
            "The char-LSTM's task and training with causal self-attention (a small GPT: 2 blocks, 4 heads, "
            "d_model 96): every head's attention over the last 100 characters", hidden_size=96, num_layers=2,
            num_heads=4, dropout=0.1),
    char_lm("lstm", "Char-LSTM on Tiny Shakespeare",
            "Next characters of Shakespeare's plays, the char-rnn classic: sample a speech from it, and compare it "
            "with the transformer trained the same way", corpus="shakespeare", hidden_size=256, embedding_dim=32),
    char_lm("transformer", "Decoder-only transformer on Tiny Shakespeare",
            "The Shakespeare char-LSTM's task and training with causal self-attention (2 blocks, 4 heads, d_model "
            "128): every head's attention over the last 100 characters", corpus="shakespeare", hidden_size=128,
            num_layers=2, num_heads=4),
    Recipe(
        name="charlm-reviews", title="Char-LSTM on the reviews' text", task="charlm", steps=1000,
        task_params={"seq_len": 100, "corpus": "reviews"},
        shows="Next characters of film reviews, learnt from their text alone (no labels): the source the "
              "Transfer learning page reuses for sentiment beside the char-LSTM trained on code",
        model=engine.ModelConfig(arch="lstm", hidden_size=128, embedding_dim=32),
        train=engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0, seed=0),
    ),
    Recipe(
        name="sentiment-lstm", title="Sentiment LSTM on the shipped reviews", task="sentiment", steps=1000,
        task_params={"seq_len": 40, "max_vocab": 2000},
        shows="Reads a review word by word and answers at the last word; the reviews' negations ('was not good') "
              "and 'but' clauses decide their labels",
        model=engine.ModelConfig(arch="lstm", hidden_size=64, embedding_dim=32),
        train=engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0, seed=0),
    ),
    Recipe(
        name="dates-bahdanau", title="Date normaliser with Bahdanau attention", task="dates", steps=600,
        shows="A bidirectional LSTM encoder and an LSTM decoder with additive attention (Bahdanau et al. 2015) "
              "writing dates given in five formats as YYYY-MM-DD; its attention map says which source "
              "characters each output character read",
        model=engine.ModelConfig(arch="lstm", hidden_size=32, embedding_dim=16, bidirectional=True,
                                 attention="additive"),
        train=engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=64, clip_norm=1.0, seed=0),
    ),
    Recipe(
        name="translate-gru", title="English-to-French translator with attention", task="translate", steps=8000,
        task_params={"corpus": "eng-fra-2017", "max_words": 20, "min_count": 3},
        shows="A bidirectional GRU encoder and a GRU decoder with Luong et al.'s (2015) dot attention, trained on "
              "128,000 Tatoeba pairs of 1-20 English words: type an everyday sentence, and read which English "
              "words each French word looked at",
        model=engine.ModelConfig(arch="gru", hidden_size=256, embedding_dim=192, bidirectional=True,
                                 attention="dot"),
        train=engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=128, clip_norm=1.0, seed=0),
        threads=2, stored_as=torch.float16,
    ),
    prose_lm("masked_lm", "Masked language model (BERT's objective) on Austen's prose",
             "A two-block transformer encoder that fills in hidden words from both sides of them: type a sentence "
             "with a <mask>, or follow one word's vector through its layers in two sentences", bidirectional=True,
             steps=MASKED_STEPS),
    prose_lm("word_lm", "Next-word language model (GPT's objective) on Austen's prose",
             "The masked model's network with the causal mask, trained to predict each next word from the words "
             "before it: its guess for a <mask> reads the left side only", bidirectional=False,
             steps=CAUSAL_STEPS),
    *(length_translator(attention, seed) for attention in ("dot", None) for seed in LENGTH_SEEDS),
)
BY_NAME = {recipe.name: recipe for recipe in RECIPES}


def cpu_model() -> str:
    """This machine's CPU as /proc/cpuinfo's "model name" gives it (else what platform knows of it)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def public(name: str) -> dict:
    """A corpus of engine.datasets named as a card names it: by its public source and digest, not by a place
    on the machine that built it."""
    corpus = datasets.CORPORA[name]
    files = datasets.files_of([name])
    return {"corpus": name, "sha256": corpus.sha256,
            "source": [f"{f.repository} @ {f.commit} : {f.source_path} (sha256 {f.sha256})" for f in files],
            "cut": corpus.how_cut, "licence": corpus.licence, "attribution": corpus.attribution}


def data_of(recipe: Recipe) -> dict:
    """What the checkpoint was trained on, and where that came from."""
    if recipe.task_params.get("corpus") == "reviews":
        return {
            "file": relative(REVIEWS_CSV), "sha256": sha256(REVIEWS_CSV.read_bytes()),
            "provenance": "engine/tasks/reviews.py (`python -m engine.tasks.reviews` writes it, seed 0)",
            "what": "the text of the 2,000 generated film reviews, without their labels, one review per line",
            "trained on": "the reviews the char-level sentiment task trains on with seed 0",
            "held out": "the reviews that task holds out (20% of the distinct ones)",
        }
    if recipe.task_params.get("corpus") == "shakespeare":
        task = CharLMTask(corpus="shakespeare")
        return {
            **public("shakespeare"),
            "what": "Tiny Shakespeare: karpathy/char-rnn's data/tinyshakespeare/input.txt, unchanged (public domain)",
            "trained on": f"its first {task.train_end:,} characters (90%, nanoGPT's training split)",
            "held out": f"its last {len(task.ids) - task.train_end:,} characters (nanoGPT's validation split)",
        }
    if recipe.task == "charlm":
        corpus = CHARLM_CORPUS.read_bytes()
        return {
            "file": relative(CHARLM_CORPUS), "sha256": sha256(corpus),
            "provenance": relative(CHARLM_CORPUS.with_suffix(".md")),
            "what": "7 source files of the Python 3.11.7 standard library, joined by newlines (PSF-2.0)",
            "trained on": f"its first {held_out_start():,} characters (every file before {HELD_OUT_FILE})",
            "held out": f"{HELD_OUT_FILE}, its last file",
        }
    if recipe.task in PROSE_WORDS:
        task = engine.make_task(recipe.task)
        return {
            **public("prose"),
            "what": "four novels of Jane Austen (public domain), cut into words as engine.prose.words does",
            "trained on": f"the first {task.train_end:,} words (90%); {len(task.vocab) - 3:,} words known, the rest "
                          "<unk>",
            "held out": f"the last {len(task.ids) - task.train_end:,} words",
        }
    if recipe.task == "translate":
        task = training_task(recipe)
        return {
            **public(task.corpus),
            "what": f"English-French sentence pairs of the Tatoeba project, those of 1 to {task.max_words} English "
                    f"words; words seen fewer than {task.min_count} times in training are <unk> "
                    f"({len(task.vocab) - 4:,} English and {len(task.target_vocab) - 4:,} French words known)",
            "trained on": f"{len(task.train_y):,} pairs whose English sentence the task does not hold out",
            "held out": f"{len(task.test_y):,} pairs: 10% of the distinct English sentences ({len(task.references):,}) "
                        "with all their translations",
        }
    if recipe.task == "sentiment":
        return {
            "file": relative(REVIEWS_CSV), "sha256": sha256(REVIEWS_CSV.read_bytes()),
            "provenance": "engine/tasks/reviews.py (`python -m engine.tasks.reviews` writes it, seed 0)",
            "what": "2,000 generated film reviews whose negations ('was not good') and 'but' clauses decide the label",
            "trained on": "the 80% of its distinct reviews the task does not hold out",
            "held out": "the task's 20% split",
        }
    return {
        "provenance": "engine/tasks/dates.py: generated on the fly, no file",
        "what": "dates drawn uniformly from 1950-01-01 to 2049-12-31, each in one of five formats, and their "
                "ISO form",
        "trained on": f"{recipe.steps * recipe.train.batch_size:,} dates from the seed's 'batches' stream",
        "held out": "dates from the seed's 'held_out' stream",
    }


@dataclass(frozen=True)
class Built:
    weights: bytes  # the .safetensors file
    card: dict


def training_task(recipe: Recipe) -> engine.Task:
    """The task the build trains on: the app's, but for the char LMs on code the corpus less its held-out
    file (the reviews corpus holds only the training reviews already)."""
    if recipe.task == "charlm" and recipe.task_params.get("corpus", "python") == "python":
        return CorpusHead(seed=recipe.train.seed, **recipe.task_params)
    return engine.make_task(recipe.task, seed=recipe.train.seed, **recipe.task_params)


@dataclass(frozen=True)
class Trained:
    seconds: float
    load_average: tuple[float, float]  # before and after: what else the machine ran meanwhile


def train(recipe: Recipe) -> tuple[engine.Task, torch.nn.Module, Trained]:
    """The recipe's model trained as the app trains it, on the threads torch has now."""
    task = training_task(recipe)
    model = engine.build_model(recipe.model, task, seed=recipe.train.seed)
    trainer = engine.Trainer(model, task, recipe.train)
    load_before, start = os.getloadavg()[0], time.perf_counter()
    trainer.step(recipe.steps)
    seconds = time.perf_counter() - start
    if trainer.diverged_at is not None:
        raise RuntimeError(f"{recipe.name} diverged at step {trainer.diverged_at}; change its recipe")
    return task, model, Trained(seconds, (load_before, os.getloadavg()[0]))


def stored_as(recipe: Recipe) -> dict:
    """What the card says of the weights' precision: nothing for float32, every card's until the translator."""
    return {} if recipe.stored_as == torch.float32 else {"stored as": str(recipe.stored_as).removeprefix("torch.")}


@torch.no_grad()
def as_stored(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """Round every floating-point tensor to what the file will hold (engine.to_bytes), so the card's figures are
    the shipped model's."""
    for t in model.state_dict().values():
        if t.is_floating_point():
            t.copy_(t.to(dtype).to(t.dtype))


def build(recipe: Recipe) -> Built:
    """Train `recipe` from scratch and score it: its weights and its card. Byte for byte the
    shipped ones only in a process whose kernels were pinned before torch computed (main does it),
    on the path, CPU model and torch version the shipped card names."""
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        task, model, trained = train(recipe)
        return scored(recipe, task, model, trained)
    finally:
        torch.set_num_threads(threads)


def scored(recipe: Recipe, task: engine.Task, model: torch.nn.Module, trained: Trained) -> Built:
    """A trained model's weights as stored and its card: scored on its held-out data, on the threads torch
    has now (a translator's beam decodes 9,856 sentences one at a time: several minutes, not in `trained`)."""
    as_stored(model, recipe.stored_as)
    samples = held_out(task, recipe.train.seed)
    metrics = scores(model, task, samples, {how: width for how, width in BEAMS.items() if width in recipe.beams})
    weights = engine.to_bytes(model, recipe.stored_as)  # canonical: the same weights give the same bytes
    card = {
        "name": recipe.name,
        "title": recipe.title,
        "shows": recipe.shows,
        "checkpoint": {"file": f"{recipe.name}.safetensors", "bytes": len(weights), "sha256": sha256(weights),
                       "parameters": sum(p.numel() for p in model.parameters()),
                       **stored_as(recipe)},
        "model": recipe.model.to_dict(),
        "task": {"name": recipe.task, "params": recipe.task_params, "metric": task.metric_name},
        "data": data_of(recipe),
        "training": {"train": recipe.train.to_dict(), "steps": recipe.steps, "seed": recipe.train.seed,
                     "torch_threads": recipe.threads, "seconds": round(trained.seconds, 1),
                     "load_average": [round(load, 2) for load in trained.load_average]},
        "held_out": {"data": samples.description, "samples": len(samples.y), "metrics": metrics,
                     "meaning": {name: METRICS[recipe.task][name] for name in metrics}},
        **({"lesson": recipe.lesson} if recipe.lesson else {}),
        "built": {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                  "torch": torch.__version__, "python": platform.python_version(),
                  "kernels": kernels.PATHS[kernels.chosen()], "cpu": cpu_model(),
                  "command": f"python -m pretrained.build --only {recipe.name}"},
    }
    return Built(weights, card)


def write(built: Built) -> None:
    """The checkpoint and its card, each file whole or not at all (written beside it, then renamed
    over it): a running app or test may be reading the old one."""
    name = built.card["name"]
    card = json.dumps(built.card, indent=2, ensure_ascii=False) + "\n"
    for path, data in ((FOLDER / f"{name}.safetensors", built.weights), (FOLDER / f"{name}.json", card.encode())):
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.replace(path)


def main(argv: list[str] | None = None) -> None:
    if not kernels.pinned():  # the chosen path's kernels, set before torch computes: run again pinned
        kernels.pin()
        os.execv(sys.executable, [sys.executable, "-m", "pretrained.build", *(sys.argv[1:] if argv is None else argv)])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=list(BY_NAME), help="build this one (repeatable)")
    names = parser.parse_args(argv).only or list(BY_NAME)
    start = time.perf_counter()
    for name in names:
        built = build(BY_NAME[name])
        write(built)
        held = built.card["held_out"]["metrics"]
        print(f"{name}: {built.card['training']['seconds']:.0f} s, {len(built.weights):,} bytes, "
              + ", ".join(f"{k} {v:.4f}" for k, v in held.items()), flush=True)
    print(f"built {len(names)} in {time.perf_counter() - start:.0f} s (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
