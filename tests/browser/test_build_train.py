"""Build & Train in a real browser: play, pause and step train the model the page shows, and a
refused upload says why without losing anything."""
import io
import re

import torch
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from .conftest import SCRIPT_TIMEOUT, StreamlitPage, wait_for_app


def steps_trained(page) -> int:
    text = page.locator('[data-testid="stSidebar"]').inner_text()
    return int(re.search(r"steps trained:\s*([\d,]+)", text).group(1).replace(",", ""))


def kind(message: ForwardMsg) -> str:
    return message.WhichOneof("type")


def page_run_finished(payload) -> bool:
    """A websocket frame that says a run of the whole page (not of a fragment alone) has ended."""
    if not isinstance(payload, (bytes, bytearray)):
        return False
    message = ForwardMsg.FromString(bytes(payload))
    return kind(message) == "script_finished" and message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY


def rerun(app_page: StreamlitPage, socket) -> None:
    """Run the page again (Streamlit's R shortcut) and wait until the server says that run ended."""
    with socket.expect_event("framereceived", predicate=page_run_finished, timeout=SCRIPT_TIMEOUT):
        app_page.page.locator('[data-testid="stMain"]').press("r")
    wait_for_app(app_page.page)


def assert_stays_paused(app_page: StreamlitPage, socket, play: str, count) -> None:
    """Pause was clicked: once the button reads `play` again and the script is idle, `count(page)`
    no longer moves. A playing page ticks because one of its runs sent an auto_rerun for the live
    fragment; the browser cancels every such timer when a run of the whole page starts, and the
    run that paused sent none, so no tick is due. Two more runs of the page (each also runs the
    live fragment), each awaited on its script_finished, then show what the server holds, and
no run of a fragment alone (a tick) came in meanwhile. (A tick the browser sent just before the
pause reached it still runs, once, right after the run that paused: the server queues it.)"""
    page = app_page.page
    page.get_by_role("button", name=play, exact=True).wait_for()
    wait_for_app(page)
    paused = count(page)
    messages = app_page.messages
    read_at = len(messages)  # a tick the browser sent before the pause reached it has run by now
    page_runs = [i for i, m in enumerate(messages) if kind(m) == "new_session" and not m.metadata.run.fragment_ids]
    last_page_run = page_runs[-1]
    assert any(kind(m) == "auto_rerun" for m in messages[:last_page_run]), "playing set no fragment ticking"
    assert not any(kind(m) == "auto_rerun" for m in messages[last_page_run:]), "paused, yet a fragment was set ticking"
    for _ in range(2):
        rerun(app_page, socket)
        assert count(page) == paused  # paused means paused
    ticks = [m for m in app_page.messages[read_at:] if kind(m) == "new_session" and m.metadata.run.fragment_ids]
    assert not ticks, f"the live fragment ran {len(ticks)} times on its own while paused"


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
    assert "model.pt" in alert.inner_text() and "refuses pickles" in alert.inner_text()
    wait_for_app(page)
    assert steps_trained(page) == paused  # the model that was there is still there
