"""Unroll in a real browser: the time slider moves the framed step, and Play walks through time."""
import re

from .conftest import assert_stays_paused, open_from_menu, wait_for_app

STEP = re.compile(r"At step t = (\d+) the network reads")


def shown_step(page) -> int:
    return int(STEP.search(page.locator('[data-testid="stMain"]').inner_text()).group(1))


def test_time_slider_and_play(app_page):
    sockets = []
    app_page.page.on("websocket", lambda socket: sockets.append(socket))
    app_page.goto("build")
    page = app_page.page
    page.get_by_role("button", name="Step", exact=True).click()  # a model that has trained, as in class
    wait_for_app(page)
    open_from_menu(page, "Recurrent networks", "Unroll")  # the same session
    page.wait_for_url("**/unroll*")
    wait_for_app(page)
    assert "steps trained: 1" in page.locator('[data-testid="stSidebar"]').inner_text()
    assert shown_step(page) == 0
    app_page.screenshot("unroll-t0")

    for step in range(1, 6):  # one key at a time: a rerun landing mid-burst would reset the thumb
        page.get_by_role("slider").first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            f"() => /At step t = {step} the network reads/"
            ".test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
            timeout=30_000,
        )
    wait_for_app(page)
    assert shown_step(page) == 5
    app_page.screenshot("unroll-t5")

    page.get_by_role("button", name="Play through time").click()
    page.wait_for_function(  # the fragment steps t on its own
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]').innerText"
        ".match(/At step t = (\\d+) the network reads/); return m && parseInt(m[1]) >= 8; }",
        timeout=30_000,
    )
    page.get_by_role("button", name="Pause", exact=True).click()
    assert_stays_paused(app_page, sockets[-1], "Play through time", shown_step)


SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}
LINKS = {  # what a student opens: padded reviews, a GRU's gates, a two-way peephole LSTM's
    "unroll-sentiment": "unroll?task=sentiment&hidden_size=16",
    "unroll-bilstm": "unroll?task=reverse&bidirectional=true&hidden_size=16",
    "gates-gru": "gates?task=parity&arch=gru",
    "gates-peephole": "gates?task=recall&lag=10&peephole=true&bidirectional=true&hidden_size=16",
}


def test_unroll_and_gates_at_a_projector_and_at_1400_wide(app_page):
    """Screenshots to look at (tests/artifacts/screenshots/<name>-<size>.png), each page without
    an exception at either size."""
    page = app_page.page
    for name, link in LINKS.items():
        page.set_viewport_size(SIZES["projector"])
        app_page.goto(link)  # once: the script never sees the window, so each size is the same run
        text = page.locator('[data-testid="stMain"]').inner_text()
        if name == "unroll-sentiment":
            assert "padding in grey" in text and "padding steps left out" in text
        if name == "gates-gru":
            assert "update gate z_t" in text and "forget gate" not in text
        for size, viewport in SIZES.items():
            page.set_viewport_size(viewport)
            wait_for_app(page)  # the figures redraw at the new width
            app_page.screenshot(f"{name}-{size}")
