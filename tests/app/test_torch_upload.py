"""Open your own model, driven through AppTest: a state_dict saved from PyTorch modules opens on
the task it fits and gives the modules' outputs; a file refused says why and the lab keeps its model."""
import io
import zipfile

import torch
from safetensors.torch import save
from streamlit.testing.v1 import AppTest
from torch import nn

import engine
from app import pages as nav
from app.session.lab import Lab
from app.session.link import preset_setup
from app.session.torch_models import open_on
from app.widgets.literal import literal

from .conftest import MAIN, shown


def widget_page():
    import streamlit as st

    from app.widgets.torch_upload import torch_upload

    torch_upload(st.session_state["lab"])


def page(task: str = "adding") -> AppTest:
    """The widget alone, on a lab of `task` that has trained one step."""
    at = AppTest.from_function(widget_page, default_timeout=60)
    lab = Lab(preset_setup(task))
    lab.step()
    at.session_state["lab"] = lab
    return at.run()


def upload(at: AppTest, data: bytes, name: str = "mine.safetensors", key: str = "torch_upload.file") -> AppTest:
    return at.file_uploader(key=key).set_value((name, data, "application/octet-stream")).run()


def fit_table(at: AppTest) -> dict[str, str]:
    """Task -> "yes", or why the network does not fit it."""
    table = at.dataframe[0].value
    assert list(table["fits"]) == ["yes" if why == "" else "no" for why in table["why not"]]
    return dict(zip(table["task"], table["why not"].replace("", "yes")))


