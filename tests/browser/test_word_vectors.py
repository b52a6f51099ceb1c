"""Pretrained embeddings in a real browser: the three runs play to step 100 on the real sentences,
the frozen run's embedding reading exactly 0 (gradient and distance moved) in the table while the
fine-tuned one's moves, at a projector's 1024x768 and at 1400 wide (screenshots:
word-vectors-<size>.png)."""
from .conftest import play_runs_to, wait_for_app

SIZES = {"projector": {"width": 1024, "height": 768}, "wide": {"width": 1400, "height": 900}}


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_three_starts_train_side_by_side_and_the_frozen_one_never_moves(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["wide"])
    app_page.goto("word-vectors")
    play_runs_to(page, 100)
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


def test_an_uploaded_review_csv_is_read_word_by_word_and_a_broken_one_is_refused(app_page):
    page = app_page.page
    page.set_viewport_size(SIZES["projector"])
    app_page.goto("word-vectors")
    rows = ["review,sentiment"] + [f'"The food was {"great" if i % 2 else "awful"}, visit {i}.",'
                                   f'{"positive" if i % 2 else "negative"}' for i in range(50)]
    dropzone = page.locator('[data-testid="stMain"] [data-testid="stFileUploaderDropzoneInput"]')
    dropzone.set_input_files(files=[{"name": "mine.csv", "mimeType": "text/csv", "buffer": "\n".join(rows).encode()}])
    wait_for_app(page)
    page.get_by_role("combobox").first.click()
    page.get_by_role("option", name="all of them").click()
    page.get_by_role("button", name="Train the three runs").click()
    pause = page.get_by_role("button", name="Pause", exact=True)  # the button plays the runs it made
    pause.wait_for()  # a playing page never settles: no wait_for_app until it is paused
    pause.click()
    wait_for_app(page)
    assert "40 labelled reviews of your CSV (10 more held out)" in main_text(page), main_text(page)
    dropzone.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv", "buffer": b"text,label\nfine,1\n"}])
    wait_for_app(page)
    page.get_by_role("button", name="Train the three runs").click()
    wait_for_app(page)
    error = page.locator('[data-testid="stAlertContentError"]').inner_text()
    assert "Your reviews could not be read" in error and "unchanged" in error
    assert "40 labelled reviews of your CSV" in main_text(page)
