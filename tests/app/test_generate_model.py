"""What Generate says and shows of the open language model (issue 30), without a browser: a
transformer writes past its window reading only its last window, and the page plots the scores
it read; the caption names what the model trained on, for each shipped char checkpoint, an
untrained model and an upload."""
import dataclasses

import pytest
import torch

import engine
from app.session import pretrained
from app.session.generation import trained_on, write
from app.session.lab import Lab
from app.session.link import preset_setup
from engine.sampling import Sampling, context_logits, generate

SEQ_LEN = 16
TRANSFORMER = dataclasses.replace(
    preset_setup("charlm"), task_params={"seq_len": SEQ_LEN, "corpus": "python"},
    model=engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=2, num_layers=1))
CHAR_CARDS = [c.name for c in pretrained.shipped() if c.fields["task"]["name"] == "charlm"]


def test_a_transformer_writes_past_its_window_and_the_page_plots_the_scores_it_read():
    lab = Lab(TRANSFORMER)
    for _ in range(10):
        lab.advance()
    generated = write(lab, "def ", 60, Sampling("greedy"), seed=0)  # 64 characters: 4 windows
    ids = lab.task.encode(generated.text)  # [64]
    expected = generate(lab.model, lab.task.encode("def "), 60, Sampling("greedy"), window=SEQ_LEN)
    assert torch.equal(ids, expected)
    lab.model.eval()
    with torch.no_grad():
        for t in range(3, 63):  # the scores after character t: the model on the window ending there
            direct = lab.model(ids[None, max(0, t + 1 - SEQ_LEN) : t + 1])[0, -1]  # [V]
            torch.testing.assert_close(generated.logits[t], direct, rtol=1e-5, atol=1e-5)
            assert direct.argmax() == ids[t + 1], t
        whole = lab.model(ids[None, :-1])[0]  # [63, V]: reading everything, as before the crop
    lab.model.train()
    assert not torch.allclose(generated.logits[SEQ_LEN:], whole[SEQ_LEN:], atol=1e-3)
    torch.testing.assert_close(generated.logits, context_logits(lab.model, ids, SEQ_LEN))
    assert lab.model.training  # writing left the model as it was


def opened(name: str) -> Lab:
    """A lab holding the shipped checkpoint `name`, as the Generate page's buttons open it."""
    setup = pretrained.setup_for(pretrained.named(name))
    lab = Lab(setup)
    lab.install(setup, None, pretrained.load(pretrained.read(name))[0], origin=name)
    return lab


@pytest.mark.parametrize("name", CHAR_CARDS)
def test_the_caption_says_what_each_shipped_char_checkpoint_trained_on(name):
    assert len(CHAR_CARDS) == 6
    lab, card = opened(name), pretrained.named(name)
    data = card.fields["data"]
    said = trained_on(lab)
    assert card.title in said and name in said and f"{card.fields['training']['steps']:,} steps" in said
    assert data["what"] in said and data["trained on"] in said and data["held out"] in said
    corpus = card.fields["task"]["params"].get("corpus", "python")
    assert ("Shakespeare" in said) == (corpus == "shakespeare")
    assert ("Python" in said) == (corpus == "python")
    arch = card.fields["model"]["arch"]
    assert (f"{arch.upper()} of {card.fields['model']['hidden_size']} units" if arch != "transformer"
            else f"d_model {card.fields['model']['hidden_size']}") in said
    lab.step()
    assert f"; since, 1 more step here on {lab.task.trained_on()}." in trained_on(lab)


def test_the_caption_of_an_untrained_model_or_an_upload_says_which_text_it_trains_on():
    shakespeare = Lab(dataclasses.replace(TRANSFORMER, task_params={"seq_len": SEQ_LEN, "corpus": "shakespeare"}))
    assert trained_on(shakespeare) == (
        "This model is a transformer of 1 block, d_model 32, not trained yet: it trains on Tiny Shakespeare "
        "(char-rnn's and nanoGPT's corpus): its first 1,003,854 of 1,115,394 characters (90%; the rest is held out).")
    upload = Lab(TRANSFORMER, "to be or not to be\n" * 100)  # 1,900 characters
    upload.step()
    assert trained_on(upload) == ("This model is a transformer of 1 block, d_model 32, trained 1 step on your own "
                                  "text: its first 1,710 of 1,900 characters (90%; the rest is held out).")
    python = Lab(dataclasses.replace(TRANSFORMER, model=preset_setup("charlm").model))
    assert trained_on(python) == ("This model is a 1-layer LSTM of 128 units, not trained yet: it trains on Python's "
                                  "own source (a few files of its standard library): all 78,063 of its characters.")
