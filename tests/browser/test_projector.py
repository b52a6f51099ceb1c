"""On a projector at 1024 x 768, with the sidebar open, nothing a teacher needs is cut: the
buttons' labels (they read "P / S / R"), the form's tabs (Training was cut); and presentation mode
makes every figure larger. Screenshots of both, to look at."""
from .conftest import wait_for_app

PROJECTOR = {"width": 1024, "height": 768}
# Elements whose content is wider than the box that shows it: a cut label, a scrolled tab list.
CUT = """selector => [...document.querySelectorAll(selector)]
    .filter(el => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
    .map(el => el.textContent.trim())"""


def test_build_and_train_holds_at_1024_by_768_and_presentation_mode_enlarges_it(app_page):
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("build")
    buttons = page.evaluate(CUT, 'button [data-testid="stMarkdownContainer"]')  # an ellipsis cuts a label
    assert buttons == [], f"cut button labels: {buttons}"
    tabs = page.evaluate(CUT, '[data-baseweb="tab-list"]')
    assert tabs == [], f"tabs that do not fit: {tabs}"
    for name in ("Play", "Step", "Reset"):
        assert page.get_by_role("button", name=name, exact=True).is_visible()
    app_page.screenshot("build-projector-default")

    title_size = "() => parseFloat(getComputedStyle(document.querySelector('.gtitle')).fontSize)"
    before = page.evaluate(title_size)
    page.get_by_text("Presentation mode").click()
    wait_for_app(page)
    page.wait_for_function(f"() => parseFloat(getComputedStyle(document.querySelector('.gtitle')).fontSize) > {before}")
    assert page.evaluate(title_size) >= before * 1.3
    app_page.screenshot("build-projector-presentation")


# Where an element lies in the window, before anything is scrolled: [top, bottom] in px.
SPAN = "selector => { const r = document.querySelector(selector).getBoundingClientRect(); return [r.top, r.bottom]; }"


def test_build_and_train_settings_show_without_scrolling_on_a_projector(app_page):
    """At 1024 x 768 the form's tabs and first setting are in the window as the page opens: under
    the sidebar's 17 navigation links they began 980 px down, a scroll away (issue 28, item 4)."""
    page = app_page.page
    page.set_viewport_size(PROJECTOR)
    app_page.goto("build")
    tabs = page.evaluate(SPAN, '[data-testid="stSidebar"] [role="tablist"]')
    task = page.evaluate(SPAN, '[data-testid="stSidebar"] [data-testid="stSelectbox"]')
    app_page.screenshot("build-projector-settings")
    assert tabs[1] <= PROJECTOR["height"] and task[1] <= PROJECTOR["height"], (
        f"the settings' tabs end {tabs[1]:.0f} px down, its Task box {task[1]:.0f} px, "
        f"in a {PROJECTOR['height']} px window")
