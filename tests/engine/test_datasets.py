"""engine.datasets: public files found in the cache, then the mirror, then downloaded only when asked, each
checked by sha256 and written atomically; the corpora cut from them. The downloads come from a loopback HTTP
server serving files made here; the registry's own entries are checked against the tests' mirror
(../shared/data, as run_tests.sh sets UNROLLED_DATA_MIRROR)."""
import fcntl
import hashlib
import os
from pathlib import Path

import pytest

from engine import datasets
from engine.datasets import __main__ as command
from engine.datasets import registry
from tests.loopback import serving

BODY = b"one line of a public corpus\n" * 5000  # 140 kB: several chunks, so progress is seen moving
OTHER = b"not what its source published\n" * 10


@pytest.fixture
def server():
    with serving() as served:
        yield served


@pytest.fixture
def places(tmp_path, monkeypatch):
    """An empty cache and an empty mirror of this test's own."""
    cache, mirror = tmp_path / "cache", tmp_path / "mirror"
    mirror.mkdir()
    monkeypatch.setenv(datasets.CACHE, str(cache))
    monkeypatch.setenv(datasets.MIRROR, str(mirror))
    return cache, mirror


def register(monkeypatch, server, body=BODY, served=None) -> registry.Corpus:
    """A corpus "made-up" of one public file "made-up/file.txt" whose source published `body`, served as
    `served` (body by default), cut as upper case."""
    file = registry.PublicFile("made-up/file.txt", "owner/repository", "0" * 40, "file.txt",
                               hashlib.sha256(body).hexdigest(), len(body), "CC0", "someone",
                               url=server.url("file.txt"))
    corpus = registry.Corpus("made-up", "A made-up corpus", (file.path,), lambda files: files[file.path].upper(),
                             hashlib.sha256(body.upper()).hexdigest(), len(body), "a test", "upper case", "CC0",
                             "someone")
    monkeypatch.setitem(registry.FILES, file.path, file)
    monkeypatch.setitem(registry.CORPORA, corpus.name, corpus)
    server.files["file.txt"] = body if served is None else served
    datasets.corpus_bytes.cache_clear()
    return corpus


def left_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_download_reports_its_progress_and_lands_checked_in_the_cache(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server)
    seen = []
    (place,) = datasets.fetch(["made-up"], progress=lambda file, done, total: seen.append((file.path, done, total)))
    assert place == cache / "made-up" / "file.txt" and place.read_bytes() == BODY
    assert len(seen) > 1 and seen[-1] == ("made-up/file.txt", len(BODY), len(BODY))
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)
    assert datasets.corpus_bytes("made-up") == BODY.upper()
    assert server.requests == ["file.txt"]


def test_a_file_whose_digest_differs_is_refused_and_nothing_is_kept(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server, served=OTHER)
    with pytest.raises(datasets.DigestMismatch) as refused:
        datasets.fetch(["made-up"])
    said = str(refused.value)
    assert "made-up/file.txt" in said and hashlib.sha256(BODY).hexdigest() in said
    assert hashlib.sha256(OTHER).hexdigest() in said
    assert left_in(cache) == []
    with pytest.raises(datasets.CorpusMissing):
        datasets.corpus_bytes("made-up")


def test_an_interrupted_download_leaves_nothing(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server)
    server.cut_short.add("file.txt")
    with pytest.raises(OSError, match="stopped at 70,000 of 140,000 bytes"):
        datasets.fetch(["made-up"])
    assert left_in(cache) == []


def test_a_killed_downloads_leftover_goes_at_the_next_download_but_a_live_ones_stays(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server)
    folder = cache / "made-up"
    folder.mkdir(parents=True)
    killed, live = folder / ".file.txt.killed.part", folder / ".file.txt.live.part"
    killed.write_bytes(BODY[:70_000])  # a process killed mid-way: no one holds it
    live.write_bytes(BODY[:1_000])
    with open(live, "rb") as writing:  # another process's download, still going: it holds its lock
        fcntl.flock(writing, fcntl.LOCK_EX)
        datasets.fetch(["made-up"])
    assert left_in(cache) == ["made-up/.file.txt.live.part", "made-up/file.txt"]


def test_a_cached_file_is_read_with_no_request(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server)
    (cache / "made-up").mkdir(parents=True)
    (cache / "made-up" / "file.txt").write_bytes(BODY)
    assert datasets.available("made-up")
    assert datasets.fetch(["made-up"]) == [cache / "made-up" / "file.txt"]
    assert datasets.corpus_bytes("made-up") == BODY.upper()
    assert server.requests == []


def test_the_mirror_is_used_before_the_network_and_copied_nowhere(server, places, monkeypatch):
    cache, mirror = places
    register(monkeypatch, server)
    (mirror / "made-up").mkdir()
    (mirror / "made-up" / "file.txt").write_bytes(BODY)
    assert datasets.fetch(["made-up"]) == [mirror / "made-up" / "file.txt"]
    assert datasets.corpus_bytes("made-up") == BODY.upper()
    assert server.requests == [] and left_in(cache) == []


def test_a_mirror_file_of_the_wrong_size_is_not_taken_and_one_of_the_right_size_is_checked(server, places,
                                                                                           monkeypatch):
    _, mirror = places
    corpus = register(monkeypatch, server)
    (mirror / "made-up").mkdir()
    (mirror / "made-up" / "file.txt").write_bytes(BODY[:-1])
    with pytest.raises(datasets.CorpusMissing) as missing:
        datasets.corpus_bytes("made-up")
    assert missing.value.corpus == corpus
    altered = BODY[:-2] + b"?\n"  # the right size, other bytes
    (mirror / "made-up" / "file.txt").write_bytes(altered)
    with pytest.raises(datasets.CorpusMissing, match=f"{mirror}.* not the file its source published.* Replace"):
        datasets.corpus_bytes("made-up")  # said, and offered for download as a missing file is
    (place,) = datasets.fetch(["made-up"])  # a checked copy goes to the cache, which is read first
    assert place.parent.parent == Path(os.environ[datasets.CACHE]) and datasets.corpus_bytes("made-up") == BODY.upper()
    assert (mirror / "made-up" / "file.txt").read_bytes() == altered  # the mirror is not ours to change


