"""Every benchmark (issues 6, 10 and 12) in one process, tables printed as markdown (as
benchmarks/README.md holds them). Torch runs on one thread, as app/main.py sets it for the app.
From the repository's root (`app` and `engine` import from there):

    PYTHONPATH=. python benchmarks/run_all.py [--quick]
        [--only training|recording|attention|app|memory|history|gradlog|lessons|unroll|bottleneck|maps|
              rtrl|sdpa|memory-span]
"""
from __future__ import annotations

import argparse
import time

import app_timings
import attention_bottleneck
import attention_cost
import attention_maps
import csv_memory
import embeddings_page
import gradient_log
import history_tick
import lesson_speed
import memory
import memory_span
import record_cost
import rtrl
import sdpa
import torch
import train_throughput
import unroll_speed
from timing import load_average, machine

SECTIONS = {
    "training": train_throughput.run,
    "recording": record_cost.run,
    "attention": attention_cost.run,
    "app": app_timings.run,
    "memory": memory.run,
    "history": history_tick.run,
    "gradlog": gradient_log.run,
    "lessons": lesson_speed.run,
    "unroll": unroll_speed.run,
    "bottleneck": attention_bottleneck.run,
    "maps": attention_maps.run,
    "rtrl": rtrl.run,
    "sdpa": sdpa.run,
    "memory-span": memory_span.run,
    "csv-memory": csv_memory.run,
    "embeddings-page": embeddings_page.run,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer cases and repeats: checks the scripts run")
    parser.add_argument("--only", choices=SECTIONS, action="append", help="run this section (may be repeated)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"Machine: {machine()}")
    print(f"Mode: {'quick' if args.quick else 'full'}\n")
    for name in args.only or SECTIONS:
        start = time.perf_counter()
        print(SECTIONS[name](args.quick))
        print(f"({name}: {time.perf_counter() - start:.0f} s, load average now {load_average()})\n", flush=True)


if __name__ == "__main__":
    main()
