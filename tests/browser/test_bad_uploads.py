"""Nothing a student uploads takes the server down: a checkpoint with a NaN weight (on which this
torch build's eigvals segfaults, killing every session) and one with a forged header are refused
with a message, while another student's session on the same server trains on."""
import json

import torch
from safetensors.torch import save as save_safetensors

import engine
from app.session.link import DEFAULT

from .conftest import _health, wait_for_app
from .test_build_train import steps_trained


def nan_checkpoint() -> bytes:
    model = engine.build_model(DEFAULT.model, DEFAULT.make_task(), seed=0)
    with torch.no_grad():
        model.rnn.weight_hh_l0[0, 0] = float("nan")
    return engine.to_bytes(model)


def forged_checkpoint() -> bytes:
    """A real checkpoint whose header names its task with a list instead of a string."""
    model = engine.build_model(DEFAULT.model, DEFAULT.make_task(), seed=0)
    spec = {**model.spec.to_dict(), "name": ["adding", "adding"]}
    metadata = {"format": "unrolled-checkpoint-1", "model_config": json.dumps(model.cfg.to_dict()),
                "task_spec": json.dumps(spec)}
    return save_safetensors({k: v.contiguous() for k, v in model.state_dict().items()}, metadata=metadata)


def upload(page, name: str, data: bytes) -> str:
    """Upload a checkpoint saved by Unrolled and press the "Open it" the page offers for one."""
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}]
    )
    page.get_by_text(f"{name} is a model saved by Unrolled").wait_for(timeout=30_000)
    page.get_by_role("button", name="Open it").click()
    alert = page.locator('[data-testid="stAlert"]', has_text=name)
    alert.wait_for(timeout=30_000)
    return alert.inner_text()


def test_bad_checkpoints_are_refused_while_another_session_trains(browser, app_url, app_page):
    trainer = browser.new_context()
    try:
        other = trainer.new_page()
        other.goto(f"{app_url}/build")
        wait_for_app(other)
        other.get_by_role("button", name="Play").click()
        other.wait_for_function("() => /step [1-9][\\d,]* of/.test(document.body.innerText)", timeout=60_000)

        app_page.goto("build")
        page = app_page.page
        page.get_by_text("Save or load the model").click()
        said = upload(page, "diverged.safetensors", nan_checkpoint())
        assert "rnn.weight_hh_l0" in said and "NaN" in said
        said = upload(page, "forged.safetensors", forged_checkpoint())
        assert "forged.safetensors" in said and "Traceback" not in said
        wait_for_app(page)
        assert steps_trained(page) == 0  # the model that was there is still there
        app_page.goto("gradients")  # where the spectra of W_hh are drawn: still the student's own model

        before = steps_trained(other)
        trained = "parseInt(document.body.innerText.match(/steps trained:\\s*([\\d,]+)/)[1].replace(/,/g, ''))"
        other.wait_for_function(f"() => {trained} > {before}", timeout=60_000)  # it lives and trains on
        assert _health(app_url) == "ok"
    finally:
        trainer.close()