def test_a_cached_copy_of_other_bytes_is_removed_and_fetched_again(server, places, monkeypatch):
    """A cache file of the right size and other bytes (a disk error, an edit): the app said it was there and
    then failed on it, and fetch skipped it as present."""
    cache, _ = places
    register(monkeypatch, server)
    (cache / "made-up").mkdir(parents=True)
    (cache / "made-up" / "file.txt").write_bytes(BODY[:-2] + b"?\n")
    with pytest.raises(datasets.CorpusMissing, match="removed from the cache: fetch it again"):
        datasets.corpus_bytes("made-up")
    assert not (cache / "made-up" / "file.txt").exists()
    (cache / "made-up" / "file.txt").write_bytes(BODY[:-2] + b"?\n")
    assert command.main(["fetch", "made-up"]) == 0 and server.requests == ["file.txt"]
    assert datasets.corpus_bytes("made-up") == BODY.upper()


def test_a_download_longer_than_the_file_is_cut_off_and_nothing_kept(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server, served=BODY + b"and more, for ever\n" * 1000)
    with pytest.raises(OSError, match="sent more than its 140,000 bytes"):
        datasets.fetch(["made-up"])
    assert left_in(cache) == []


def test_the_missing_message_says_what_size_source_licence_and_command(server, places, monkeypatch):
    register(monkeypatch, server)
    with pytest.raises(datasets.CorpusMissing) as missing:
        datasets.corpus_bytes("made-up")
    said = str(missing.value)
    for part in ("A made-up corpus", "0.1 MB", "needed for a test", "owner/repository @ 000000000000", "CC0",
                 "python -m engine.datasets fetch made-up", "--from FOLDER"):
        assert part in said, part
    assert isinstance(missing.value, ValueError)  # every page's bad-setting path shows it
    assert server.requests == []  # nothing requested unless asked


def test_a_corpus_deleted_while_running_is_missing_again_but_a_made_cut_stays(server, places, monkeypatch):
    cache, _ = places
    register(monkeypatch, server)
    datasets.fetch(["made-up"])
    assert datasets.corpus_bytes("made-up") == BODY.upper()
    (cache / "made-up" / "file.txt").unlink()
    assert not datasets.available("made-up")
    assert datasets.corpus_bytes("made-up") == BODY.upper()  # made once a process: still there
    datasets.corpus_bytes.cache_clear()  # a new process
    with pytest.raises(datasets.CorpusMissing):
        datasets.corpus_bytes("made-up")


def test_a_cache_under_a_file_cannot_be_written_and_says_what_to_set(server, places, monkeypatch, tmp_path):
    """A folder that cannot be made (a file stands where it would go: refused to root too)."""
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(datasets.CACHE, str(tmp_path / "a-file" / "cache"))
    register(monkeypatch, server)
    with pytest.raises(datasets.NotWritable, match=f"cannot be written .* set {datasets.CACHE}"):
        datasets.fetch(["made-up"])
    assert server.requests == []


def test_fetch_from_a_folder_copies_checked_files_for_a_machine_with_no_network(server, places, monkeypatch,
                                                                                tmp_path):
    cache, _ = places
    register(monkeypatch, server)
    stick = tmp_path / "usb"
    stick.mkdir()
    (stick / "file.txt").write_bytes(BODY)  # by its bare name
    assert command.main(["fetch", "made-up", "--from", str(stick)]) == 0
    assert (cache / "made-up" / "file.txt").read_bytes() == BODY and server.requests == []
    (cache / "made-up" / "file.txt").unlink()
    (stick / "file.txt").write_bytes(OTHER)
    assert command.main(["fetch", "made-up", "--from", str(stick)]) == 1
    assert left_in(cache) == []


def test_the_command_lists_and_refuses_an_unknown_name(places, capsys):
    assert command.main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(f"\n{name}: " in listed for name in datasets.CORPORA)
    with pytest.raises(SystemExit):
        command.main(["fetch", "no-such-corpus"])
    assert "no corpus is called no-such-corpus" in capsys.readouterr().err


# ---------------------------------------------------------------- the registry against the tests' mirror

MIRROR = Path(os.environ.get(datasets.MIRROR, Path(__file__).resolve().parents[3] / "shared" / "data"))


@pytest.mark.parametrize("path", list(registry.FILES))
def test_every_public_file_is_in_the_mirror_as_its_source_published_it(path):
    file = registry.FILES[path]
    data = (MIRROR / path).read_bytes()
    assert len(data) == file.size and hashlib.sha256(data).hexdigest() == file.sha256
    assert file.address == (f"https://raw.githubusercontent.com/{file.repository}/{file.commit}/"
                            f"{file.source_path.replace(' ', '%20')}")


@pytest.mark.parametrize("name", list(registry.CORPORA))
def test_every_cut_is_its_recorded_bytes(name, monkeypatch):
    monkeypatch.setenv(datasets.MIRROR, str(MIRROR))
    corpus = registry.CORPORA[name]
    files = {path: (MIRROR / path).read_bytes() for path in corpus.files}
    made = corpus.cut(files)
    assert len(made) == corpus.size and hashlib.sha256(made).hexdigest() == corpus.sha256
    assert corpus.licence and corpus.attribution and corpus.needed_by
