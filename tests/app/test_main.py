"""The home page: what Unrolled is, and a button for every lesson."""
from streamlit.testing.v1 import AppTest

from app.session.lessons import LESSONS

from .conftest import MAIN


def test_home_page_offers_every_lesson_with_what_to_do():
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Unrolled"
    text = "\n".join(m.value for m in at.markdown) + "\n".join(c.value for c in at.caption)
    for lesson in LESSONS:
        assert f"**{lesson.title}**" in text and lesson.what_to_do in text
        assert at.button(key=f"lesson.{lesson.key}").label == "Open this lesson"
