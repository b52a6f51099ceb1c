"""Nothing the app shows comes from outside the machine: every request stays on the app's own host, and the
app works with none of the public corpora on the machine.

Each page of the app (from the navigation message, as in test_pages.py) is opened in a real chromium
while every request of the browser context is recorded: page loads, scripts, styles, fonts, images,
the favicon, fetches and websockets. Each must go to the server's own host and port (127.0.0.1:port)
or be a data:/blob: URL, so the app works on a machine with no network (a classroom server, a
laptop offline). The page icon must be the shipped image served by the app, and the page menu's
material icons must be drawn with the icon font served by the app.

This module's server runs as on a machine that has never fetched a corpus: an empty data cache and no
mirror (engine.datasets). Every page opens; the pages whose own runs read a corpus say which one, with its
size and the command for an offline machine; the shipped models of corpus tasks open and write without
theirs (screenshots: offline-<page>-<size>.png, at a projector's 1024x768 and at 1400 wide).
"""
from urllib.parse import urlsplit

import pytest

from engine import datasets
from engine.tasks.translate import LARGE, TYPED_EXAMPLES

from .conftest import ARTIFACTS, _free_port, streamlit_server, wait_for_app

LOCAL_SCHEMES = {"data", "blob", "about"}
# The favicon Streamlit puts in the document's head (it replaces the default one).
FAVICON = 'link[rel="icon"], link[rel="shortcut icon"]'
# Icons in the page menu (st.Page(icon=":material/...:")), drawn as ligatures of an icon font: in the
# menu bar's section menus, drawn once a menu opens (app/main.py).
NAV_ICONS = '[data-testid="stTopNavDropdownLink"] [data-testid="stIconMaterial"]'
ICON_FONT = "Material Symbols Rounded"
SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}
# The pages whose own runs read a public corpus, with it: each says so on a machine without it
NEEDS = {"bert-gpt": "prose", "embeddings": "prose", "word-vectors": "sentences"}
# A shipped model of a task that reads a corpus, the title on its card, and the page it opens on
SHIPPED = {"charlm-shakespeare-lstm": ("Char-LSTM on Tiny Shakespeare", "Generate text"),
           "translate-gru": ("English-to-French translator with attention", "Encoder-decoder with attention")}


def needs_said(text: str) -> set[str]:
    """The corpora a page's text says it needs and this machine lacks, each with its size and the commands."""
    said = set()
    for name, corpus in datasets.CORPORA.items():
        size = datasets.megabytes(sum(f.size for f in datasets.files_of([name])))
        if f"{corpus.title} ({size}) is not on this machine." in text:
            assert f"python -m engine.datasets fetch {name} --from FOLDER" in text, name
            said.add(name)
    return said


def screenshots(app_page, name: str) -> None:
    """The page at a projector's 1024x768 and at 1400 wide: offline-<name>-<size>.png."""
    for size, viewport in SIZES.items():
        app_page.page.set_viewport_size(viewport)
        wait_for_app(app_page.page)
        app_page.screenshot(f"offline-{name}-{size}")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """This module's own `streamlit run app/main.py`, with an empty data cache of its own and no mirror: a
    machine that never fetched a corpus (the tests' session server reads the mirror, ../shared/data)."""
    port = _free_port()
    cache = tmp_path_factory.mktemp("empty-data-cache")
    with streamlit_server(port, ARTIFACTS / "streamlit-offline-server.log",
                          env={datasets.CACHE: str(cache), datasets.MIRROR: None}):
        yield f"http://127.0.0.1:{port}"
    assert not any(cache.iterdir()), "a corpus was fetched, though no one asked"


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
            # With no corpus on the machine, a page whose runs read one says which, and no other page asks
            main = app_page.page.locator('[data-testid="stMain"]').inner_text()
            assert needs_said(main) == ({NEEDS[page.url_pathname]} if page.url_pathname in NEEDS else set())
            if page.url_pathname in NEEDS:
                screenshots(app_page, page.url_pathname)

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


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_of_a_corpus_task_opens_and_writes_with_no_corpus(app_page, name):
    title, opens_on = SHIPPED[name]
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto()  # Home
    card = page.locator('[data-testid="stVerticalBlock"]', has_text=title).last
    card.get_by_role("button", name="Open it").click()
    page.get_by_role("heading", name=opens_on).wait_for(timeout=60_000)
    wait_for_app(page)
    assert name in page.locator('[data-testid="stSidebar"]').inner_text()
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert needs_said(main) == {"shakespeare" if "shakespeare" in name else "eng-fra-2017"}
    if opens_on == "Generate text":
        page.get_by_role("textbox", name="Prompt").fill("ROMEO:\n")
        page.get_by_role("button", name="Generate").click()
        wait_for_app(page)
        assert "What it wrote" in page.locator('[data-testid="stMain"]').inner_text()
    else:  # the sentence it opens with, translated: its alignment drawn over its words
        assert "Licence: CC BY 2.0 (Tatoeba" in main and "tatoeba.org" in main
        opening_word = TYPED_EXAMPLES[LARGE].split()[-1].strip("?.!")  # "station"
        assert page.locator("svg text", has_text=opening_word).count() > 0
    screenshots(app_page, name)
