"""Tiny Shakespeare against nanoGPT's published CPU figure (issue 30).

nanoGPT's README: `python train.py config/train_shakespeare_char.py --device=cpu --compile=False
--eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128
--max_iters=2000 --lr_decay_iters=2000 --dropout=0.0` "still runs in about ~3 minutes, but gets us a
loss of only 1.88". This trains our transformer and our LSTM (engine.build_model, engine.Trainer) on
the same split, at its settings where the engine has them, and scores them as it does:

- data: Tiny Shakespeare (engine.datasets), the `charlm` task's "shakespeare" corpus: its vocabulary is the
  whole file's 65 characters, training windows come from its first int(n * 0.9) characters, and
  the rest is held out (nanoGPT's data/shakespeare_char/prepare.py cuts the same way);
- 2,000 steps of batch 12, windows of 64 characters, the loss at every position; Adam at lr 1e-3,
  the gradient's norm clipped at 1 (nanoGPT: AdamW, betas 0.9 and 0.99, weight decay 0.1, lr warmed
  up over 100 steps then cosine-decayed to 1e-4 at step 2000; the engine's Adam has none of it, so
  the "nanoGPT schedule" runs set its warm-up and decay through Trainer.retune every step);
- its evaluation: every 250 steps and at the end, the mean loss over 20 random batches of 12 windows
  of each split (estimate_loss, eval_iters=20), and at the end every 64-window of the held-out text
  end to end (1,742 windows, 111,488 next characters): nanoGPT's 240 windows are a noisy sample.

With --nanogpt CHECKOUT (a local copy of github.com/karpathy/nanoGPT; nothing is downloaded) it
also runs nanoGPT itself on this machine, on the same file and split (its data/shakespeare_char
files written from the shipped corpus, as its prepare.py writes them), with one thread: its
README's command, and the same command with the engine's optimiser (Adam at a constant lr 1e-3, no
weight decay), so what is left between the two is the network. Its checkpoint (kept at its best
evaluation) is scored on every held-out window as ours are.

`--only learned-positions` and `--only gpt-init` train two variants of our transformer, to ask why
it does better than nanoGPT's: with nanoGPT's learned positions, and initialised as nanoGPT
initialises its GPT.

One torch thread, kernels pinned (pretrained/kernels.py: avx2 unless UNROLLED_KERNELS names another),
seeds 0-2. Prints markdown tables; benchmarks/README.md section 18 holds the figures.

    PYTHONPATH=. python benchmarks/shakespeare_charlm.py [--quick] [--seeds 0 1 2] [--only transformer]
    PYTHONPATH=. python benchmarks/shakespeare_charlm.py --nanogpt ~/nanoGPT        # and nanoGPT's runs, step times
    PYTHONPATH=. python benchmarks/shakespeare_charlm.py --nanogpt ~/nanoGPT --only steps
    PYTHONPATH=. python benchmarks/shakespeare_charlm.py --only gpt-init --schedule constant
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

import torch
from timing import cpu_model, interleaved, load_average, table

import engine
from pretrained import kernels
from pretrained.heldout import tail_windows

SEQ_LEN, BATCH, STEPS, LR, CLIP = 64, 12, 2000, 1e-3, 1.0  # nanoGPT's command line, and its grad_clip
EVAL_EVERY, EVAL_BATCHES = 250, 20  # its config's eval_interval and the command's eval_iters
WARMUP, MIN_LR = 100, 1e-4  # its config's warmup_iters and min_lr (lr_decay_iters = STEPS)
SCORE_CHUNK = 256  # windows scored at once over the whole held-out text: the activations stay small
NANOGPT = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20", "--log_interval=1",
           "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4", "--n_embd=128", "--max_iters=2000",
           "--lr_decay_iters=2000", "--dropout=0.0"]  # its README's command for a CPU
# nanoGPT's AdamW made the engine's Adam: a constant lr (no warm-up, no decay), no weight decay, torch's beta2
ENGINE_OPTIMISER = ["--decay_lr=False", "--weight_decay=0.0", "--beta2=0.999"]
# Sections: nanoGPT's runs, ours, the step times, and two variants of our transformer that ask why it
# beats nanoGPT's (run only when named): nanoGPT's learned positions, and nanoGPT's initialisation.
SECTIONS = ("nanogpt", "transformer", "lstm", "steps", "learned-positions", "gpt-init")
VARIANTS = ("learned-positions", "gpt-init")


def models() -> dict[str, engine.ModelConfig]:
    # nanoGPT's 4 layers, 4 heads, 128 wide; our block is post-norm with a ReLU feed-forward, sinusoidal
    # positions, biases and an untied read-out (nanoGPT: pre-norm, GELU, learned positions, no biases, tied)
    transformer = engine.ModelConfig(arch="transformer", hidden_size=128, num_layers=4, num_heads=4)
    return {
        "transformer": transformer,
        # one fused layer with as many weights, near enough: 775,825 against the transformer's 809,793
        "lstm": engine.ModelConfig(arch="lstm", hidden_size=400, embedding_dim=64),
        "learned-positions": dataclasses.replace(transformer, position_encoding="learned"),
        "gpt-init": transformer,  # re-initialised as nanoGPT initialises its GPT (gpt_init)
    }


def gpt_init(model: torch.nn.Module) -> None:
    """nanoGPT's GPT._init_weights on our transformer: every matrix (embedding, projections, read-out)
    from N(0, 0.02), biases 0, and the projections back into the residual stream (W_o, W_2) from
    N(0, 0.02 / sqrt(2 x layers)); PyTorch's defaults start the embedding at N(0, 1) and a linear
    layer's weights uniform in +-1/sqrt(fan_in)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                residual = name.endswith(("W_o.weight", "W_2.weight"))
                p.normal_(0.0, 0.02 / math.sqrt(2 * model.cfg.num_layers) if residual else 0.02)
            elif name.endswith(".bias"):
                p.zero_()


