"""Pretrained models in a real browser: the shipped char-LSTM opens from Generate and writes after a
prompt; on Transfer learning a char LM's frozen layers are fine-tuned beside a network trained from
scratch, the frozen parts reading exactly 0 in the table, at a projector's 1024x768 and at 1400 wide
(screenshots: pretrained-generate-wide.png, transfer-<size>.png)."""
from .conftest import play_runs_to, wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_a_shipped_checkpoint_opens_and_writes(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("generate")
    page.get_by_role("button", name="Open the trained char-LSTM").click()
    wait_for_app(page)
    page.get_by_role("textbox", name="Prompt").fill("def main():\n    ")
    page.get_by_role("button", name="Generate").click()
    wait_for_app(page)
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "charlm-lstm" in sidebar, sidebar  # the lab says where its model came from
    assert "Units that follow the text" in main_text(page)
    app_page.screenshot("pretrained-generate-wide")


def test_a_frozen_pretrained_model_fine_tunes_beside_one_from_scratch(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("transfer")
    play_runs_to(page, 50)
    text = main_text(page)
    assert "Both runs reached step 50" in text and "At step 50: from scratch" in text and "pretrained" in text, text
    rows = page.eval_on_selector_all('[data-testid="stTable"] tbody tr',
                                     "trs => trs.map(tr => [...tr.cells].map(c => c.innerText.trim()))")
    frozen = [row for row in rows if row[:2] in (["pretrained", "embedding"], ["pretrained", "layer 0"])]
    assert len(frozen) == 2 and all(row[2] == "frozen" and row[4] == "0" and row[5] == "0" for row in frozen), rows
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        wait_for_app(page)
        app_page.screenshot(f"transfer-{size}")


def test_an_uploaded_review_csv_is_trained_on_and_a_broken_one_is_refused(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["projector"])
    app_page.goto("transfer")
    rows = ["review,sentiment"] + [f'"Film {i} was {"great" if i % 2 else "dull"}.<br />",'
                                   f'{"positive" if i % 2 else "negative"}' for i in range(50)]
    dropzone = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    dropzone.set_input_files(files=[{"name": "mine.csv", "mimeType": "text/csv", "buffer": "\n".join(rows).encode()}])
    wait_for_app(page)
    steps = page.get_by_label("Train each up to step", exact=True)
    steps.fill("100000")  # still playing when Pause is clicked: 300 steps of 40 reviews took about 15 s
    steps.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Train with this recipe").click()
    pause = page.get_by_role("button", name="Pause", exact=True)  # the button plays the runs it made
    pause.wait_for()  # a playing page never settles: no wait_for_app until it is paused
    pause.click()
    wait_for_app(page)
    assert "40 labelled reviews" in main_text(page)  # 50 distinct reviews, a fifth held out
    dropzone.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv", "buffer": b"text,label\nfine,1\n"}])
    wait_for_app(page)
    page.get_by_role("button", name="Train with this recipe").click()
    wait_for_app(page)
    error = page.locator('[data-testid="stAlertContentError"]').inner_text()
    assert "Your reviews could not be read" in error and "unchanged" in error
    assert "40 labelled reviews" in main_text(page)  # the runs on the first file stay
    app_page.screenshot("transfer-bad-csv-projector")
