"""The app with no public corpus on the machine (an empty data cache, no mirror): every page opens, the pages that
need a corpus say which (its size, source, licence, the command for an offline machine, a Download button), the
shipped models open and write without theirs, and the button's download, from a loopback server here, brings the
corpus in a background thread after which the page trains; a failed download says why and breaks nothing."""
import dataclasses
import hashlib

import pytest
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session import corpus_downloads, decoding, pretrained
from app.session.class_status import lab_status
from app.session.lab import Lab
from app.session.link import preset_setup
from engine import datasets
from engine.datasets import registry
from tests.corpora import MIRROR, empty_machine
from tests.loopback import Server, serving

from .conftest import MAIN

# What each page needs with no corpus on the machine: its own runs read one (the others need none, or only for a
# model opened from its checkpoint, tested below)
NEEDS = {"bert-gpt": "prose", "embeddings": "prose", "word-vectors": "sentences"}
PAIRS = "tatoeba-eng-fra/fra-eng-2017-09-29.zip"  # the shipped translator's corpus, eng-fra-2017: one file
DOWNLOAD_WAIT = 120  # s at most for a loopback download of 3 MB, on a machine others load


@pytest.fixture
def no_corpora(tmp_path, monkeypatch):
    """No corpus here, and no download of an earlier test in this process's record of downloads."""
    monkeypatch.setattr(corpus_downloads, "DOWNLOADS", {})
    yield from empty_machine(tmp_path, monkeypatch, app=True)