def nanogpt_lr(step: int) -> float:
    """nanoGPT's get_lr(it) for these settings: linear warm-up, then cosine down to MIN_LR."""
    if step < WARMUP:
        return LR * (step + 1) / (WARMUP + 1)
    ratio = (step - WARMUP) / (STEPS - WARMUP)
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LR - MIN_LR)


def random_windows(ids, generator, count: int):
    """`count` windows of SEQ_LEN at random starts of `ids` (x, y), as nanoGPT's get_batch draws them."""
    starts = torch.randint(len(ids) - SEQ_LEN, (count,), generator=generator)  # [B]
    chunk = ids[starts[:, None] + torch.arange(SEQ_LEN + 1)].long()  # [B, T+1]
    return chunk[:, :-1], chunk[:, 1:]  # [B, T] each


def estimate_loss(model, task, generator) -> dict[str, float]:
    """nanoGPT's estimate_loss: the mean over EVAL_BATCHES batches of each split's batch loss."""
    splits = {"train": task.ids[: task.train_end], "val": task.ids[task.train_end :]}  # [N_train], [N_val]
    out = {}
    model.eval()
    with torch.no_grad():
        for name, ids in splits.items():
            losses = [task.loss(model(x), y).item() for x, y in
                      (random_windows(ids, generator, BATCH) for _ in range(EVAL_BATCHES))]
            out[name] = sum(losses) / EVAL_BATCHES
    model.train()
    return out


def held_out_loss(model, task) -> float:
    """nats per character over every window of the held-out text end to end."""
    samples = tail_windows(task)
    model.eval()
    with torch.no_grad():
        total = sum(task.loss(model(x), y).item() * y.numel()
                    for x, y in zip(samples.x.split(SCORE_CHUNK), samples.y.split(SCORE_CHUNK)))
    model.train()
    return total / samples.y.numel()


def run(name: str, schedule: str, seed: int, steps: int) -> dict:
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=SEQ_LEN, seed=seed)
    model = engine.build_model(models()[name], task, seed=seed)
    if name == "gpt-init":
        gpt_init(model)
    cfg = engine.TrainConfig(optimizer="adam", lr=LR, batch_size=BATCH, clip_norm=CLIP, seed=seed)
    trainer = engine.Trainer(model, task, cfg)
    evals = torch.Generator().manual_seed(1337 + seed)  # nanoGPT seeds its one generator with 1337
    curve, trained, start = [], 0.0, time.perf_counter()
    for step in range(steps + 1):
        if step % EVAL_EVERY == 0 or step == steps:
            curve.append((step, estimate_loss(model, task, evals)))
        if step == steps:
            break
        if schedule == "nanoGPT":
            trainer.retune(dataclasses.replace(cfg, lr=nanogpt_lr(step)))
        began = time.perf_counter()
        trainer.step(1)
        trained += time.perf_counter() - began
    total = time.perf_counter() - start
    if trainer.diverged_at is not None:
        raise RuntimeError(f"{name} diverged at step {trainer.diverged_at}")
    return {"model": name, "schedule": schedule, "seed": seed, "parameters": sum(p.numel() for p in model.parameters()),
            "curve": curve, "held_out": held_out_loss(model, task), "train_s": trained, "total_s": total}


