"""Nothing the app shows comes from outside the machine: every request stays on the app's own host.

Each page of the app (from the navigation message, as in test_pages.py) is opened in a real chromium
while every request of the browser context is recorded: page loads, scripts, styles, fonts, images,
the favicon, fetches and websockets. Each must go to the server's own host and port (127.0.0.1:port)
or be a data:/blob: URL, so the app works on a machine with no network (a classroom server, a
laptop offline). The page icon must be the shipped image served by the app, and the page menu's
material icons must be drawn with the icon font served by the app.
"""
from urllib.parse import urlsplit

import pytest

LOCAL_SCHEMES = {"data", "blob", "about"}
# The favicon Streamlit puts in the document's head (it replaces the default one).
FAVICON = 'link[rel="icon"], link[rel="shortcut icon"]'
# Icons in the page menu (st.Page(icon=":material/...:")), drawn as ligatures of an icon font: in the
# menu bar's section menus, drawn once a menu opens (app/main.py).
NAV_ICONS = '[data-testid="stTopNavDropdownLink"] [data-testid="stIconMaterial"]'
ICON_FONT = "Material Symbols Rounded"


class RequestLog:
    """Every request and websocket a browser context opens, with the page path it was opened from."""

    def __init__(self, context, page):
        self.page = page
        self.requests: list[tuple[str, str, str]] = []  # (page path, resource type, url)
        context.on("request", self._on_request)
        page.on("websocket", self._on_websocket)

    def _where(self) -> str:
        return urlsplit(self.page.url).path or "/"

    def _on_request(self, request) -> None:
        self.requests.append((self._where(), request.resource_type, request.url))

    def _on_websocket(self, ws) -> None:
        self.requests.append((self._where(), "websocket", ws.url))

    def outside(self, host: str, first: int = 0) -> list[tuple[str, str, str]]:
        """The requests since number `first` that go anywhere but `host` (host:port) and are no
        data:/blob: URL."""
        return [
            r for r in self.requests[first:]
            if urlsplit(r[2]).scheme not in LOCAL_SCHEMES and urlsplit(r[2]).netloc != host
        ]


def _listing(requests) -> str:
    return "\n".join(f"  {where:<12} {kind:<10} {url}" for where, kind, url in requests)


@pytest.fixture
def logged_page(app_page):
    """app_page with a RequestLog attached before it opens anything."""
    return app_page, RequestLog(app_page.page.context, app_page.page)


def test_every_page_requests_only_the_apps_own_host(logged_page, app_url, subtests):
    app_page, log = logged_page
    host = urlsplit(app_url).netloc
    app_page.goto()
    pages = [p for p in app_page.navigation().app_pages if not p.external_url]
    assert pages, "the app's navigation has no pages"

    for page in pages:
        with subtests.test(msg=page.page_name, url_path=page.url_pathname or "/"):
            first = len(log.requests)
            app_page.goto(page.url_pathname)  # run, and drawn: its figures, images and fonts (settle)
            # What is drawn has asked for all it needs; what could still come late (a chunk of script,
            # a map tile) would keep the network busy, and this load state waits until none is in
            # flight and none was for half a second (Playwright's networkidle; the websocket is left out).
            app_page.page.wait_for_load_state("networkidle")
            made = log.requests[first:]
            assert made, f"/{page.url_pathname}: the browser made no request at all (is the log attached?)"
            outside = log.outside(host, first)
            assert not outside, (
                f"/{page.url_pathname} made {len(outside)} of its {len(made)} requests outside {host}:\n"
                f"{_listing(outside)}"
            )

    # Across the whole visit, too (a late request lands after its page's check).
    outside = log.outside(host)
    assert not outside, f"{len(outside)} request(s) outside {host}:\n{_listing(outside)}"


def test_page_icon_is_the_shipped_image_served_by_the_app(logged_page, app_url):
    app_page, log = logged_page
    host = urlsplit(app_url).netloc
    app_page.goto()
    hrefs = app_page.page.eval_on_selector_all(FAVICON, "els => els.map(e => e.href)")
    assert hrefs, f"the page has no favicon link ({FAVICON})"
    for href in hrefs:
        assert urlsplit(href).netloc == host, f"the favicon comes from outside {host}: {href}"
        response = app_page.page.request.get(href)
        assert response.ok, f"the favicon {href} answered {response.status}"
        assert response.headers.get("content-type", "").startswith("image/png"), (
            f"the favicon {href} is {response.headers.get('content-type')!r}, not the shipped PNG"
        )
        assert response.body()[:8] == b"\x89PNG\r\n\x1a\n", f"the favicon {href} is no PNG"
    outside = log.outside(host)
    assert not outside, f"{len(outside)} request(s) outside {host}:\n{_listing(outside)}"


def test_menu_icons_use_the_icon_font_served_by_the_app(logged_page, app_url):
    app_page, log = logged_page
    host = urlsplit(app_url).netloc
    app_page.goto()
    page = app_page.page
    page.locator('[data-testid="stTopNavSection"]').first.click()
    icons = page.locator(NAV_ICONS)
    icons.first.wait_for()
    assert icons.count() > 0, f"no material icon in the page menu ({NAV_ICONS})"
    page.evaluate("() => document.fonts.ready")
    families = set(page.eval_on_selector_all(
        NAV_ICONS, "els => els.map(e => getComputedStyle(e).fontFamily)"))
    assert all(ICON_FONT in f for f in families), f"menu icons drawn in {families}, not {ICON_FONT!r}"
    loaded = page.evaluate(
        "family => [...document.fonts].filter(f => f.family.replaceAll('\"', '') === family)"
        ".map(f => f.status)", ICON_FONT)
    assert "loaded" in loaded, f"the font {ICON_FONT!r} did not load (font faces: {loaded})"

    font_requests = [r for r in log.requests if r[1] == "font"]
    icon_font = [r for r in font_requests if "MaterialSymbols" in r[2]]
    assert icon_font, f"no request for the icon font; the fonts requested:\n{_listing(font_requests)}"
    assert all(urlsplit(url).netloc == host for _, _, url in icon_font), (
        f"the icon font does not come from {host}:\n{_listing(icon_font)}"
    )