def texts(at: AppTest) -> list[str]:
    """Every markdown, caption, alert and error on the page and in its sidebar."""
    return [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success") for e in at.get(kind)]


def boxes(at: AppTest) -> set[str]:
    """The corpora whose needed-corpus box the page draws (the box names its title and size), each checked for
    what it must say: its size, its source, its licence and the commands for this machine and an offline one."""
    shown = set()
    said = "\n".join(texts(at))
    for name, corpus in datasets.CORPORA.items():
        size = datasets.megabytes(sum(f.size for f in datasets.files_of([name])))
        if f"**{corpus.title}** ({size}) is not on this machine." not in said:
            continue
        shown.add(name)
        assert f"Licence: {corpus.licence}." in said and f"Attribution: {corpus.attribution}." in said
        assert all(f"Source: {f.repository} at commit {f.commit[:12]}" in said or f.repository in said
                   for f in datasets.files_of([name]))
        assert f"`python -m engine.datasets fetch {name}`" in said
        assert f"`python -m engine.datasets fetch {name} --from FOLDER`" in said
        assert any(b.label == f"Download {corpus.title} ({size})" for b in at.button)
    return shown


def no_exception(at: AppTest) -> AppTest:
    assert not at.exception, [e.message for e in at.exception]
    return at


def opened(name: str) -> AppTest:
    """A new session whose Home card of the shipped model `name` was clicked: on the model's own page."""
    at = no_exception(AppTest.from_file(MAIN, default_timeout=60).run())
    return no_exception(at.button(key=f"pretrained.{name}").click().run())


@pytest.mark.parametrize("url", list(nav.PATHS))
def test_every_page_opens_with_no_corpus_and_says_what_it_needs(url, no_corpora):
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    no_exception(at.switch_page(nav.PATHS[url]).run())
    assert boxes(at) == ({NEEDS[url]} if url in NEEDS else set())
    with pytest.raises(datasets.CorpusMissing):  # not a machine with the corpora after all
        datasets.corpus_bytes("prose")


@pytest.mark.parametrize("name", ["charlm-shakespeare-lstm", "charlm-shakespeare-transformer"])
def test_a_shipped_shakespeare_model_opens_on_generate_and_writes_with_no_corpus(name, no_corpora):
    at = opened(name)
    lab = at.session_state["lab"]
    assert at.title[0].value == "Generate text" and lab.origin == name
    assert boxes(at) == {"shakespeare"}
    assert lab.summary()["held-out accuracy"] == "needs Tiny Shakespeare"
    at.text_area(key="gen_prompt").set_value("ROMEO:\n")
    at.number_input(key="gen_length").set_value(60)
    no_exception(at.get("form_submit_button")[0].click().run())
    written = at.session_state["gen_result"].text
    assert written.startswith("ROMEO:\n") and len(written) == 67 and set(written) <= set(lab.task.vocab)


def test_the_shipped_translator_opens_and_translates_what_is_typed_with_no_corpus(no_corpora):
    at = opened("translate-gru")
    lab = at.session_state["lab"]
    assert at.title[0].value == "Encoder-decoder with attention" and lab.origin == "translate-gru"
    assert boxes(at) == {"eng-fra-2017"}
    said = "\n".join(texts(at))
    assert "Licence: CC BY 2.0 (Tatoeba" in said and "tatoeba.org" in said  # the pairs' licence asks it named
    assert at.text_input(key="attention_source_text").value == "Where is the station?"
    greedy = engine.beam_search(lab.model, lab.task.encode("Where is the station?"), width=1).best.tokens
    french = " ".join(decoding.target_words(lab.task)[t] for t in greedy)
    assert lab.task.target_words(greedy) and any(
        f"Free running on your source: the decoder reads its own previous guess and wrote {french}." in text
        for text in texts(at))
    assert any(text.startswith("Beam search keeps the 3 most likely prefixes") for text in texts(at))
    assert all(n.label != "Sample to open up" for n in at.number_input)  # no samples: they are the pairs
    at.text_input(key="attention_source_text").set_value("She is happy.")
    no_exception(at.run())
    assert any("from the source you typed, 'She is happy.'" in text for text in texts(at))


@pytest.mark.parametrize("name", ["masked-lm-prose", "word-lm-prose"])
def test_a_shipped_prose_model_opens_with_no_corpus(name, no_corpora):
    at = opened(name)
    lab = at.session_state["lab"]
    assert at.title[0].value == "Build & Train" and lab.origin == name
    assert boxes(at) == {"prose"}
    for url in ("self-attention", "embeddings", "positions"):  # the pages a word-level transformer goes to
        no_exception(at.switch_page(nav.PATHS[url]).run())


def test_bert_and_gpt_read_the_shipped_models_with_no_corpus(no_corpora):
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    no_exception(at.switch_page(nav.PATHS["bert-gpt"]).run())
    assert boxes(at) == {"prose"}
    said = "\n".join(texts(at))
    for run in ("masked (BERT)", "causal (GPT)"):
        assert f"**{run}** reads:" in said  # each shipped model guesses the hidden word
    assert ("Read by the shipped models (the masked model 32,000 steps of 64 windows, 10,240,000 words predicted and "
            "the causal model 5,000 steps of 64 windows, 10,240,000 words predicted), which need no prose") in said
    assert at.get("plotly_chart")  # the guesses, the attention maps, one word's cosines in two sentences
    # those need no prose; the word's nearest held-out words do, said once more, pointing at the box above
    assert ":material/cloud_download: Four novels of Jane Austen is not on this machine (see above)." in said


@pytest.fixture
def pairs_served(monkeypatch):
    """A loopback server the translator's pairs are downloaded from (their registry entry's address moved to
    it), serving the mirror's bytes: the file its source published."""
    with serving() as server:
        monkeypatch.setitem(registry.FILES, PAIRS, dataclasses.replace(registry.FILES[PAIRS], url=server.url("pairs")))
        server.files["pairs"] = (MIRROR / PAIRS).read_bytes()
        yield server


def download_and_wait(at: AppTest) -> corpus_downloads.Download:
    """Click the page's Download button for the pairs and wait until its thread is done."""
    no_exception(at.button(key="corpus_needed.controls.download").click().run())
    download = corpus_downloads.latest("eng-fra-2017")
    assert download is not None and download.finished.wait(DOWNLOAD_WAIT)
    return download


def test_the_download_button_brings_the_pairs_in_a_thread_and_the_page_then_scores(no_corpora, pairs_served):
    at = opened("translate-gru")
    assert boxes(at) == {"eng-fra-2017"} and pairs_served.requests == []  # nothing asked of the network unasked
    download = download_and_wait(at)
    assert download.error is None and download.fraction == 1.0 and download.total == 2_951_390
    assert (no_corpora / PAIRS).read_bytes() == (MIRROR / PAIRS).read_bytes()  # checked, into the cache
    no_exception(at.run())
    assert boxes(at) == set()
    assert any(n.label == "Sample to open up" for n in at.number_input)  # samples of the pairs now
    lab = at.session_state["lab"]
    assert lab.corpus_missing is None and lab.held_out.log.last["step"] == 0  # scored on the held-out pairs
    assert not lab.trainable and any("does not train" in text for text in texts(at))  # 12 M weights: it reads
    no_exception(at.button(key="open_preset").click().run())  # the preset's translator reads the 5,000 pairs:
    assert boxes(at) == {"eng-fra-5000"} and at.session_state["lab"] is lab  # asked for, the translator kept
    assert pairs_served.requests == ["pairs"]


def test_a_failed_download_says_why_and_what_to_run_and_the_page_works_on(no_corpora, pairs_served):
    served = (MIRROR / PAIRS).read_bytes()
    pairs_served.files["pairs"] = served[:-10] + b"0123456789"  # the right size, not the published bytes
    at = opened("translate-gru")
    download = download_and_wait(at)
    assert "is not the file its source published" in download.error
    no_exception(at.run())
    failed = [e.value for e in at.error]
    assert len(failed) == 1
    assert "The download of Tatoeba English-French of 2017-09-29 (142,787 pairs) failed" in failed[0]
    assert hashlib.sha256(served).hexdigest() in failed[0]
    assert boxes(at) == {"eng-fra-2017"}  # the button to try again, and the commands
    assert not (no_corpora / PAIRS).exists()
    assert any(text.startswith("Beam search keeps") for text in texts(at))  # the typed translation still drawn


def test_one_download_a_corpus_at_a_time_shared_by_every_session(no_corpora, pairs_served):
    pairs_served.gate.clear()  # the server holds its answer until the second ask
    first = corpus_downloads.start("eng-fra-2017")
    second = corpus_downloads.start("eng-fra-2017")
    assert second is first and first.running
    pairs_served.gate.set()
    assert first.finished.wait(DOWNLOAD_WAIT) and first.error is None
    assert pairs_served.requests == ["pairs"]
    # One a corpus is one a file: no file is any two corpora's
    owners = [path for corpus in datasets.CORPORA.values() for path in corpus.files]
    assert len(owners) == len(set(owners))


def test_a_lab_opens_a_shipped_model_before_its_corpus_and_trains_once_it_is_here(no_corpora, monkeypatch):
    card = pretrained.named("charlm-shakespeare-lstm")
    model, _ = pretrained.load(pretrained.read(card.name))
    lab = Lab(preset_setup("adding"))
    lab.install(pretrained.setup_for(card), None, model, origin=card.name)
    assert lab.corpus_missing.corpus.name == "shakespeare"
    with pytest.raises(datasets.CorpusMissing), lab.lock:
        lab.advance()
    assert lab.trainer.steps_done == 0
    assert lab.summary()["held-out accuracy"] == "needs Tiny Shakespeare"
    status = lab_status(lab)  # the class board reads it too, from its own thread
    assert status["steps"] == 0 and status["loss"] is None
    monkeypatch.setenv(datasets.MIRROR, str(MIRROR))  # the corpus arrives
    assert lab.corpus_missing is None
    with lab.lock:
        assert lab.advance()
    assert [row["step"] for row in lab.held_out.log.rows()] == [0]  # scored from the step it was opened at
    assert lab.trainer.steps_done == 1
    assert lab.summary()["held-out accuracy"].endswith(f"(step {lab.shipped_steps:,}, as shipped)")


def test_a_checkpoint_of_a_corpus_task_uploaded_with_no_corpus_opens_on_its_header(no_corpora):
    lab = Lab(preset_setup("adding"))
    lab.load_model(pretrained.read("translate-gru"))  # as Build & Train's "Save or load the model" hands it
    assert lab.setup.task == "translate" and lab.task.target_vocab == lab.model.target_vocab
    assert lab.corpus_missing.corpus.name == "eng-fra-2017"
    before = engine.from_bytes(pretrained.read("translate-gru"))
    before.target_vocab = None  # saved before checkpoints carried a translator's French words
    other = Lab(preset_setup("adding"))
    with pytest.raises(ValueError, match="no French vocabulary in its header"):
        other.load_model(engine.to_bytes(before))
    assert other.setup.task == "adding"  # the model it had


def test_a_lesson_on_a_corpus_this_machine_lacks_opens_its_page_and_says_what_to_download(no_corpora):
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    no_exception(at.button(key="lesson.pretrained-embeddings").click().run())
    assert at.title[0].value == "Pretrained embeddings" and at.session_state["lesson"] == "pretrained-embeddings"
    assert boxes(at) == {"sentences"}
    said = "\n".join(texts(at))
    assert "The lesson “Pretrained word vectors: fewer labels needed” trains on it" in said
    assert "Kotzias et al." in said and "CC BY 4.0" in said  # the sentences' paper and licence, as it asks
    assert at.session_state["lab"].setup.task == "adding"  # the model you had


def test_a_link_to_a_model_on_a_corpus_this_machine_lacks_starts_the_defaults_and_says_what_to_download(no_corpora):
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["task"], at.query_params["corpus"] = "charlm", "shakespeare"
    no_exception(at.run())
    assert at.session_state["lab"].setup.task == "adding"
    assert boxes(at) == {"shakespeare"}
    assert any("This link's model trains on it" in text for text in texts(at))
    no_exception(at.button(key="corpus_needed.asked.shakespeare.dismiss").click().run())
    assert boxes(at) == set()  # "Not now"


def test_picking_a_corpus_this_machine_lacks_on_build_and_train_says_so_and_keeps_the_model(no_corpora):
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["task"], at.query_params["hidden_size"] = "charlm", "16"
    no_exception(at.run().switch_page(nav.PATHS["build"]).run())
    assert boxes(at) == set()  # Python's own source is shipped
    no_exception(at.radio(key="form.task.corpus").set_value("shakespeare").run())
    assert boxes(at) == {"shakespeare"}
    assert any("The task as set here reads it" in text for text in texts(at))
    assert at.session_state["lab"].task.corpus == "python"  # the model you had


def test_a_download_with_no_network_or_no_writable_cache_ends_saying_why(no_corpora, monkeypatch, tmp_path):
    closed = Server()  # a port nobody answers on once closed: the machine's network refuses
    url = closed.url("pairs")
    closed.server_close()
    monkeypatch.setitem(registry.FILES, PAIRS, dataclasses.replace(registry.FILES[PAIRS], url=url))
    refused = corpus_downloads.start("eng-fra-2017")
    assert refused.finished.wait(DOWNLOAD_WAIT) and refused.failed
    assert "refused" in refused.error.lower()
    occupied = tmp_path / "a file, not a folder"
    occupied.write_text("")
    monkeypatch.setenv(datasets.CACHE, str(occupied))
    unwritable = corpus_downloads.start("eng-fra-2017")  # a new download after the failed one: asked again
    assert unwritable is not refused and unwritable.finished.wait(DOWNLOAD_WAIT) and unwritable.failed
    assert f"the data cache {occupied} cannot be written" in unwritable.error
    assert "set UNROLLED_DATA to a folder you may write" in unwritable.error
