"""Every lesson as a teacher opens it in front of a class (issue 12, item 8): from its link, on a
projector's 1024x768, then at 1400x900, and once more at 1024x768 in presentation mode (every
page is also shot at 1280x720 in test_pages.py). Each time the lesson's banner is there, nothing
raised, no button label or tab list is cut, and no text of a figure lies outside the figure. Screenshots land in
tests/artifacts/screenshots/lesson-<key>-<size>.png: look at them."""
from urllib.parse import urlencode

import pytest

from app.session.lessons import LESSONS
from app.widgets.state import LESSON_PARAM

from .conftest import wait_for_app
from .test_projector import CUT, PROJECTOR

SIZES = {"projector": PROJECTOR, "wide": {"width": 1400, "height": 900}}
BANNER = '[data-testid="stAlert"]'
TAB_LIST = '[data-testid="stTabs"] [role="tablist"]'  # Streamlit 1.67's tabs: no data-baseweb="tab-list" any more
# The figures a student sees: not those folded in a closed expander, which keep their old width
# until it opens.
SHOWN_CHARTS = """[...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .filter(chart => !chart.closest('details:not([open])'))"""
CLOSED_EXPANDERS = '[data-testid="stExpander"] details:not([open]) > summary'
# Every figure shown is drawn at the width of its element: plotly redraws a figure after its
# element takes the window's new width, and until then its svg keeps the old one.
CHARTS_FIT = f"""() => {SHOWN_CHARTS}.every(chart => {{
    const svg = chart.querySelector('.main-svg'), width = chart.getBoundingClientRect().width;
    return svg !== null && Math.abs(parseFloat(svg.getAttribute('width')) - width) < 1;
}})"""
# Text of a plotly figure (title, tick labels, legend, annotations) that sticks out of the figure's
# box by more than a pixel: the browser draws it cut at the edge, or not at all.
TEXT_OUTSIDE = f"""() => {SHOWN_CHARTS}.flatMap(chart => {{
    const box = chart.querySelector('.main-svg').getBoundingClientRect();
    const title = (chart.querySelector('.gtitle') || {{}}).textContent || '(untitled)';
    return [...chart.querySelectorAll('.main-svg text')]
        .filter(t => t.textContent.trim() && getComputedStyle(t).visibility !== 'hidden')
        .map(t => [t.textContent.trim(), t.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1
                                           || r.top < box.top - 1 || r.bottom > box.bottom + 1))
        .map(([text]) => `${{title}}: ${{text}}`);
}})"""


def lesson_link(lesson) -> str:
    """The lesson's link, as the address bar holds it once the lesson is open (Home's "Open this
    lesson" leads there: tests/browser/test_reload.py): its page, its settings and its key."""
    return f"{lesson.page}?{urlencode(lesson.setup.to_query() | {LESSON_PARAM: lesson.key})}"


def what_a_class_cannot_read(app_page, lesson, size: str) -> list[str]:
    """With every expander open: what is missing or cut (no banner, cut button labels or tabs,
    figure text outside its figure), each said with the screenshot it shows on, which is taken."""
    page = app_page.page
    closed = page.locator(CLOSED_EXPANDERS)
    for _ in range(closed.count()):  # what a teacher may open in class; an opened one leaves the list
        closed.first.click()
    page.wait_for_function(CHARTS_FIT)  # the figures have redrawn at this width
    shot = f"lesson-{lesson.key}-{size}"
    app_page.screenshot(shot)
    problems = [] if page.locator(BANNER, has_text=lesson.title).count() == 1 else ["no lesson banner"]
    labels = page.evaluate(CUT, 'button [data-testid="stMarkdownContainer"]')
    problems += [f"cut button label: {label}" for label in labels]
    problems += [f"tabs that do not fit: {tabs}" for tabs in page.evaluate(CUT, TAB_LIST)]
    problems += [f"figure text cut at the figure's edge: {text}" for text in page.evaluate(TEXT_OUTSIDE)]
    return [f"{shot}: {problem}" for problem in problems]


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.key for lesson in LESSONS])
def test_every_lesson_holds_on_a_projector_and_wider(app_page, lesson):
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto(lesson_link(lesson))
    if lesson.page == "generate":  # a shipped model that trains no further: a text to look at
        page.get_by_role("button", name="Generate").click()
    else:
        page.get_by_role("button", name="Step", exact=True).click()  # one step: curves to look at
    wait_for_app(page)
    problems = []
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        problems += what_a_class_cannot_read(app_page, lesson, size)

    page.set_viewport_size(PROJECTOR)
    page.get_by_text("Presentation mode").click()
    wait_for_app(page)
    problems += what_a_class_cannot_read(app_page, lesson, "presentation")
    assert problems == [], "\n".join(problems)
