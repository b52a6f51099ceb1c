"""Unrolled: the router. Pages live in app_pages/, one file each."""
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))  # so pages can `import charts, ui`

from app_pages import home  # noqa: E402

st.set_page_config(page_title="Unrolled", page_icon="🔁", layout="wide")
page = st.navigation([st.Page(home.run, title="Home", icon="🏠", url_path="home", default=True)])
page.run()