def nanogpt_data(checkout: Path) -> None:
    """data/shakespeare_char/{train,val}.bin and meta.pkl from the shipped corpus, as its prepare.py
    writes them from the same file: uint16 ids of the sorted characters, cut at int(n * 0.9)."""
    task = engine.make_task("charlm", corpus="shakespeare")
    folder = checkout / "data" / "shakespeare_char"
    ids = task.ids.numpy().astype("uint16")  # [N]
    ids[: task.train_end].tofile(folder / "train.bin")
    ids[task.train_end :].tofile(folder / "val.bin")
    meta = {"vocab_size": len(task.vocab), "itos": dict(enumerate(task.vocab)),
            "stoi": {ch: i for i, ch in enumerate(task.vocab)}}
    (folder / "meta.pkl").write_bytes(pickle.dumps(meta))


def nanogpt(checkout: Path, schedule: str, extra: list[str]) -> dict:
    """nanoGPT's train.py, one thread, then its checkpoint scored on every held-out window."""
    out = checkout / f"out-unrolled-{schedule}"
    start = time.perf_counter()
    ran = subprocess.run([sys.executable, "train.py", *NANOGPT, *extra, f"--out_dir={out}"], cwd=checkout,
                         env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, check=True)
    total = time.perf_counter() - start
    evals = [(int(s), {"train": float(t), "val": float(v)})
             for s, t, v in re.findall(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", ran.stdout)]
    timed = {int(i): float(ms) / 1000 for i, ms in re.findall(r"iter (\d+): loss [\d.]+, time ([\d.]+)ms", ran.stdout)}
    plain = [dt for i, dt in timed.items() if i % EVAL_EVERY]  # an iteration at an evaluation timed that too
    GPT, GPTConfig = nanogpt_model(checkout)
    saved = torch.load(out / "ckpt.pt", map_location="cpu", weights_only=True)
    model = GPT(GPTConfig(**saved["model_args"]))
    model.load_state_dict(saved["model"])
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=SEQ_LEN)
    samples, total_loss = tail_windows(task), 0.0
    model.eval()
    with torch.no_grad():
        for x, y in zip(samples.x.split(SCORE_CHUNK), samples.y.split(SCORE_CHUNK)):
            total_loss += model(x, y.contiguous())[1].item() * y.numel()  # (logits, mean loss at every position)
    print(f"  nanoGPT ({schedule}): its checkpoint is of step {saved['iter_num']}", file=sys.stderr)
    return {"model": "nanoGPT's own", "schedule": schedule, "seed": 1337,
            "parameters": sum(p.numel() for p in model.parameters()), "curve": evals,
            "held_out": total_loss / samples.y.numel(), "train_s": sum(plain) * len(timed) / len(plain),
            "total_s": total}


def nanogpt_model(checkout: Path):
    """nanoGPT's GPT class, from its checkout's model.py."""
    sys.path.insert(0, str(checkout))
    from model import GPT, GPTConfig  # found only now that its checkout is on the path

    return GPT, GPTConfig


def step_times(checkout: Path, quick: bool) -> str:
    """One training step of each, medians with the three taking turns (load from elsewhere slows
    them alike): nanoGPT's (forward, backward, clip, its AdamW) and engine.Trainer.step(1) for ours."""
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=SEQ_LEN, seed=0)
    GPT, GPTConfig = nanogpt_model(checkout)
    gpt = GPT(GPTConfig(block_size=SEQ_LEN, vocab_size=len(task.vocab), n_layer=4, n_head=4, n_embd=128,
                        dropout=0.0, bias=False))
    optimizer = gpt.configure_optimizers(0.1, LR, (0.9, 0.99), "cpu")

    def nanogpt_step():
        x, y = task.batch(BATCH)
        _, loss = gpt(x, y.contiguous())  # its loss views y flat
        loss.backward()
        torch.nn.utils.clip_grad_norm_(gpt.parameters(), CLIP)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    steps = {"nanoGPT's own": nanogpt_step}
    for name in ("transformer", "lstm"):
        trainer = engine.Trainer(engine.build_model(models()[name], task, seed=0), task,
                                 engine.TrainConfig(optimizer="adam", lr=LR, batch_size=BATCH, clip_norm=CLIP))
        steps[name] = lambda trainer=trainer: trainer.step(1)
    repeats, budget = (1, 0.3) if quick else (7, 2.0)
    seconds = interleaved(steps, repeats, budget)
    base = seconds["nanoGPT's own"]
    return table(f"One training step (batch 12 x 64), median of {repeats} turns of about {budget:g} s each",
                 ["model", "ms a step", "against nanoGPT's", "2,000 steps, s"],
                 [[name, f"{t * 1000:.1f}", f"{t / base:.2f}x", f"{t * STEPS:.0f}"] for name, t in seconds.items()])


