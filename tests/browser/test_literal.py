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


def test_emphasis_and_colour_directives_in_a_link_are_shown_as_typed(app_page):
    """`__proto__` showed as a bold "proto", and a `:red` prefix disappeared from echoed values."""
    app_page.goto("?__proto__=1&hidden_size=%3Ared%5Bx%5D%20~~y~~")
    alert = app_page.page.locator('[data-testid="stAlert"]', has_text="could not be used")
    shown = alert.inner_text()
    assert "(__proto__ is not a setting" in shown and "':red[x] ~~y~~'" in shown, shown
    assert alert.locator("strong, em, del").count() == 0


def test_a_link_over_streamlits_parameter_limit_is_said_not_dropped_silently(app_page):
    """Streamlit reads no query string of over 1,000 parameters: the page opened with the defaults
    and said nothing. The page's script sees the address it was opened with and says so."""
    app_page.page.goto(f"{app_page.base_url}/build?" + "&".join(f"k{i}=1" for i in range(1001)))
    alert = app_page.page.locator('[data-testid="stAlert"]', has_text="The link you opened held 1,001 parameters")
    alert.wait_for(timeout=30_000)
    assert "none of its settings were used" in alert.inner_text()
    assert "link_dropped" not in app_page.page.url  # the page's own link replaced it
