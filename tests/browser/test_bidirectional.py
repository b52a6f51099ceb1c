"""The bidirectional lesson in a real browser (issue 12, item 3): Unroll draws ŷ from the states
the head reads, h→ at the last step and h← at step 0, and says so. Screenshots at a projector's
1024x768 and at 1400 wide land in tests/artifacts/screenshots/bidirectional-*.png: look at them."""
import re

from app.session.lessons import by_objective

from .conftest import open_from_menu, wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}
STEP = re.compile(r"At step t = (\d+) the network reads")
# Every chart is drawn at the width of its element: plotly redraws a chart after its element takes
# the window's new width, and until then its svg keeps the old one.
CHARTS_FIT = """() => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    return charts.length > 0 && charts.every(chart => {
        const svg = chart.querySelector('.main-svg'), width = chart.getBoundingClientRect().width;
        return svg !== null && Math.abs(parseFloat(svg.getAttribute('width')) - width) < 1;
    });
}"""


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_the_bidirectional_lesson_shows_what_its_head_reads(app_page):
    app_page.goto("")
    page = app_page.page
    which = [lesson.key for _, group in by_objective() for lesson in group].index("bidirectional")  # Home's order
    page.get_by_role("button", name="Open this lesson").nth(which).click()
    wait_for_app(page)
    assert "lesson=bidirectional" in page.url
    open_from_menu(page, "Recurrent networks", "Unroll")  # the same session
    page.wait_for_url("**/unroll*")
    wait_for_app(page)
    slider = page.get_by_role("slider").first
    slider.focus()
    page.keyboard.press("End")  # the last step, where ŷ is
    page.wait_for_function(
        "() => /At step t = 50 the network reads/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=30_000,
    )
    wait_for_app(page)
    text = main_text(page)
    assert "What the output reads: [h→_50 ; h←_0]" in text or "[h→_50 ; h←_0]" in page.content()
    assert "h←_0, which has read the sample from its end back to its start" in text
    assert "[h→_50 ; h←_50]" not in page.content()
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.wait_for_function(CHARTS_FIT, timeout=30_000)  # the charts redraw at the new width
        app_page.screenshot(f"bidirectional-unroll-t50-{size}")
    page.keyboard.press("Home")
    slider.focus()
    page.keyboard.press("Home")  # step 0: h←_0 is drawn, ŷ_50 lies to the right
    page.wait_for_function(
        "() => /At step t = 0 the network reads/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=30_000,
    )
    wait_for_app(page)
    app_page.screenshot("bidirectional-unroll-t0-wide")
