"""Seeded runs on torch's global random generator, which every thread of the process shares
(every Streamlit session is a thread). Weight initialisation and dropout can only draw from it,
so a seeded run takes a lock and swaps in its own generator state for as long as it draws: it
then repeats exactly however many sessions train at once."""
from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

GLOBAL_RNG_LOCK = threading.RLock()


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
