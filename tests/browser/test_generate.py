"""The Generate page in a real browser: a char LSTM from its link trains on Build & Train, then
writes after a prompt on Generate; the next-character bars and the coloured text are drawn, and a
prompt it cannot read says why, at a projector's 1024x768 and at 1400 wide (screenshots:
generate-<size>.png, generate-bad-projector.png)."""
from .conftest import open_from_menu, wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}


def titles(page) -> list[str]:
    return page.eval_on_selector_all(".gtitle", "els => els.map(e => e.textContent)")  # SVG: no innerText


def generate(page, prompt: str) -> None:
    box = page.get_by_role("textbox", name="Prompt")
    box.fill(prompt)
    page.get_by_role("button", name="Generate").click()
    wait_for_app(page)


def test_a_char_lstm_trains_then_writes_and_its_next_character_and_units_are_drawn(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("build?task=charlm&hidden_size=64")
    steps = page.get_by_label("Train up to step", exact=True)
    steps.fill("150")
    steps.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(
        "() => /steps trained: 150\\b/.test(document.querySelector('[data-testid=\"stSidebar\"]').innerText)",
        timeout=120_000,
    )
    page.get_by_role("button", name="Play", exact=True).wait_for(timeout=30_000)  # stopped at the target
    open_from_menu(page, "Language models", "Generate text")
    wait_for_app(page)
    generate(page, "def f(x):\n    return ")
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "by the model at step 150" in main and "Units that follow the text" in main
    assert any("Next character after" in t for t in titles(page)), titles(page)
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"generate-{size}")

    generate(page, "naïve €")
    error = page.locator('[data-testid="stAlertContentError"]').inner_text()
    assert "not in this corpus's vocabulary" in error and "last one written" in error
    assert "Units that follow the text" in page.locator('[data-testid="stMain"]').inner_text()  # nothing lost
    page.set_viewport_size(SIZES["projector"])
    wait_for_app(page)
    app_page.screenshot("generate-bad-projector")