def row(result: dict) -> list:
    final = result["curve"][-1][1]
    best = min(losses["val"] for _, losses in result["curve"])
    return [result["model"], f"{result['parameters']:,}", result["schedule"], result["seed"], f"{final['train']:.3f}",
            f"{final['val']:.3f}", f"{best:.3f}", f"{result['held_out']:.4f}", f"{result['train_s']:.0f}",
            f"{result['total_s']:.0f}"]


def main() -> None:
    if not kernels.pinned():  # the chosen path's kernels, set before torch computes: run again pinned
        kernels.pin()
        os.execv(sys.executable, [sys.executable, *sys.argv])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 steps, seed 0: checks the script runs")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--only", choices=SECTIONS, action="append",
                        help="this section (repeatable): nanoGPT's runs, our transformer's or LSTM's, the step "
                             "times (nanogpt and steps need --nanogpt), or a variant of our transformer")
    parser.add_argument("--nanogpt", type=Path, help="a local nanoGPT checkout: run it too, on the same data")
    parser.add_argument("--schedule", choices=("constant", "nanoGPT"), action="append",
                        help="constant: the Trainer's Adam at lr 1e-3; nanoGPT: its warm-up and cosine decay")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, 1 thread, kernels {kernels.chosen()}, "
          f"load average {load_average()}", flush=True)
    steps, seeds = (50, [0]) if args.quick else (STEPS, args.seeds)
    header = ["model", "parameters", "lr schedule", "seed", "train loss", "val loss (nanoGPT's eval)",
              "best val of the evals", "held-out loss, every window", "training s", "total s"]
    sections = args.only or [s for s in SECTIONS if s not in VARIANTS and (args.nanogpt or s in models())]
    if {"nanogpt", "steps"} & set(sections) and not args.nanogpt:
        parser.error("the nanogpt and steps sections run nanoGPT: give --nanogpt, a local checkout of it")
    if set(sections) - {"steps"}:
        print("| " + " | ".join(header) + " |\n|" + "---|" * 3 + "---:|" * (len(header) - 3), flush=True)
    if "nanogpt" in sections:
        nanogpt_data(args.nanogpt)
        quick = ["--max_iters=50", "--eval_interval=25"] if args.quick else []
        for schedule, extra in (("nanoGPT", []), ("constant", ENGINE_OPTIMISER)):
            result = nanogpt(args.nanogpt, schedule, extra + quick)
            print("| " + " | ".join(str(v) for v in row(result)) + " |", flush=True)
    for name in [s for s in sections if s in models()]:
        for schedule in args.schedule or ("constant", "nanoGPT"):
            for seed in seeds:
                result = run(name, schedule, seed, steps)
                print("| " + " | ".join(str(v) for v in row(result)) + " |", flush=True)
                print("  curve (step: train, val): " + ", ".join(
                    f"{s}: {v['train']:.3f}, {v['val']:.3f}" for s, v in result["curve"]), file=sys.stderr, flush=True)
    if "steps" in sections:
        print("\n" + step_times(args.nanogpt, args.quick), flush=True)
    print(f"load average at the end {load_average()}")


if __name__ == "__main__":
    main()
