"""The BPTT and RTRL page in a real browser, at a projector's 1024x768 and at 1400 wide: its four
sections draw their figures, and an H past the page's budget says so instead of computing
(screenshots: rtrl-<size>.png, rtrl-too-large.png)."""
from .conftest import wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}
# A phrase of each figure's title short enough not to be broken by a column's wrapped title.
FIGURES = ("321 gradient entries", "loss so far", "Memory to have", "Time per step", "Truncated BPTT")


def titles(page) -> str:
    return " ".join(page.eval_on_selector_all(".gtitle", "els => els.map(e => e.textContent)"))  # SVG: no innerText


def test_the_page_draws_its_four_sections_and_refuses_an_h_over_its_budget(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("rtrl")
    page.wait_for_function("n => document.querySelectorAll('.gtitle').length >= n", arg=len(FIGURES))
    assert all(figure in titles(page) for figure in FIGURES), titles(page)  # defaults: tanh RNN, H 16: 321 entries
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "1. The same gradient" in main and "4. Truncated BPTT's bias" in main
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"rtrl-{size}")

    thumb = page.get_by_role("slider", name="Hidden units H")
    thumb.focus()
    thumb.press("End")  # H = 128: RTRL's H^4 is over the budget at T = 50
    wait_for_app(page)
    error = page.locator('[data-testid="stAlertContentError"]').inner_text()
    assert "Too large for this page" in error and "H = 128" in error and "lower H to 64" in error
    assert not page.locator(".gtitle").count()  # nothing computed, nothing drawn
    app_page.screenshot("rtrl-too-large")
