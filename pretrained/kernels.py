"""The CPU kernels a build and the tests compute with, capped so that AVX2 and AVX-512 machines agree.

oneDNN (the fused LSTM), ATen and MKL pick their instructions by the CPU, and a sum rounds one way
in AVX-512 code and another in AVX2 code. Over hundreds of training steps that moves a checkpoint's
bytes and a lesson's figures: CI on an AVX2 machine failed the sentiment-lstm rebuild and two
lessons whose figures had been measured on an AVX-512 one (2026-11-23). Capping all three at AVX2,
which every x86-64 CPU since 2013 has, gave the same numbers on the two machines measured (an
AVX-512 AMD EPYC capped, and CI's AVX2 machine). MKL and oneDNN may still choose other code paths
by a CPU's vendor or caches, so another machine may differ where these two agree; on ARM the
variables are ignored (ATen warns once). They are read when torch first computes, so `pin()` must
run before anything does (it imports nothing of torch's itself).
"""
from __future__ import annotations

import os

KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def pinned() -> bool:
    """Whether this process's environment caps the kernels as KERNELS says."""
    return all(os.environ.get(name) == value for name, value in KERNELS.items())


def pin() -> None:
    """Cap the kernels in this process's environment (and its children's)."""
    os.environ.update(KERNELS)