class Sentiment(nn.Module):
    """A student's network: nn.LSTM reading 2 values, read at its last step by nn.Linear."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(2, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(12, 1)

    def forward(self, x):
        _, (h_n, _) = self.lstm(x)  # [L*dirs, B, H]
        return self.fc(torch.cat([h_n[-2], h_n[-1]], dim=1))  # [B, 1]


def test_the_uploader_declares_its_size_limit_and_says_how_to_save_safetensors():
    at = page()
    assert at.file_uploader(key="torch_upload.file").proto.max_upload_size_mb == 64
    assert "save_file(model.state_dict(), 'model.safetensors')" in at.caption[0].value


def test_an_lstm_state_dict_opens_on_the_task_it_fits_with_the_modules_outputs():
    torch.manual_seed(0)
    student = Sentiment().eval()
    at = upload(page(), save(student.state_dict()))
    assert not at.exception
    said = at.markdown[0].value
    assert "a 2-layer bidirectional nn.LSTM of 6 units" in said and "an nn.Linear head, 12 → 1" in said
    assert "2 values per step" in said
    at.radio(key="torch_upload.mapping").set_value("seq2vec").run()
    fits = fit_table(at)
    assert fits["adding"] == "yes"
    assert fits["recall"] == "the recall task gives 8 values per step, and this network reads 2 values per step"
    assert at.selectbox(key="torch_upload.task").options == ["adding"]
    at.button(key="torch_upload.open").click().run()
    assert not at.exception and not at.error
    assert at.toast[0].value == "mine.safetensors opened on adding"
    lab = at.session_state["lab"]
    assert lab.setup.model == engine.ModelConfig(arch="lstm", hidden_size=6, num_layers=2, bidirectional=True)
    assert lab.trainer.steps_done == 0
    x, _ = lab.task.batch(5)
    with torch.no_grad():
        torch.testing.assert_close(lab.model(x), student(x), atol=1e-7, rtol=0)
        recording = lab.recording(0)  # what the look-inside pages draw
        probe = lab.probes.samples[0][:1]
        torch.testing.assert_close(recording.y_hat, student(probe)[0], atol=1e-6, rtol=0)
        _, (h_n, _) = student.lstm(probe)
    torch.testing.assert_close(recording.hidden[1, 0, -1], h_n[2, 0], atol=1e-6, rtol=0)  # top layer, forward, h_T
    torch.testing.assert_close(recording.hidden[1, 1, 0], h_n[3, 0], atol=1e-6, rtol=0)  # top layer, backward, h_0


def vocab_file(vocab: tuple[str, ...]) -> bytes:
    """One token per line, a line break written \\n and a backslash \\\\."""
    escaped = (t.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r") for t in vocab)
    return ("\n".join(escaped) + "\n").encode()


class CharGRU(nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 8)
        self.gru = nn.GRU(8, 16, batch_first=True)
        self.fc = nn.Linear(16, vocab_size)

    def forward(self, x):
        return self.fc(self.gru(self.embed(x))[0])  # [B, T, V]


def test_a_character_model_opens_on_charlm_with_its_vocabulary():
    vocab = engine.make_task("charlm").vocab
    assert "\n" in vocab and "\\" in vocab  # the escapes are needed
    torch.manual_seed(0)
    student = CharGRU(len(vocab)).eval()
    at = upload(page(), save(student.state_dict()))
    assert "Shapes cannot say which token each of the 158 ids stands for" in at.info[0].value
    assert not at.get("dataframe")  # no task is offered before the vocabulary
    upload(at, vocab_file(vocab), "vocab.txt", key="torch_upload.vocab")
    assert fit_table(at)["charlm"] == "yes"
    at.selectbox(key="torch_upload.task").set_value("charlm").run()
    at.button(key="torch_upload.open").click().run()
    assert not at.exception and not at.error
    lab = at.session_state["lab"]
    assert lab.setup.task == "charlm" and lab.model.vocab == vocab
    x, _ = lab.task.batch(3)
    with torch.no_grad():
        torch.testing.assert_close(lab.model(x), student(x), atol=1e-6, rtol=0)


def test_a_vocabulary_that_does_not_match_the_embedding_is_refused_and_no_task_offered():
    student = CharGRU(158)
    at = upload(page(), save(student.state_dict()))
    upload(at, b"a\nb\nc\n", "vocab.txt", key="torch_upload.vocab")
    assert "vocab.txt: the vocabulary has 3 tokens, and the embedding embed.weight has 158 rows" in at.error[0].value
    assert not at.get("dataframe") and not at.get("button")
    reordered = vocab_file(tuple(reversed(engine.make_task("charlm").vocab)))
    upload(at, reordered, "vocab.txt", key="torch_upload.vocab")  # the right size, other tokens
    assert "token ids mean other tokens" in fit_table(at)["charlm"]


def test_a_network_no_task_fits_says_what_each_task_needs():
    at = upload(page(), save(nn.GRU(5, 3).state_dict()))
    assert "no head: its outputs are the top layer's states (3 numbers)" in at.markdown[0].value
    fits = fit_table(at)
    assert set(fits) == set(engine.TASKS) and "yes" not in fits.values()
    assert fits["reverse"] == ("the reverse task needs an encoder and a decoder (two recurrent stacks); "
                               "this network has one")
    assert "No task of this app fits this network, which reads 5 values per step and gives 3 outputs" in (
        at.warning[0].value)
    assert not at.get("button")


def test_a_model_saved_by_unrolled_opens_with_its_own_task():
    task = engine.make_task("parity")
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=5), task, seed=3)
    at = upload(page(), engine.to_bytes(model))
    assert "a model saved by Unrolled" in at.markdown[0].value
    at.button(key="torch_upload.open").click().run()
    lab = at.session_state["lab"]
    assert lab.setup.task == "parity" and lab.setup.model == model.cfg
    for name, weight in model.state_dict().items():
        assert torch.equal(lab.model.state_dict()[name], weight), name


def test_a_checkpoints_file_name_is_shown_as_its_characters_never_as_markup():
    """A file name is the student's (or anyone's) text: written as a Markdown link and an image, it
    showed a live link in the app's own page and fetched the image from outside."""
    task = engine.make_task("parity")
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=5), task, seed=3)
    name = "[Session expired: log in](http://evil.example/login)![x](http://evil.example/p.png).safetensors"
    at = upload(page(), engine.to_bytes(model), name=name)
    said = at.markdown[0].value
    assert said.startswith(f"**{literal(name)}** is a model saved by Unrolled")
    assert "\\[Session expired\\: log in\\](http\u200b\\://" in said and "![" not in said  # no link, no image
    at.button(key="torch_upload.open").click().run()
    assert [t.value for t in at.toast] == [f"{literal(name)} opened on parity"]


