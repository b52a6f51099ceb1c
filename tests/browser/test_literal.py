"""What anyone can put in front of the app is shown or kept as characters, never run as markup or script.

A link whose key is written as a Markdown link and an image: the browser shows the characters,
with no link to click (not even the bare URL, which GitHub-flavoured Markdown links on its own) and
no image fetched from outside (screenshot: literal-link-projector.png)."""
from urllib.parse import quote, urlparse

from app.session.link import ECHOED
from app.session.store import is_token
from app.widgets.state import OWNER_COOKIE

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


def test_an_owner_cookie_holding_a_script_is_never_run_and_is_replaced(app_page):
    """The owner cookie's value went into the page's script as it came: a cookie planted by a sibling
    site (or anyone on a plain-HTTP network) ran in the app's page and wrote itself back."""
    page = app_page.page
    planted = "x'+(document.title='PWNED')+'"
    page.context.add_cookies([{"name": OWNER_COOKIE, "value": planted, "url": app_page.base_url}])
    app_page.goto("")
    wait_for_app(page)
    assert page.title() != "PWNED"
    [kept] = [c["value"] for c in page.context.cookies(app_page.base_url) if c["name"] == OWNER_COOKIE]
    assert is_token(kept), kept  # a token this app made, set in its place
