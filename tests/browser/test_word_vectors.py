"""Pretrained embeddings in a real browser: the three runs play to step 100 on the real sentences,
the frozen run's embedding reading exactly 0 (gradient and distance moved) in the table while the
fine-tuned one's moves, at a projector's 1024x768 and at 1400 wide (screenshots:
word-vectors-<size>.png)."""
from .conftest import wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_three_starts_train_side_by_side_and_the_frozen_one_never_moves(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("word-vectors")
    steps = page.get_by_label("Train each up to step", exact=True)
    steps.fill("100")
    steps.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(
        "() => /step 100 of 100 for each run/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=240_000,
    )
    page.get_by_role("button", name="Play", exact=True).wait_for(timeout=60_000)  # stopped at the target
    wait_for_app(page)
    text = main_text(page)
    assert "The runs reached step 100" in text and "At step 100: random" in text, text
    rows = page.eval_on_selector_all('[data-testid="stTable"] tbody tr',
                                     "trs => trs.map(tr => [...tr.cells].map(c => c.innerText.trim()))")
    by_run = {row[0]: row for row in rows}
    assert by_run["frozen"][1] == "frozen" and by_run["frozen"][3:] == ["0", "0"], rows
    assert by_run["fine-tuned"][1] == "trains" and float(by_run["fine-tuned"][4]) > 0, rows
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"word-vectors-{size}")
