"""Installs benchmarks/load_trace.py in a Python process started with this directory on its
PYTHONPATH and UNROLLED_LOAD_TRACE set to a file (load.py --trace does both for its server)."""
import os

if os.environ.get("UNROLLED_LOAD_TRACE"):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import load_trace

    load_trace.install(os.environ["UNROLLED_LOAD_TRACE"])
