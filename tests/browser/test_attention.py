"""The Attention page in a real browser: a date model from its link trains with Play to its
preset's budget, and the alignment, the decoding step, the beam and each hypothesis's attention
row are drawn; then a date typed into the page is decoded instead (and one it cannot read says
why), at a projector's 1024x768 and at 1400 wide (screenshots: attention-dates-<size>.png,
attention-typed-<size>.png, attention-typed-bad-projector.png)."""
import re

from .conftest import wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}
STEPS = re.compile(r"steps trained: (\d+)")
TYPED = "November 21, 2026"


def titles(page) -> list[str]:
    return page.eval_on_selector_all(".gtitle", "els => els.map(e => e.textContent)")  # SVG: no innerText


def type_source(page, text: str) -> None:
    box = page.get_by_role("textbox", name="Or type a source for it to rewrite (empty: the sample)")
    box.fill(text)
    box.press("Enter")
    wait_for_app(page)


def test_a_date_model_trains_on_the_attention_page_and_its_figures_are_drawn(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("attention?task=dates")
    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(  # the preset's 300 steps: Play stops there by itself
        "() => /steps trained: 300\\b/.test(document.querySelector('[data-testid=\"stSidebar\"]').innerText)",
        timeout=120_000,
    )
    page.get_by_role("button", name="Play", exact=True).wait_for(timeout=30_000)  # stopped at the target
    wait_for_app(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "whole sequence right" in main  # the free run writes the target after 300 steps
    for title in ("Teacher forcing: alignment", "Free running: alignment", "Decoding step t = 0", "Beam search",
                  "Beam at output step t = 1"):
        assert any(title in t for t in titles(page)), (title, titles(page))
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"attention-dates-{size}")

    type_source(page, TYPED)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert f"from the source you typed, '{TYPED}'" in main and "No teacher-forced map" in main
    assert "2026-11-21" in main.replace(" ", "")  # trained to 300 steps, it rewrites the date it was given
    assert not any("Teacher forcing" in t for t in titles(page))
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"attention-typed-{size}")

    page.set_viewport_size(SIZES["projector"])
    type_source(page, "21 Nov 2026!")
    warning = page.locator('[data-testid="stAlertContentWarning"]').inner_text()
    assert "do not occur in the date formats" in warning and "Showing sample 0 instead" in warning
    assert any("Teacher forcing: alignment" in t for t in titles(page))  # the probe sample is back
    app_page.screenshot("attention-typed-bad-projector")
