"""Unrolled: the router. Pages live in app_pages/, one file each; pages.py groups them."""
import sys
from pathlib import Path

# `streamlit run app/main.py` runs this file as a script: the repository's root, which holds the
# packages app, engine and pretrained, is on the import path only under `python -m streamlit`.
ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from pretrained import kernels

# Before torch computes anything: the CPU kernels capped at AVX2 as in the tests, so the figures a
# class sees are the ones the tests assert, on AVX2 and AVX-512 machines alike (pretrained/kernels.py;
# up to 10% slower training on this AVX-512 machine, benchmarks/README section 1).
kernels.pin()

import streamlit as st
import torch

from app import pages
from app.session import memory
from app.session.page_runs import page_run
from app.widgets.class_link import class_room, join, keep_presence
from app.widgets.corpus_needed import corpus_needed, new_page_run
from app.widgets.header import current_lab, tab_token
from app.widgets.no_cells import no_cells_here
from engine import datasets

# Many students share one server: one thread per training keeps them from crowding each other,
# and for models this small one thread is also the fastest.
torch.set_num_threads(1)
# Few malloc arenas, and each experiment counted against the session that made it (app/session/memory.py):
# a process of 20 sessions on the BERT and GPT page reached 5.1 GB with one arena a thread.
memory.tune_allocator()
memory.set_owner(tab_token)  # this session's: every Playback is made in a page run

st.set_page_config(page_title="Unrolled", page_icon="app/assets/icon.png", layout="wide")
# The pages in a bar across the top, a menu per section: in the sidebar, all 17 links (folded,
# "View 4 more", a class could not see the pages a teacher names) pushed Build & Train's settings
# 1000 px down a 768 px projector; up there they leave the sidebar to the settings, and stay when
# presentation mode folds the sidebar away.
page = st.navigation(pages.sections(board=class_room() is not None), position="top")
new_page_run()  # every needed corpus's box drawn once a run
with page_run():  # a playing tick's training, in any session, waits for this run (page_runs.py)
    join(page.url_path)  # a class's student: published to the teacher's board, shown its "follow me"
    try:
        if page.url_path in pages.CELL_PAGES and current_lab().setup.model.arch == "transformer":
            no_cells_here(page.title)
        else:
            page.run()
    except datasets.CorpusMissing as missing:
        # What a page reads of a corpus this machine lacks and did not ask for itself (a model opened from its
        # checkpoint, opened up on samples of its text): what the page drew so far stays, and this says what to get.
        corpus_needed(missing, f"The rest of this page needs it (Unrolled reads it for {missing.corpus.needed_by}).",
                      "page")
    finally:  # also when the page switched or reran: what it opened is what the board shows
        keep_presence(page.url_path)
