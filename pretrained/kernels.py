"""The CPU kernels a build and the tests compute with, the same on every x86-64 machine.

oneDNN (the fused LSTM), ATen and MKL pick their instructions by the CPU, and a sum rounds one way
in AVX-512 code and another in AVX2 code. Over hundreds of training steps that moves a checkpoint's
bytes and a lesson's figures: CI on an AVX2 machine failed the sentiment-lstm rebuild and two
lessons whose figures had been measured on an AVX-512 one (2026-11-23). Capping all three at AVX2,
which every x86-64 CPU since 2013 has, gives the same numbers on both; elsewhere (ARM) the variables
do nothing. They are read when torch first computes, so `pin()` must run before anything does (it
imports nothing of torch's itself).
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
