"""A task made from a checkpoint's header (engine.tasks.header_task): a shipped model of a task that reads a
public corpus opens, reads and writes its words with no corpus on the machine, every part of its task that
the corpus makes raises CorpusMissing naming the corpus, and once the corpus is here the same task is the one
make_task makes, batch for batch. A translator's checkpoint carries its French words for it."""
import json
import struct
from pathlib import Path

import pytest
import torch

import engine
from engine import datasets
from engine.tasks import masked_lm
from engine.tasks.translate import EOS
from tests.corpora import MIRROR, empty_machine

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
# The shipped checkpoints of tasks that read a public corpus, with it
SHIPPED = {"charlm-shakespeare-lstm": "shakespeare", "charlm-shakespeare-transformer": "shakespeare",
           "masked-lm-prose": "prose", "word-lm-prose": "prose", "translate-gru": "eng-fra-2017"}


@pytest.fixture
def no_corpora(tmp_path, monkeypatch):
    yield from empty_machine(tmp_path, monkeypatch)


def shipped(name: str) -> tuple[torch.nn.Module, str, dict]:
    """The checkpoint's model, and its task's name and parameters as its card gives them."""
    card = json.loads((PRETRAINED / f"{name}.json").read_text())
    return engine.load(PRETRAINED / f"{name}.safetensors"), card["task"]["name"], card["task"]["params"]


def from_header(name: str) -> tuple[torch.nn.Module, engine.Task]:
    model, task, params = shipped(name)
    return model, engine.tasks.header_task(task, model.spec, model.vocab, model.target_vocab, seed=0, **params)


@pytest.mark.parametrize("name", SHIPPED)
def test_without_its_corpus_the_task_fits_its_model_and_asks_for_the_corpus_only_for_data(name, no_corpora):
    model, task_name, params = shipped(name)
    with pytest.raises(datasets.CorpusMissing):
        engine.make_task(task_name, **params)
    _, task = from_header(name)
    assert task.spec == model.spec and task.vocab == model.vocab
    engine.Trainer(model, task, engine.TrainConfig())  # fits: the spec and vocabularies are the checkpoint's
    for ask in (lambda: task.batch(2), lambda: task.test_set() if hasattr(type(task), "test_set") else
                task.held_out_windows(4)):
        with pytest.raises(datasets.CorpusMissing) as missing:
            ask()
        assert missing.value.corpus.name == SHIPPED[name]
        assert "python -m engine.datasets fetch " + SHIPPED[name] in str(missing.value)
    assert not hasattr(task, "no such attribute")  # an attribute no corpus makes is simply not there


def test_a_shakespeare_model_writes_with_no_corpus(no_corpora):
    model, task = from_header("charlm-shakespeare-lstm")
    ids = engine.generate(model, task.encode("ROMEO:\n"), 80, engine.Sampling("greedy"), torch.Generator())
    text = task.decode(ids)
    assert text.startswith("ROMEO:\n") and len(text) == 87
    assert set(text) <= set(task.vocab)


def test_the_translator_translates_with_no_corpus(no_corpora):
    model, task = from_header("translate-gru")
    written = engine.beam_search(model.eval(), task.encode("I am cold."), width=3).best.tokens
    french = task.target_words(written)
    assert french and all(word in task.target_vocab for word in french) and EOS not in written[:-1]
    assert task.unknown_words("I am cold.") == []


def test_the_masked_model_reads_a_sentence_with_no_corpus(no_corpora):
    model, task = from_header("masked-lm-prose")
    ids = torch.tensor([[task.index.get(w, masked_lm.UNK) for w in "she was very <mask> to see him".split()]])
    ids[0, 3] = masked_lm.MASK
    guess = model.eval()(ids)[0, 3].argmax().item()  # [V] at the masked word
    assert task.vocab[guess] not in masked_lm.SPECIALS


@pytest.mark.parametrize("name", ["charlm-shakespeare-lstm", "masked-lm-prose", "translate-gru"])
def test_once_the_corpus_is_here_the_task_is_the_one_make_task_makes(name, no_corpora, monkeypatch):
    _, task = from_header(name)
    with pytest.raises(datasets.CorpusMissing):
        task.batch(3)
    monkeypatch.setenv(datasets.MIRROR, str(MIRROR))  # the corpus arrives
    _, task_name, params = shipped(name)
    made = engine.make_task(task_name, seed=0, **params)
    for got, expected in zip(task.batch(3), made.batch(3)):  # the same seeded draws, the first from the corpus
        assert torch.equal(got, expected)
    assert task.spec == made.spec and task.vocab == made.vocab


def test_a_header_whose_words_are_not_its_corpus_is_refused_once_the_corpus_is_read(no_corpora, monkeypatch):
    model, task_name, params = shipped("charlm-shakespeare-lstm")
    other_words = tuple(reversed(model.vocab))
    task = engine.tasks.header_task(task_name, model.spec, other_words, seed=0, **params)
    monkeypatch.setenv(datasets.MIRROR, str(MIRROR))
    with pytest.raises(ValueError, match="does not fit the charlm task its corpus makes: 64 of 65 token ids"):
        task.batch(1)


def test_only_a_task_that_reads_a_public_corpus_is_made_from_a_header():
    adding = engine.make_task("adding")
    with pytest.raises(ValueError, match="reads no public corpus"):
        engine.tasks.header_task("adding", adding.spec, ("a",))
    model, _, _ = shipped("masked-lm-prose")
    with pytest.raises(ValueError, match="a model of the masked_lm task, not of 'word_lm'"):
        engine.tasks.header_task("word_lm", model.spec, model.vocab)
    with pytest.raises(ValueError, match="has no parameter corpus"):
        engine.tasks.header_task("masked_lm", model.spec, model.vocab, corpus="prose")


def test_a_translators_checkpoint_carries_its_french_words(no_corpora):
    model, task = from_header("translate-gru")
    data = engine.to_bytes(model)
    assert engine.checkpoint.target_vocab_of(data) == model.target_vocab == task.target_vocab
    assert len(model.target_vocab) == model.spec.output_size
    assert engine.from_bytes(data).target_vocab == model.target_vocab
    assert engine.load(PRETRAINED / "charlm-shakespeare-lstm.safetensors").target_vocab is None  # one vocabulary

    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + length])
    header["__metadata__"]["target_vocab"] = json.dumps(list(model.target_vocab[:-1]))  # one word short
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with pytest.raises(ValueError, match=f"has {len(model.target_vocab) - 1} entries for {len(model.target_vocab)} "
                                         "output classes"):
        engine.from_bytes(struct.pack("<Q", len(text)) + text + data[8 + length:])


def test_a_translator_is_refused_against_a_task_of_other_french_words(no_corpora):
    model, task = from_header("translate-gru")
    model.target_vocab = model.target_vocab[:4] + tuple(reversed(model.target_vocab[4:]))
    with pytest.raises(ValueError, match="token ids mean other tokens"):
        engine.Trainer(model, task, engine.TrainConfig())