def bad_files() -> dict[str, tuple[bytes, str]]:
    """Files to refuse, and what the message must say."""
    student = Sentiment()
    pickled = io.BytesIO()
    torch.save(student.state_dict(), pickled)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("weights.txt", "1 2 3")
    weights = student.state_dict()
    return {
        "empty.safetensors": (b"", "the file is empty (0 bytes)"),
        "model.pt": (pickled.getvalue(), "refuses it unread, because loading a pickle can run any code. Save the "
                                         "weights with safetensors instead"),
        "model.zip": (archive.getvalue(), "this file is a pickle"),
        "notes.txt": (b"my lstm, 2 layers\n", "this file is not safetensors"),
        "norm.safetensors": (save(weights | {"norm.weight": torch.ones(12), "norm.bias": torch.zeros(12)}),
                             "norm.bias [12], norm.weight [12] are in no part this app opens"),
        "shape.safetensors": (save(weights | {"lstm.weight_hh_l1": torch.zeros(24, 5)}),
                              "lstm.weight_hh_l1 has shape [24, 5]"),
    }


def test_a_refused_file_says_why_and_the_lab_keeps_its_model():
    at = page()
    lab = at.session_state["lab"]
    model, before = lab.model, {k: v.clone() for k, v in lab.model.state_dict().items()}
    for name, (data, message) in bad_files().items():
        upload(at, data, name)
        assert not at.exception, name
        assert len(at.error) == 1 and at.error[0].value.startswith(f"{name}: "), name
        assert message in shown(at.error[0].value), (name, at.error[0].value)
        assert "The model you had is unchanged" in at.error[0].value
        assert at.session_state["lab"].model is model and lab.trainer.steps_done == 1
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_a_network_over_the_labs_budget_is_refused_on_opening_and_the_lab_keeps_its_model(monkeypatch):
    """The size budget, priced from the file's header before a tensor is read or a model built: an
    nn.RNN of three layers of 1024 units is over it."""
    from engine import torch_import

    read, built = [], []
    monkeypatch.setattr(torch_import, "load_bytes", lambda data: read.append(len(data)))
    monkeypatch.setattr(torch_import, "build_model", lambda *a, **k: built.append(a))
    at = page("sine")
    lab = at.session_state["lab"]
    model = lab.model
    weights = {}
    for layer in range(3):
        weights |= {f"rnn.weight_ih_l{layer}": torch.zeros(1024, 1 if layer == 0 else 1024),
                    f"rnn.weight_hh_l{layer}": torch.zeros(1024, 1024),
                    f"rnn.bias_ih_l{layer}": torch.zeros(1024), f"rnn.bias_hh_l{layer}": torch.zeros(1024)}
    weights |= {"fc.weight": torch.zeros(1, 1024), "fc.bias": torch.zeros(1)}
    upload(at, save(weights), "big.safetensors")
    at.button(key="torch_upload.open").click().run()
    assert "big.safetensors: this network has 5,251,073 parameters, over this app's limit" in at.error[0].value
    assert at.session_state["lab"].model is model
    assert read == [] and built == []  # nothing of the file's 21 MB of weights was read in


def test_every_page_opens_a_model_opened_from_pytorch():
    """The look-inside pages read the lab's model, whichever way it entered: the file's LSTM,
    opened on adding, draws on Unroll, Gates and Gradients as a model built here does."""
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    torch.manual_seed(0)
    student = Sentiment().eval()
    open_on(at.session_state["lab"], save(student.state_dict()), "adding", "seq2vec")
    for page_name in ("build", "unroll", "gates", "gradients"):
        at.switch_page(nav.PATHS[page_name]).run()
        assert not at.exception, (page_name, [e.message for e in at.exception])
        assert at.get("plotly_chart"), f"{page_name} drew nothing"
    assert at.session_state["lab"].setup.model.hidden_size == 6
