"""What a part of a page needs and this machine lacks: a public corpus (engine.datasets), named with its size,
source and licence, a button that downloads it while the page stays usable, and the command for a machine
with no network. One widget for every page; the downloads themselves live in app/session/corpus_downloads.py,
shared by every session of the process.

Nothing is requested from outside the machine until the button is clicked. While a download runs, a fragment
polls it every POLL_SECONDS and shows its progress; once it is done (or failed) the fragment reruns the whole
page, which then reads the corpus (or says why not), and, no longer downloading, has no fragment to poll.
"""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.session import corpus_downloads
from app.widgets.literal import literal
from engine import datasets

POLL_SECONDS = 0.5  # a download of a few MB moves visibly in half a second; a class of 60 polls 120 times a second
# The corpora whose box this page run drew (reset by app/main.py each run): a second part of the page that needs
# the same corpus refers to it instead of drawing it again.
DRAWN = "corpus_needed_drawn"
# What the student asked for that needs a corpus this machine lacks (a lesson, a model to open): corpus name -> a
# sentence saying so, drawn at the top of every page (asked_for) until the corpus is here or they dismiss it.
ASKED = "corpus_needed_asked"


def new_page_run() -> None:
    st.session_state[DRAWN] = set()


def ask(missing: datasets.CorpusMissing, why: str) -> None:
    """Remember that what the student just asked for needs this corpus: a click's own run ends (a page switch,
    a rerun) before it could show the box, so every page shows it at its top (asked_for) until it is here."""
    st.session_state.setdefault(ASKED, {})[missing.corpus.name] = why


def asked_for() -> None:
    """The boxes of the corpora the student asked for that are still not on this machine (page_header)."""
    asked = st.session_state.get(ASKED, {})
    for name, why in list(asked.items()):
        absent = datasets.missing_files(name)
        if not absent:
            del asked[name]
            continue
        corpus_needed(datasets.CorpusMissing(datasets.CORPORA[name], absent), why, f"asked.{name}",
                      dismiss=lambda name=name: asked.pop(name, None))


def size_of(missing: datasets.CorpusMissing) -> str:
    """The megabytes still to download: the files this machine lacks (all of the corpus, or what is left)."""
    return datasets.megabytes(sum(f.size for f in missing.absent))


def sources_of(missing: datasets.CorpusMissing) -> str:
    """Where the files come from: each public repository at the commit pinned for it."""
    return ", ".join(dict.fromkeys(f"{f.repository} at commit {f.commit[:12]}" for f in missing.absent))


def corpus_needed(missing: datasets.CorpusMissing, why: str, key: str, dismiss: Callable[[], object] | None = None
                  ) -> None:
    """The corpus `missing` names, in a bordered box: `why` says what on this page needs it (a sentence: "Training
    this model and its held-out score need it."); then its size, source, licence and attribution, the Download
    button (or the download's progress, or why it failed), and the offline command. `key` tells apart the boxes
    of one page; `dismiss`, if given, is what a "Not now" button beside Download does."""
    corpus = missing.corpus
    drawn = st.session_state.setdefault(DRAWN, set())
    if corpus.name in drawn:
        st.caption(f":material/cloud_download: {corpus.title} is not on this machine (see above). {why}")
        return
    drawn.add(corpus.name)
    size = size_of(missing)
    with st.container(border=True, key=f"corpus_needed.{key}"):
        st.markdown(f":material/cloud_download: **{corpus.title}** ({size}) is not on this machine. {why}")
        st.caption(f"Source: {sources_of(missing)}. Licence: {corpus.licence}. Attribution: {corpus.attribution}.")
        download = corpus_downloads.latest(corpus.name)
        if download is not None and download.running:
            arriving(corpus.name, corpus.title)
        else:
            if download is not None and download.failed:
                st.error(f"The download of {corpus.title} failed, and nothing of the file that failed was kept: "
                         f"{literal(download.error, 1000)}. Try again, or fetch it from a terminal as below.",
                         icon=":material/error:")
            buttons = st.container(horizontal=True)
            buttons.button(f"Download {corpus.title} ({size})", key=f"corpus_needed.{key}.download", type="primary",
                           icon=":material/download:", on_click=corpus_downloads.start, args=(corpus.name,),
                           help=f"into this machine's data cache, {datasets.cache_dir()}; every page that needs it "
                                "then reads it from there")
            if dismiss is not None:
                buttons.button("Not now", key=f"corpus_needed.{key}.dismiss", icon=":material/close:",
                               on_click=dismiss, help="hide this until you ask for it again")
        command = datasets.fetch_command([corpus.name])
        st.caption(f"From a terminal, in Unrolled's folder: `{command}`. On a machine with no network, copy the files "
                   f"from one that has them (its data cache) to a folder here and run `{command} --from FOLDER`.")


@st.fragment(run_every=POLL_SECONDS)
def arriving(name: str, title: str) -> None:
    """The download's progress; once it is done or failed, the whole page runs again, which draws the page
    with the corpus (or the reason it failed) and no longer calls this fragment: the polling stops."""
    download = corpus_downloads.latest(name)
    if download is None or not download.running:
        st.rerun()
    st.progress(download.fraction, text=f"Downloading {title}: {download.done_bytes / 1e6:.1f} of "
                                        f"{download.total / 1e6:.1f} MB. The rest of the page works meanwhile.")
