"""The served app's safety settings (.streamlit/config.toml, read by `streamlit run` from the
repository's root, as the README and the browser tests start it)."""
import tomllib
from pathlib import Path

from engine.tasks.review_csv import MAX_CSV_CHARS
from engine.torch_import import MAX_BYTES

CONFIG = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())


def test_no_traceback_reaches_the_browser_and_xsrf_protection_stays_on():
    assert CONFIG["client"]["showErrorDetails"] == "none"
    assert CONFIG["server"].get("enableXsrfProtection", True) is True


def test_the_upload_cap_holds_the_largest_file_a_page_reads_and_no_more():
    cap = CONFIG["server"]["maxUploadSize"] * 2**20  # bytes
    assert MAX_BYTES <= cap and MAX_CSV_CHARS <= cap < 2 * MAX_CSV_CHARS
