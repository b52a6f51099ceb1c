"""The Attention page in a real browser: a date model from its link trains with Play to its
preset's budget, and the alignment, the decoding step and the beam are drawn, at a projector's
1024x768 and at 1400 wide (screenshots: attention-dates-<size>.png)."""
import re

from .conftest import wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}
STEPS = re.compile(r"steps trained: (\d+)")


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
    titles = page.eval_on_selector_all(".gtitle", "els => els.map(e => e.textContent)")  # SVG: no innerText
    for title in ("Teacher forcing: alignment", "Free running: alignment", "Decoding step t = 0", "Beam search"):
        assert any(title in t for t in titles), (title, titles)
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"attention-dates-{size}")
