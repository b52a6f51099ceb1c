"""RTRL beside BPTT (issue 16): what each keeps in memory and what each step costs, as T and H grow.

The engine's tanh RNN (nn.RNN, one layer) forecasting a sine wave (a loss at every step), batch 1:
one stream, as an online learner reads it. RTRL is engine.rtrl.rtrl_gradients (no graph, the
sensitivity S_t = dh_t/dθ carried forward); BPTT is the engine's forward pass on PyTorch's kernel
and autograd's backward, as Trainer trains it. Both give the same gradient (tests/engine/test_rtrl.py).

Memory: RTRL carries S_t, [B, H, P] with P = H·D + H² + 2H recurrent parameters, whatever T is; BPTT
keeps what autograd saves for the backward pass (counted with saved_tensors_hooks, each storage once,
the weights and the input left out), which grows with T. Time: milliseconds per time step
(forward and gradient of the whole sequence, divided by T), medians of interleaved repeats. The
"growth" columns are the exponent between a row and the one before: log(ratio of times) / log(ratio of H).
"W_hh S_{t-1} GMAC/s" is the H·H·P multiply-adds of RTRL's product per step over its whole time per
step: the rate at which the H^4 term is worked through, which rises as the matrices grow.

    PYTHONPATH=.:benchmarks python benchmarks/rtrl.py [--quick]
"""
from __future__ import annotations

import math

import torch
from timing import interleaved, run_alone, table

import engine
from engine.rtrl import rtrl_gradients, rtrl_online

BATCH = 1
H_SWEEP, H_SWEEP_T = (8, 16, 32, 64, 128), 50  # H grows at T = 50
T_SWEEP, T_SWEEP_H = (25, 50, 100, 200, 400), 32  # T grows at H = 32
QUICK_H, QUICK_T = (8, 16, 32), (25, 50, 100)


def setup(T: int, H: int):
    """(task, model, x, y): the engine's tanh RNN of H units on sine forecasting of T steps."""
    task = engine.make_task("sine", seq_len=T)
    model = engine.build_model(engine.ModelConfig(arch="rnn", hidden_size=H), task, seed=0)
    x, y = task.batch(BATCH, torch.Generator().manual_seed(0))
    return task, model, x, y


def bptt(task, model, x, y) -> None:
    """Forward on nn.RNN, then autograd's backward through every stored step."""
    torch.autograd.grad(task.loss(model(x), y), list(model.parameters()))


def saved_bytes(task, model, x, y) -> int:
    """Bytes autograd keeps for BPTT's backward pass: every storage saved by the forward pass, once,
    except the weights' and the input's (they exist without training)."""
    own = {t.untyped_storage().data_ptr() for t in (*model.parameters(), x)}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in own:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        task.loss(model(x), y)
    return sum(saved.values())


def sensitivity_bytes(model, x, y) -> int:
    """Bytes of S_t, the state RTRL carries from step to step (its [P] running gradient and h_t add P + H numbers)."""
    first = next(iter(rtrl_online(model, x, y)))
    return first.sensitivity.nbytes


def measure(T: int, H: int, repeats: int, budget: float) -> dict:
    task, model, x, y = setup(T, H)
    times = interleaved({"rtrl": lambda: rtrl_gradients(model, x, y), "bptt": lambda: bptt(task, model, x, y)},
                        repeats, budget)
    params = sum(p.numel() for p in model.rnn.parameters())
    return {"T": T, "H": H, "P": params, "rtrl ms": 1e3 * times["rtrl"] / T, "bptt ms": 1e3 * times["bptt"] / T,
            "rtrl kb": sensitivity_bytes(model, x, y) / 1024, "bptt kb": saved_bytes(task, model, x, y) / 1024}


def growth(rows: list[dict], key: str, by: str) -> list[str]:
    """The exponent k of key ∝ by^k between each row and the one before ("" for the first)."""
    return [""] + [f"{math.log(b[key] / a[key]) / math.log(b[by] / a[by]):.1f}" for a, b in zip(rows, rows[1:])]


def h_table(hs: tuple[int, ...], repeats: int, budget: float) -> str:
    rows = [measure(H_SWEEP_T, H, repeats, budget) for H in hs]
    rtrl_k, bptt_k = growth(rows, "rtrl ms", "H"), growth(rows, "bptt ms", "H")
    mem_k = growth(rows, "rtrl kb", "H")
    return table(
        f"As H grows (T = {H_SWEEP_T}, batch {BATCH})",
        ["H", "P", "RTRL ms/step", "growth (H^k)", "W_hh S_{t-1} GMAC/s", "BPTT ms/step", "growth (H^k)",
         "RTRL / BPTT", "RTRL S_t KB", "growth (H^k)", "BPTT saved KB"],
        [[r["H"], r["P"], f"{r['rtrl ms']:.3f}", rk, f"{r['H'] ** 2 * r['P'] / r['rtrl ms'] / 1e6:.2f}",
          f"{r['bptt ms']:.3f}", bk, f"{r['rtrl ms'] / r['bptt ms']:.0f}x", f"{r['rtrl kb']:.0f}", mk,
          f"{r['bptt kb']:.0f}"]
         for r, rk, bk, mk in zip(rows, rtrl_k, bptt_k, mem_k)],
    )


def t_table(ts: tuple[int, ...], repeats: int, budget: float) -> str:
    rows = [measure(T, T_SWEEP_H, repeats, budget) for T in ts]
    return table(
        f"As T grows (H = {T_SWEEP_H}, batch {BATCH})",
        ["T", "RTRL ms/step", "BPTT ms/step", "RTRL / BPTT", "RTRL S_t KB", "BPTT saved KB", "BPTT saved / RTRL S_t"],
        [[r["T"], f"{r['rtrl ms']:.3f}", f"{r['bptt ms']:.3f}", f"{r['rtrl ms'] / r['bptt ms']:.0f}x",
          f"{r['rtrl kb']:.0f}", f"{r['bptt kb']:.0f}", f"{r['bptt kb'] / r['rtrl kb']:.2f}"] for r in rows],
    )


def run(quick: bool = False) -> str:
    """Both tables; --quick: fewer sizes and repeats (checks the script runs)."""
    repeats, budget = (2, 0.05) if quick else (5, 0.2)
    hs, ts = (QUICK_H, QUICK_T) if quick else (H_SWEEP, T_SWEEP)
    return h_table(hs, repeats, budget) + "\n" + t_table(ts, repeats, budget)


if __name__ == "__main__":
    run_alone(run, "H up to 32 and T up to 100, 2 repeats")
