"""The CPU kernels a process computes with: one of a few named paths, chosen before torch computes.

oneDNN (the fused LSTM), ATen and MKL pick their instructions by the CPU, and a sum rounds one way
in AVX-512 code and another in AVX2 code. Over hundreds of training steps that moves a lesson's
figures and a checkpoint's bytes. The app, the tests and the checkpoint builds take the `avx2`
path unless UNROLLED_KERNELS names another: every x86-64 CPU since 2013 has AVX2, so most machines
can take it. It does not make two machines agree: MKL and oneDNN also choose code by a CPU's
vendor and caches (an Intel AVX-512 machine capped at AVX2 failed 10 tests whose figures an AMD
one had given, 2026-11-27), and on ARM the variables are ignored. So a lesson's claim is measured
over several paths and seeds (benchmarks/lesson_ensembles.py) and must hold across all of them;
the paths are what one machine can take to stand in for another's rounding. The variables are
read when torch first computes, so `pin()` must run before anything does (this module imports
nothing of torch's).
"""
from __future__ import annotations

import os

CHOICE = "UNROLLED_KERNELS"  # names the path; unset means DEFAULT_PATH
PATHS = {
    # ATen, oneDNN and MKL capped at AVX2: what the app and the tests compute with by default
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    # the widest vectors an AVX-512 CPU has (this project's Intel machines)
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
               "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
    # no vector code in ATen, SSE4.1 in oneDNN, MKL's vendor-independent path: 2-5x slower, any x86-64
    "default": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE"},
}
DEFAULT_PATH = "avx2"
KERNELS = PATHS[DEFAULT_PATH]  # the default path's variables (recorded by checkpoint builds)
CPU_FLAG = {"avx2": "avx2", "avx512": "avx512f", "default": None}  # what /proc/cpuinfo must list for a path


def chosen() -> str:
    """The path this process is to take: UNROLLED_KERNELS, else the default."""
    path = os.environ.get(CHOICE, DEFAULT_PATH)
    if path not in PATHS:
        raise ValueError(f"{CHOICE}={path!r} names no kernel path; choose one of {', '.join(PATHS)}")
    return path


def pinned(path: str | None = None) -> bool:
    """Whether this process's environment sets `path`'s variables (the chosen path's by default)."""
    return all(os.environ.get(name) == value for name, value in PATHS[path or chosen()].items())


def pin(path: str | None = None) -> str:
    """Set `path`'s variables (the chosen path's by default) in this process's environment, and its
    children's, clearing any another path sets; returns the path's name."""
    path = path or chosen()
    for other in PATHS.values():
        for name in other:
            os.environ.pop(name, None)
    os.environ.update(PATHS[path])
    os.environ[CHOICE] = path
    return path


def available() -> list[str]:
    """The paths this CPU can take (on a machine with no /proc/cpuinfo, only the portable one)."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = set(next((line for line in info if line.startswith("flags")), "").split())
    except OSError:
        flags = set()
    return [path for path, flag in CPU_FLAG.items() if flag is None or flag in flags]
