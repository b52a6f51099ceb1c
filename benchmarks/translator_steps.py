"""The shipped translator's training step (pretrained/build.py's recipe: a bi-GRU 256 encoder, a GRU 512 decoder
with dot attention, 12 M weights, batch 128 of the 2017 Tatoeba file's pairs of 1-20 English words) against a
hand-written PyTorch loop on the same model and data, and what each of the task's and trainer's levers gives:

- plain: random training rows padded to the corpus's longest sentences (25 English tokens, 31 French), the
  model's logits at every step, cross-entropy with IGNORE left out, Adam, clipping: what a student writes;
- cut: the same rows cut to the batch's own longest sentences (TranslateTask.cut);
- cut, one length: rows of one English length (TranslateTask.sample with by_length);
- engine.Trainer: those, and the head at the steps with a target only (engine.training.scored).

Every candidate takes its batches from a pool drawn once, in turn, repeat after repeat (timing.interleaved), on
two torch threads as the build trains. Prints the median seconds a step and each one's ratio to plain.

    PYTHONPATH=. python benchmarks/translator_steps.py [--quick]
"""
from __future__ import annotations

import argparse
import itertools

import torch
import torch.nn.functional as F
from timing import interleaved, machine, table

import engine
from engine.losses import IGNORE
from pretrained.build import BY_NAME, training_task

RECIPE = BY_NAME["translate-gru"]
POOL = 6  # batches each candidate cycles through


def plain_step(model, x, y, optimizer):
    """What a student would write by hand: forward on the padded batch, loss, backward, clip, step."""
    optimizer.zero_grad(set_to_none=True)
    logits = model(x, y)  # [B, T_out, V]
    F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), RECIPE.train.clip_norm)
    optimizer.step()


def cycling(step, batches):
    pool = itertools.cycle(batches)
    return lambda: step(*next(pool))


def run(quick: bool) -> str:
    task = training_task(RECIPE)
    B = RECIPE.train.batch_size
    generator = torch.Generator().manual_seed(0)

    def random_rows():
        rows = torch.randint(0, len(task.train_x), (B,), generator=generator)  # [B]
        return task.train_x[rows], task.train_y[rows]  # [B, S], [B, T_out]

    padded = [random_rows() for _ in range(POOL)]
    cut = [task.cut(x, y) for x, y in padded]
    one_length = [task.cut(*task.sample(B, generator)) for _ in range(POOL)]
    candidates = {}
    for name, batches in (("plain", padded), ("cut", cut), ("cut, one length", one_length)):
        model = engine.build_model(RECIPE.model, task, seed=0)
        optimizer = torch.optim.Adam(model.parameters(), lr=RECIPE.train.lr)
        candidates[name] = cycling(lambda x, y, m=model, o=optimizer: plain_step(m, x, y, o), batches)
    trainer = engine.Trainer(engine.build_model(RECIPE.model, task, seed=0), task, RECIPE.train)
    candidates["engine.Trainer"] = lambda: trainer.step(1)
    timed = interleaved(candidates, repeats=2 if quick else 5, budget=2.0 if quick else 6.0)
    tokens = {name: sum(x.shape[1] + y.shape[1] for x, y in batches) / POOL
              for name, batches in (("plain", padded), ("cut", cut), ("cut, one length", one_length))}
    rows = [[name, f"{seconds:.3f}", f"{timed['plain'] / seconds:.2f}",
             f"{tokens[name]:.1f}" if name in tokens else "as 'cut, one length'"] for name, seconds in timed.items()]
    return table(f"The translator's step, batch {B}, {RECIPE.threads} threads",
                 ["step", "s a step (median)", "x plain's speed", "English + French steps a batch (mean)"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    args = parser.parse_args()
    torch.set_num_threads(RECIPE.threads)  # before machine(), which says how many
    print(machine())
    print(run(args.quick))
