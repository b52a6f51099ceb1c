"""The pages, grouped the way the course is taught: one file each in app_pages/."""
from __future__ import annotations

import streamlit as st

SECTIONS = {
    "Start": [("app_pages/home.py", "Home", "home", ":material/home:")],
    "Build & train": [("app_pages/build_train.py", "Build & Train", "build", ":material/model_training:")],
    "Look inside": [
        ("app_pages/unroll.py", "Unroll", "unroll", ":material/timeline:"),
        ("app_pages/gates.py", "Gates", "gates", ":material/tune:"),
        ("app_pages/gradients.py", "Gradients", "gradients", ":material/trending_down:"),
        ("app_pages/compare.py", "Compare cells", "compare", ":material/compare_arrows:"),
    ],
}
PATHS = {url_path: path for entries in SECTIONS.values() for path, _, url_path, _ in entries}


def pages() -> dict[str, list[st.Page]]:
    return {
        section: [
            st.Page(path, title=title, url_path=url_path, icon=icon, default=url_path == "home")
            for path, title, url_path, icon in entries
        ]
        for section, entries in SECTIONS.items()
    }
