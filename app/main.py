"""Unrolled: the router. Pages live in app_pages/, one file each; nav.py groups them."""
import sys
from pathlib import Path

import streamlit as st
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # so pages can `import charts, ui`

import nav  # noqa: E402

# Many students share one server: one thread per training keeps them from crowding each other,
# and for models this small one thread is also the fastest.
torch.set_num_threads(1)

st.set_page_config(page_title="Unrolled", page_icon="app/assets/icon.png", layout="wide")
page = st.navigation(nav.pages())
page.run()
