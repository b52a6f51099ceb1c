"""Random streams: one per purpose, derived from a run's one seed, and seeded runs on torch's
global generator.

One seed feeding every draw ties draws together that should be unrelated: the first dropout
masks replayed the initialisation's draws, and the held-out batch was the probe samples. So each
purpose draws from its own stream, `stream(seed, purpose)`, whose seed is a hash of the pair:
the same seed repeats a run exactly, and no two purposes share draws.

torch's global generator is shared by every thread of the process (every Streamlit session is
a thread). Weight initialisation and dropout can only draw from it, so a seeded run takes a lock
and swaps in its own generator state for as long as it draws: it then repeats exactly however
many sessions train at once."""
from __future__ import annotations

import hashlib
import threading
from contextlib import contextmanager

import torch

from .config import check_choice, check_int

GLOBAL_RNG_LOCK = threading.RLock()
# init: build_model's weights; batches, coins (scheduled sampling), dropout: the Trainer's;
# held_out: evaluate()'s batch for tasks without a test set; probe: the samples a page opens up.
PURPOSES = ("init", "batches", "coins", "dropout", "held_out", "probe")


def stream_seed(seed: int, purpose: str) -> int:
    """The seed of `purpose`'s stream in a run seeded `seed`: a 63-bit hash of the pair (any
    torch or numpy generator takes it), the same on every machine and Python version."""
    check_int("seed", seed, 0, 2**63 - 1)
    check_choice("purpose", purpose, PURPOSES)
    digest = hashlib.blake2b(f"unrolled/{purpose}/{seed}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def stream(seed: int, purpose: str) -> torch.Generator:
    """A fresh generator for one purpose of a run, e.g. task.batch(8, stream(seed, "probe"))."""
    return torch.Generator().manual_seed(stream_seed(seed, purpose))


class PrivateRNG:
    """A generator state of one's own, made active on the global generator by `active()`."""

    def __init__(self, seed: int):
        with GLOBAL_RNG_LOCK, torch.random.fork_rng():
            torch.manual_seed(seed)
            self.state = torch.get_rng_state()

    @contextmanager
    def active(self):
        """Draws inside this block come from (and advance) this generator only; the process's
        generator is as it was afterwards."""
        with GLOBAL_RNG_LOCK, torch.random.fork_rng():
            torch.set_rng_state(self.state)
            try:
                yield
            finally:
                self.state = torch.get_rng_state()
