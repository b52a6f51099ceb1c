"""Students press F5: a reload brings back the tab's model, its step count and its lesson; the
same link opened in another browser (a teacher's link pasted to the class) gets a lab of its own,
with the lesson but none of the teacher's training."""
from app.session.lessons import by_objective

from .conftest import wait_for_app
from .test_build_train import steps_trained

BANNER = '[data-testid="stAlert"]'


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
