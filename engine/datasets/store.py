"""Where a public file is found, and how one gets there: the cache (UNROLLED_DATA, else the user's cache
folder), then a mirror folder (UNROLLED_DATA_MIRROR: ../shared/data for the tests and CI), then, only when
asked, a download over HTTPS written to a temporary file beside its place and moved there once its sha256
matches. A file whose digest differs is refused and nothing of it is kept. torchvision's datasets and Keras'
get_file work the same way.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

from .registry import PublicFile

CACHE = "UNROLLED_DATA"
MIRROR = "UNROLLED_DATA_MIRROR"
CHUNK = 1 << 16
TIMEOUT_S = 30  # a connection or a read that waits longer fails, with nothing kept
# (bytes so far, bytes in all): a progress bar's callback
Progress = Callable[[int, int], None]


class DigestMismatch(ValueError):
    """A file whose bytes are not the ones its source published."""


class NotWritable(OSError):
    """The cache folder cannot be made or written."""


def cache_dir() -> Path:
    """UNROLLED_DATA, else the user's cache folder: $XDG_CACHE_HOME/unrolled or ~/.cache/unrolled
    (~/Library/Caches/unrolled on macOS, %LOCALAPPDATA%\\unrolled on Windows)."""
    if os.environ.get(CACHE):
        return Path(os.environ[CACHE]).expanduser()
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "unrolled"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "unrolled"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "unrolled"


def mirror_dir() -> Path | None:
    found = os.environ.get(MIRROR)
    return Path(found).expanduser() if found else None


def mismatch(file: PublicFile, where: str, found: str) -> DigestMismatch:
    return DigestMismatch(
        f"{file.path} from {where} is not the file its source published: sha256 {found}, expected {file.sha256}")


def locate(file: PublicFile) -> Path | None:
    """The file on this machine, in the cache or else the mirror, if one of the right size is there.
    The digest is checked when the file is read (read_checked), where it costs one pass anyway."""
    for folder in (cache_dir(), mirror_dir()):
        if folder is not None:
            candidate = folder / file.path
            try:
                if candidate.stat().st_size == file.size:
                    return candidate
            except OSError:  # missing, or a folder we may not read: look further
                continue
    return None


def read_checked(file: PublicFile, path: Path) -> bytes:
    """The file's bytes, or DigestMismatch: a copy in the cache or a mirror is checked as a download is. A
    cached copy that fails is removed (a disk error, an edit), so the next fetch downloads it again; a
    mirror's is the mirror's owner's to replace, and the message says so."""
    data = path.read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != file.sha256:
        cached = path == cache_dir() / file.path
        if cached:
            path.unlink(missing_ok=True)
        raise DigestMismatch(f"{mismatch(file, str(path), found)}. "
                             + ("It was removed from the cache: fetch it again." if cached else
                                f"Replace that copy, or unset {MIRROR}; a fetch puts a checked copy in the cache, "
                                "which is read first."))
    return data


def writable_place(file: PublicFile) -> Path:
    """The file's place in the cache, its folder made; NotWritable saying what to change if it cannot be."""
    target = cache_dir() / file.path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".probe-")
        probe.close()
    except OSError as err:
        raise NotWritable(f"the data cache {cache_dir()} cannot be written ({err.strerror or err}); set {CACHE} "
                          "to a folder you may write, then fetch again") from None
    return target


def put(file: PublicFile, fill: Callable[[object], str], where: str) -> Path:
    """Into the cache: `fill(out)` writes the bytes to a temporary file beside the target and returns
    their sha256; moved into place only if it matches, else removed and DigestMismatch. Whatever
    happens before the move (an interrupted download, a full disk), nothing is left behind."""
    target = writable_place(file)
    remove_abandoned(target)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)  # while this writes; a process killed mid-way lets go of it
        with os.fdopen(handle, "wb") as out:
            found = fill(out)
        if found != file.sha256:
            raise mismatch(file, where, found)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return target


def remove_abandoned(target: Path) -> None:
    """Remove the temporary files of downloads of `target` whose process is gone (killed before its
    `finally`: a 10 MB `.part` was left per killed download, issue 43), but never one still being
    written: each writer holds an exclusive lock on its file while it lives."""
    for leftover in target.parent.glob(f".{target.name}.*.part"):
        try:
            with open(leftover, "rb") as held:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: a writer is at it
                leftover.unlink()
        except OSError:  # being written, or gone already
            pass


def download(file: PublicFile, progress: Progress | None = None) -> Path:
    """The file from its address into the cache, checked; progress(bytes so far, bytes in all) as it comes."""
    def fill(out) -> str:
        digest, done = hashlib.sha256(), 0
        request = urllib.request.Request(file.address, headers={"User-Agent": "unrolled-datasets"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            total = int(response.headers.get("Content-Length") or file.size)
            for chunk in iter(lambda: response.read(CHUNK), b""):
                done += len(chunk)
                if done > file.size:  # more than the file: a wrong address, or a server filling the disk
                    raise OSError(f"the download of {file.path} sent more than its {file.size:,} bytes; nothing kept")
                out.write(chunk)
                digest.update(chunk)
                if progress is not None:
                    progress(done, total)
        if done < total:  # the connection closed early: say so, rather than blame the digest
            raise OSError(f"the download of {file.path} stopped at {done:,} of {total:,} bytes; fetch it again")
        return digest.hexdigest()

    return put(file, fill, file.address)


def checked_place(file: PublicFile) -> Path | None:
    """Where the file is on this machine with the bytes its source published, or None: a copy found of the
    right size but other bytes does not count (read_checked removes a cached one)."""
    for _ in range(2):  # a bad cached copy is removed, and the mirror's looked at next
        place = locate(file)
        if place is None:
            return None
        try:
            read_checked(file, place)
            return place
        except (DigestMismatch, FileNotFoundError):
            if place != cache_dir() / file.path:  # the mirror's copy: not here, for this file
                return None
    return None


def copy_from(file: PublicFile, folder: Path) -> Path:
    """The file from a folder on this machine (a USB stick, a shared drive) into the cache, checked: the
    folder may hold it at its registry path (as ../shared/data does) or by its bare name."""
    for candidate in (folder / file.path, folder / Path(file.path).name):
        if candidate.is_file():
            def fill(out, source=candidate) -> str:
                digest = hashlib.sha256()
                with open(source, "rb") as f:
                    for chunk in iter(lambda: f.read(CHUNK), b""):
                        out.write(chunk)
                        digest.update(chunk)
                return digest.hexdigest()

            return put(file, fill, str(candidate))
    raise FileNotFoundError(f"{folder} holds neither {file.path} nor {Path(file.path).name}")

