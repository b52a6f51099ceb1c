"""The navigation: the pages grouped the way the course is taught, one file each in app_pages/."""
from __future__ import annotations

import streamlit as st

SECTIONS = {
    "Start": [
        ("app_pages/start/home.py", "Home", "home", ":material/home:"),
        ("app_pages/start/build_train.py", "Build & Train", "build", ":material/model_training:"),
    ],
    "Recurrent networks": [
        ("app_pages/recurrent/unroll.py", "Unroll", "unroll", ":material/timeline:"),
        ("app_pages/recurrent/gates.py", "Gates", "gates", ":material/tune:"),
        ("app_pages/recurrent/gradients.py", "Gradients", "gradients", ":material/trending_down:"),
        ("app_pages/recurrent/compare.py", "Compare cells", "compare", ":material/compare_arrows:"),
        ("app_pages/recurrent/rtrl.py", "BPTT and RTRL", "rtrl", ":material/sync_alt:"),
    ],
    "Attention": [
        ("app_pages/attention/encoder_decoder.py", "Encoder-decoder", "attention", ":material/join_inner:"),
    ],
    "Transformers": [
        ("app_pages/transformer/positions.py", "Positional encoding", "positions", ":material/waves:"),
        ("app_pages/transformer/self_attention.py", "Self-attention", "self-attention", ":material/grid_on:"),
        ("app_pages/transformer/scaling.py", "Why √d_k", "scaling", ":material/functions:"),
        ("app_pages/transformer/compare_architectures.py", "Compare architectures", "architectures",
         ":material/leaderboard:"),
        ("app_pages/transformer/bert_gpt.py", "BERT and GPT", "bert-gpt", ":material/text_fields:"),
    ],
    "Language models": [
        ("app_pages/language/embeddings.py", "Embeddings", "embeddings", ":material/scatter_plot:"),
        ("app_pages/language/word_vectors.py", "Pretrained embeddings", "word-vectors", ":material/input:"),
        ("app_pages/language/generate.py", "Generate text", "generate", ":material/edit_note:"),
        ("app_pages/language/transfer.py", "Transfer learning", "transfer", ":material/move_up:"),
    ],
}
# The teacher's board: a page only on a server that holds a class (a teacher key is set), and never in the
# menu, where it would invite a class to guess the key: the teacher opens it by the link serve_class.py prints.
BOARD = ("app_pages/start/board.py", "Teacher's board", "board", ":material/co_present:")
PATHS = {url_path: path for entries in SECTIONS.values() for path, _, url_path, _ in entries}
# Pages that open a recurrent network's cells up, which a transformer has none of (Compare cells
# trains its own cells on the task, whatever the model is).
CELL_PAGES = ("unroll", "gates", "gradients")


def sections(board: bool = False) -> dict[str, list[st.Page]]:
    """The menu's sections of pages; with the teacher's board, hidden, when `board`."""
    listed = {
        section: [
            st.Page(path, title=title, url_path=url_path, icon=icon, default=url_path == "home")
            for path, title, url_path, icon in entries
        ]
        for section, entries in SECTIONS.items()
    }
    if board:
        path, title, url_path, icon = BOARD
        listed["Start"].append(st.Page(path, title=title, url_path=url_path, icon=icon, visibility="hidden"))
    return listed
