"""Build & Train in a real browser: play, pause and step train the model the page shows, and a
refused upload says why without losing anything."""
import io
import re

import torch

from .conftest import assert_stays_paused, wait_for_app


def steps_trained(page) -> int:
    text = page.locator('[data-testid="stSidebar"]').inner_text()
    return int(re.search(r"steps trained:\s*([\d,]+)", text).group(1).replace(",", ""))


def test_play_pause_step_and_a_refused_upload(app_page):
    sockets = []
    app_page.page.on("websocket", lambda socket: sockets.append(socket))
    app_page.goto("build")
    page = app_page.page
    page.get_by_role("button", name="Step", exact=True).click()
    wait_for_app(page)
    assert steps_trained(page) == 1

    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(  # the progress line counts up while the fragment ticks
        "() => /step (\\d[\\d,]*) of/.test(document.body.innerText) && "
        "parseInt(document.body.innerText.match(/step (\\d[\\d,]*) of/)[1].replace(/,/g, '')) >= 100",
        timeout=120_000,  # a loaded machine trains slowly; what counts is that Play trains and Pause stops
    )
    page.get_by_role("button", name="Pause", exact=True).click()
    assert_stays_paused(app_page, sockets[-1], "Play", steps_trained)
    paused = steps_trained(page)
    assert paused >= 100
    app_page.screenshot("build-trained")

    page.get_by_text("Save or load the model").click()
    pickle = io.BytesIO()
    torch.save({"weights": torch.zeros(3)}, pickle)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(
        files=[{"name": "model.pt", "mimeType": "application/octet-stream", "buffer": pickle.getvalue()}]
    )
    alert = page.locator('[data-testid="stAlert"]', has_text="pickle")
    alert.wait_for(timeout=30_000)
    assert "model.pt" in alert.inner_text() and "refuses it unread" in alert.inner_text()
    wait_for_app(page)
    assert steps_trained(page) == paused  # the model that was there is still there


def test_uploaded_long_reviews_are_read_whole_at_a_click_on_a_projector(app_page):
    """On a projector's 1024x768: a review CSV too long for the shipped reviews' 40 words says how much
    of each review the network reads, and its button builds a network that reads 90% of them whole.
    Screenshot: tests/artifacts/screenshots/build-long-reviews-projector.png."""
    from tests.app.test_build_train import long_reviews

    page = app_page.page
    page.set_viewport_size({"width": 1024, "height": 768})
    app_page.goto("build?task=sentiment")
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "reviews.csv", "mimeType": "text/csv", "buffer": long_reviews(100)}])
    page.get_by_text("so 100% of them are cut").wait_for()
    page.get_by_role("button", name="Read the last 154 words").click()
    page.get_by_text("so 8% of them are cut").wait_for()
    wait_for_app(page)
    assert page.get_by_role("button", name="Read the last").count() == 0
    app_page.screenshot("build-long-reviews-projector")


def test_an_uploaded_text_trains_a_character_model_on_its_first_90_percent(app_page):
    """A student's own .txt on Build & Train: the held-out curve's caption names the file's last
    10% (2,000 of its 20,000 characters), a Step trains on it, and a binary file is refused with the
    model kept. Screenshot: tests/artifacts/screenshots/build-own-text-projector.png."""
    page = app_page.page
    page.set_viewport_size({"width": 1024, "height": 768})
    app_page.goto("build?task=charlm")
    line = "It is a truth universally acknowledged, that a single man in possession of a good fortune. "
    text = (line * 300)[:20_000]
    dropzone = page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]')
    dropzone.set_input_files(files=[{"name": "mine.txt", "mimeType": "text/plain", "buffer": text.encode()}])
    page.get_by_text("in the text's last 2,000 characters, held out and never trained on").wait_for(timeout=60_000)
    wait_for_app(page)
    page.get_by_role("button", name="Step", exact=True).click()
    wait_for_app(page)
    assert steps_trained(page) == 1
    app_page.screenshot("build-own-text-projector")
    dropzone.set_input_files(files=[{"name": "photo.txt", "mimeType": "text/plain",
                                     "buffer": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50}])
    error = page.locator('[data-testid="stAlertContentError"]')
    error.wait_for(timeout=60_000)
    assert "The model you had is unchanged" in error.inner_text(), error.inner_text()
    assert steps_trained(page) == 1
