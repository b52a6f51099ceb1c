"""python -m engine.datasets list | fetch [NAME ...] [--from DIR]: what is on this machine, and getting the rest."""
from __future__ import annotations

import argparse
import http.client
import sys
import urllib.error
from pathlib import Path

from . import CORPORA, NotWritable, cache_dir, fetch, files_of, megabytes, mirror_dir, sources
from .store import DigestMismatch, checked_place, locate

BAR = 30  # characters


def show_list() -> None:
    mirror = f"mirror: {mirror_dir()}" if mirror_dir() else "no mirror (UNROLLED_DATA_MIRROR)"
    print(f"cache: {cache_dir()}; {mirror}")
    for corpus in CORPORA.values():
        files = files_of([corpus.name])
        places = [locate(f) for f in files]
        state = "here" if all(places) else f"missing {sum(p is None for p in places)} of {len(files)} files"
        print(f"\n{corpus.name}: {corpus.title}, {state}, {megabytes(sum(f.size for f in files))}")
        print(f"  needed for {corpus.needed_by}")
        print(f"  licence: {corpus.licence}; attribution: {corpus.attribution}")
        print(f"  source: {sources(files)}; cut: {corpus.how_cut}; sha256 of the cut {corpus.sha256}")
        for file, place in zip(files, places):
            print(f"    {file.path} ({file.size:,} bytes): {place or 'not here'}")


def bar(file, done: int, total: int) -> None:
    filled = BAR * done // max(total, 1)
    end = "\n" if done >= total else ""
    print(f"\r  {file.path}: [{'#' * filled}{'.' * (BAR - filled)}] {megabytes(done)} of {megabytes(total)}",
          end=end, file=sys.stderr, flush=True)


def run_fetch(names: list[str], source: Path | None) -> int:
    wanted = files_of(names or list(CORPORA))
    absent = [f for f in wanted if checked_place(f) is None]
    print(f"{len(wanted) - len(absent)} of {len(wanted)} files already here; "
          f"{'copying' if source else 'downloading'} {len(absent)} ({megabytes(sum(f.size for f in absent))}) "
          f"into {cache_dir()}")
    for file in absent:
        print(f"  {file.path}: {file.licence}; attribution: {file.attribution}")
    try:
        fetch(names or None, source, None if source else bar)
    except (DigestMismatch, NotWritable, FileNotFoundError) as err:
        print(f"\nfailed: {err}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
        print(f"\nfailed: {err}. With no network, copy the files from a folder that holds them: "
              "python -m engine.datasets fetch --from FOLDER", file=sys.stderr)
        return 1
    print("done: every file checked by sha256")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.datasets", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="each corpus: what it is for, its licence, whether its files are here")
    getting = verbs.add_parser("fetch", help="download (or copy --from a folder) the named corpora, all by default")
    getting.add_argument("names", nargs="*", metavar="NAME", help=", ".join(CORPORA))
    getting.add_argument("--from", dest="source", type=Path, help="a folder holding the files (no network needed)")
    args = parser.parse_args(argv)
    if args.verb == "list":
        show_list()
        return 0
    try:
        return run_fetch(args.names, args.source)
    except ValueError as err:  # a name that is no corpus
        parser.error(str(err))


if __name__ == "__main__":
    sys.exit(main())
