"""Training throughput: engine.Trainer.step against a hand-written PyTorch loop, same model,
same batches, same optimizer and clipping, in one process. Prints medians and their ratio.

    python benchmarks/train_throughput.py [--steps 200] [--repeats 5] [--threads 1]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import engine

CASES = [  # arch, batch, seq_len, hidden, layers, bidirectional
    ("lstm", 64, 50, 64, 1, False),
    ("lstm", 32, 100, 128, 1, False),
    ("lstm", 32, 100, 128, 2, True),
    ("gru", 64, 50, 64, 1, False),
    ("rnn", 64, 50, 64, 1, False),
]


def plain_pytorch(model, batches, lr, clip):
    """What a student would write by hand: forward, loss, backward, clip, step."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()


def seconds_per_step(run, steps) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.steps} steps x {args.repeats} repeats, medians")
    print(f"{'case':<34}{'plain ms/step':>14}{'engine ms/step':>15}{'ratio':>8}")
    for arch, batch, T, H, layers, bi in CASES:
        task = engine.make_task("adding", seq_len=T)
        cfg = engine.ModelConfig(arch=arch, hidden_size=H, num_layers=layers, bidirectional=bi)
        train = engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=batch, clip_norm=1.0)
        gen = torch.Generator().manual_seed(0)
        batches = [task.batch(batch, gen) for _ in range(args.steps)]
        plain, ours = [], []
        for _ in range(args.repeats):  # interleaved, so drift in machine load hits both alike
            model = engine.build_model(cfg, task, seed=0)
            plain.append(seconds_per_step(lambda: plain_pytorch(model, batches, 1e-3, 1.0), args.steps))
            model = engine.build_model(cfg, task, seed=0)
            trainer = engine.Trainer(model, task, train)
            ours.append(seconds_per_step(lambda: [trainer.train_step(x, y) for x, y in batches], args.steps))
        p, o = statistics.median(plain), statistics.median(ours)
        name = f"{arch} B={batch} T={T} H={H} L={layers}{' bi' if bi else ''}"
        print(f"{name:<34}{p * 1e3:>14.2f}{o * 1e3:>15.2f}{o / p:>8.2f}")


if __name__ == "__main__":
    main()
