"""What a user typed, echoed in the app's messages, is shown as literal text: a link key written as
a Markdown link or image is neither clickable nor fetched, and a 100 KB key is not echoed whole."""
import re

from streamlit.testing.v1 import AppTest

from app.widgets.literal import LONGEST, literal

from .conftest import MAIN

PHISHING = "[Session expired: log in again](http://evil.example/login)"
IMAGE = "![x](http://evil.example/pixel.png)"
UNESCAPED_LINK = re.compile(r"(?<!\\)\]\(")  # "](" with no backslash before the bracket: Markdown's link


def test_what_markdown_acts_on_is_escaped_and_long_text_cut():
    zws = "\u200b"  # after a URL's scheme: GitHub-flavoured Markdown links bare URLs even when escaped
    assert literal(PHISHING) == r"\[Session expired\: log in again\](http" + zws + r"\://evil.example/login)"
    assert literal("www.x.org me@x.org") == f"www{zws}.x.org me{zws}@x.org"
    assert literal("$x$ :red[y] <b>`c`\\") == r"\$x\$ \:red\[y\] \<b\>\`c\`\\"
    assert literal("__proto__ *a* ~~b~~") == r"\_\_proto\_\_ \*a\* \~\~b\~\~"  # Markdown shows them as typed
    assert literal("# heading\n- item") == "# heading - item"  # one line: no heading, no list
    cut = literal("k" * 100_000)
    assert cut.startswith("k" * LONGEST) and cut.endswith("(100,000 characters, cut)")


def test_a_link_key_written_as_a_markdown_link_or_image_is_shown_as_text():
    for key in (PHISHING, IMAGE, "k" * 100_000):
        at = AppTest.from_file(MAIN, default_timeout=60)
        at.query_params[key] = "1"
        at.run()
        assert not at.exception
        (warning,) = at.warning
        assert "could not be used" in warning.value and not UNESCAPED_LINK.search(warning.value), warning.value
        assert len(warning.value) < 2_000  # the 100 KB key is cut
