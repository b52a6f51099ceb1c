"""A link whose key is written as a Markdown link and an image: the browser shows the characters,
with no link to click (not even the bare URL, which GitHub-flavoured Markdown links on its own) and
no image fetched from outside (screenshot: literal-link-projector.png)."""
from urllib.parse import quote, urlparse

from app.session.link import ECHOED

from .conftest import wait_for_app

KEY = "[Session expired: log in again](http://evil.example/login) ![x](http://evil.example/pixel.png)"


def test_a_markdown_link_in_a_link_key_is_shown_as_text(app_page):
    page = app_page.page
    page.set_viewport_size({"width": 1024, "height": 768})
    fetched = []
    page.on("request", lambda request: fetched.append(request.url) if urlparse(request.url).hostname == "evil.example"
            else None)
    app_page.goto(f"?{quote(KEY)}=1")
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlert"]', has_text="could not be used")
    shown = alert.inner_text().replace("\u200b", "")  # zero-width spaces keep a bare URL from being linked
    # every character as typed, up to where a long key is cut, and how long it was
    assert KEY[:ECHOED] in shown and f"({len(KEY)} characters)" in shown, shown
    links = alert.locator("a").evaluate_all("els => els.map(e => e.outerHTML)")
    assert links == [] and alert.locator("img").count() == 0, links
    assert fetched == []
    app_page.screenshot("literal-link-projector")
