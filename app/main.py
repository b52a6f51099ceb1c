"""Unrolled: the router. Pages live in app_pages/, one file each; pages.py groups them."""
import streamlit as st
import torch

from app import pages

# Many students share one server: one thread per training keeps them from crowding each other,
# and for models this small one thread is also the fastest.
torch.set_num_threads(1)

st.set_page_config(page_title="Unrolled", page_icon="app/assets/icon.png", layout="wide")
page = st.navigation(pages.sections())
page.run()
