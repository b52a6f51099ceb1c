"""Every page of the app, opened in a real chromium by its URL, runs without an exception.

The pages come from the app itself: the navigation message Streamlit sends the browser (the list
that st.navigation draws as the sidebar or top menu, and the only list while the app has a single
page, when no menu is drawn). A page added to st.navigation is picked up without editing this test.
Each page is opened once, at a projector's 1024x768, then the window is widened to 1400 (the page's
script never sees the window, so opening it again would only run the same script again); its
full-page screenshots land in tests/artifacts/screenshots/<url path, or 'home'>-<size>.png: look at them.
1280x720, once shot too, lies between the two with no layout change of Streamlit's in between (its
breakpoints are 576, 640 and 768 px wide) and full-page shots ignore the height, so it showed nothing new.
"""
import re
from urllib.parse import urlsplit

from .conftest import wait_for_app

# Links of the page menu where st.navigation draws it: the sidebar, or the top bar. Pages folded
# into a collapsed menu are not in the DOM, so this only checks the links that are drawn.
NAV_LINKS = '[data-testid="stSidebarNav"] a[href], [data-testid="stTopNavLink"][href]'
SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}


def _url_path(href: str) -> str:
    return urlsplit(href).path.strip("/")


def _screenshot_name(url_path: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", url_path) or "home"


def test_every_page_renders_without_exception(app_page, subtests):
    app_page.goto()
    nav = app_page.navigation()
    pages = [p for p in nav.app_pages if not p.external_url]
    assert pages, "the app's navigation has no pages"
    by_path = {p.url_pathname: p for p in pages}
    assert len(by_path) == len(pages), f"two pages share a URL: {[p.url_pathname for p in pages]}"

    # Whatever menu is drawn links only to those pages (none is drawn for a single page).
    for href in app_page.page.eval_on_selector_all(NAV_LINKS, "els => els.map(e => e.href)"):
        assert _url_path(href) in by_path, f"the menu links to {href}, which is no page of the app"

    for page in pages:
        with subtests.test(msg=page.page_name, url_path=page.url_pathname or "/"):
            sizes = iter(SIZES.items())
            size, viewport = next(sizes)
            app_page.page.set_viewport_size(viewport)
            try:
                app_page.goto(page.url_pathname)
            finally:  # the picture is most useful when the page failed
                app_page.screenshot(f"{_screenshot_name(page.url_pathname)}-{size}")
            assert not app_page.of_type("page_not_found"), f"/{page.url_pathname}: page not found"
            shown = app_page.navigation().page_script_hash
            assert shown == page.page_script_hash, (
                f"/{page.url_pathname} showed another page than {page.page_name!r}"
            )
            assert _url_path(app_page.page.url) == page.url_pathname, app_page.page.url
            for size, viewport in sizes:
                app_page.page.set_viewport_size(viewport)
                wait_for_app(app_page.page)  # the figures redraw at the new width
                app_page.screenshot(f"{_screenshot_name(page.url_pathname)}-{size}")


def test_wait_for_app_reports_an_exception(app_page):
    """The exception check itself: a page that shows an stException must fail it."""
    app_page.goto()
    app_page.page.evaluate(
        """() => {
            const el = document.createElement('div');
            el.setAttribute('data-testid', 'stException');
            el.innerText = 'ValueError: planted by the test';
            document.body.appendChild(el);  // outside React's tree, so no re-render removes it
        }"""
    )
    try:
        wait_for_app(app_page.page)
    except AssertionError as e:
        assert "planted by the test" in str(e)
    else:
        raise AssertionError("wait_for_app did not notice the exception on the page")
