"""Students press F5: a reload brings back the tab's model, its step count and its lesson; the
same link opened in another browser (a teacher's link pasted to the class) gets a lab of its own,
with the lesson but none of the teacher's training."""
from app.session.lessons import by_objective

from .conftest import wait_for_app
from .test_build_train import steps_trained

BANNER = '[data-testid="stAlert"]'
SIDEBAR = 'document.querySelector(\'[data-testid="stSidebar"]\')'


def test_a_reload_keeps_the_model_its_steps_and_its_lesson(browser, app_page):
    app_page.goto("")
    page = app_page.page
    which = [lesson.key for _, group in by_objective() for lesson in group].index("exploding")  # Home's order
    page.get_by_role("button", name="Open this lesson").nth(which).click()
    wait_for_app(page)
    assert "/build" in page.url and "lesson=exploding" in page.url
    banner = page.locator(BANNER, has_text="Exploding gradients and clipping")
    assert banner.count() == 1
    page.get_by_role("button", name="Step", exact=True).click()
    wait_for_app(page)
    assert steps_trained(page) == 1
    link = page.url

    page.reload()
    wait_for_app(page)
    assert steps_trained(page) == 1  # the same model, not a fresh one from the link's settings
    assert page.locator(BANNER, has_text="Exploding gradients and clipping").count() == 1
    app_page.screenshot("reload-kept")

    other = browser.new_context()  # another browser: another owner token
    try:
        student = other.new_page()
        student.goto(link)
        wait_for_app(student)
        assert steps_trained(student) == 0  # a lab of its own, never the teacher's
        assert student.locator(BANNER, has_text="Exploding gradients and clipping").count() == 1
        assert student.url.split("lab=")[1] != link.split("lab=")[1]
    finally:
        other.close()


def test_a_duplicated_tab_takes_the_model_and_the_first_tab_says_so(app_page):
    """Two tabs drove one lab: Reset in one reset the other's model while it still showed its old
    state. The newest tab drives it; the first says so when next used and can take it back."""
    app_page.goto("build")
    page = app_page.page
    page.get_by_role("button", name="Step", exact=True).click()
    wait_for_app(page)
    duplicate = page.context.new_page()  # the same browser: the same owner cookie
    duplicate.goto(page.url)
    wait_for_app(duplicate)
    assert steps_trained(duplicate) == 1

    page.get_by_role("button", name="Reset", exact=True).click()
    page.locator(BANNER, has_text="now open in another tab").wait_for(timeout=30_000)
    assert steps_trained(page) == 0  # this tab's link afresh
    duplicate.get_by_role("button", name="Step", exact=True).click()
    duplicate.wait_for_function(f"() => /steps trained:\\s*[0-9]/.test({SIDEBAR}.innerText)")
    duplicate.wait_for_function(f"() => !/steps trained:\\s*1\\b/.test({SIDEBAR}.innerText)", timeout=30_000)
    assert steps_trained(duplicate) == 2  # the Reset never reached the duplicate's model

    # A page of the menu opened in a new tab (a middle-click): its link names the page only; the page's
    # script sends it the address of the tab it came from, and it takes that tab's model.
    duplicate.locator('[data-testid="stTopNavSection"]', has_text="Recurrent networks").click()
    with page.context.expect_page() as opened:
        duplicate.locator('[data-testid="stTopNavDropdownLink"]', has_text="Gates").click(button="middle")
    menu_tab = opened.value
    menu_tab.wait_for_url("**/gates?*lab=*", timeout=30_000)
    wait_for_app(menu_tab)
    assert steps_trained(menu_tab) == 2
    bare = page.context.new_page()  # the bare address typed: the defaults, not the browser's model
    bare.goto(f"{app_page.base_url}/build")
    wait_for_app(bare)
    assert steps_trained(bare) == 0 and bare.locator(BANNER, has_text="now open in another tab").count() == 0
    app_page.screenshot("duplicated-tab")
