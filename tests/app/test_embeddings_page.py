"""The Embeddings page: word2vec trained on the shipped prose through the page's own controls, and
every read-out it draws against engine/embeddings.py on the same vectors: the one-hot and learned
cosines, the projection, the neighbours, the analogy, the axis. Bad words get a message."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.session.embeddings import MAX_STEP_MACS, EmbeddingRun, check_config, step_macs
from engine import embeddings as readouts
from engine.word2vec import Word2VecConfig

from .conftest import MAIN, chart, plotted

EMBEDDINGS = nav.PATHS["embeddings"]


@pytest.fixture(scope="module")
def trained() -> AppTest:
    """The page after 300 steps: enough for the vectors to differ from their start."""
    at = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(EMBEDDINGS).run()
    at.session_state["embeddings"].run.step(300)
    return at.run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def vectors(at: AppTest):
    embedding = at.session_state["embeddings"]
    return embedding.run.vectors(), embedding.run.words


def table(at: AppTest, index: int) -> list[tuple[str, float]]:
    frame = at.dataframe[index].value
    return list(zip(frame["word"], frame["cosine"]))


def test_the_neighbours_and_the_analogy_are_the_engines_on_the_trained_vectors(trained):
    no_exception(trained)
    v, words = vectors(trained)
    assert trained.session_state["embeddings"].run.steps_done == 300
    expected = [(w, round(c, 3)) for w, c in readouts.nearest(v, words, "mother", 10)]
    assert table(trained, 0) == expected
    analogy = [(w, round(c, 3)) for w, c in readouts.analogy(v, words, "mrs", "mr", "he")]
    assert table(trained, 1) == analogy


def test_one_hot_is_the_identity_and_the_learned_panel_the_vectors_cosines(trained):
    spec = chart(trained, "one-hot against learned")
    one_hot, learned = spec["data"]
    words = ["mr", "mrs", "he", "she", "morning", "evening", "brother", "sister"]
    assert one_hot["x"] == words and learned["y"] == words
    assert np.array(plotted(one_hot["z"])) == pytest.approx(np.eye(8))
    v, vocab = vectors(trained)
    assert np.array(plotted(learned["z"])) == pytest.approx(readouts.cosines(v, vocab, words).numpy(), abs=1e-6)
    assert not np.allclose(plotted(learned["z"]), np.eye(8), atol=0.05)  # dense vectors are not orthogonal


def test_the_projection_plots_the_pca_of_the_most_frequent_words(trained):
    spec = chart(trained, "projected to 2-D")
    points = spec["data"][0]
    run = trained.session_state["embeddings"].run
    ids = readouts.sample_words(run.vocab.counts, 500, "frequent", seed=0)
    flat = readouts.pca(run.vectors()[ids])
    assert plotted(points["x"]) == pytest.approx(flat.coords[:, 0].tolist(), abs=1e-5)
    assert plotted(points["y"]) == pytest.approx(flat.coords[:, 1].tolist(), abs=1e-5)
    assert [c[0] for c in points["customdata"]] == [run.words[i] for i in ids.tolist()]
    assert "of the variance" in spec["layout"]["xaxis"]["title"]["text"]


def test_the_axis_places_each_word_as_the_engine_does(trained):
    spec = chart(trained, "along the axis he → she")
    v, words = vectors(trained)
    placed = ["mr", "mrs", "father", "mother", "brother", "sister", "husband", "wife", "son", "daughter", "sir",
              "lady", "man", "woman"]
    positions = dict(zip(placed, readouts.axis(v, words, "he", "she", placed).tolist()))
    bars = spec["data"][0]
    assert dict(zip(bars["y"], plotted(bars["x"]))) == pytest.approx(positions, abs=1e-6)


def test_a_word_not_in_the_vocabulary_gets_the_engines_suggestions_and_the_page_carries_on(trained):
    trained.text_input(key="embedding_word").input("mothr").run()
    no_exception(trained)
    said = " ".join(w.value for w in trained.warning)
    assert "'mothr' is not in the vocabulary" in said and "mother" in said
    trained.text_input(key="embedding_axis_words").input("mr, zzzq").run()
    no_exception(trained)
    assert any("'zzzq' is not in the vocabulary" in w.value for w in trained.warning)
    assert trained.session_state["embeddings"].run.steps_done == 300  # nothing trained was lost


def test_step_trains_one_step_and_new_settings_train_afresh_with_them():
    at = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(EMBEDDINGS).run()
    at.button(key="embedding_step").click().run()
    no_exception(at)
    embedding = at.session_state["embeddings"]
    assert embedding.run.steps_done == 1
    at.selectbox(key="embedding_dim").set_value(25).run()
    at.button(key="embedding_rebuild").click().run()
    no_exception(at)
    assert embedding.cfg.dim == 25 and embedding.run.steps_done == 0 and embedding.run.vectors().shape[1] == 25


def test_settings_over_the_budget_are_refused_on_the_page_and_the_vectors_kept():
    check_config(Word2VecConfig(dim=100, window=8, negatives=10))
    widest = Word2VecConfig(dim=300, window=10, negatives=20)
    assert step_macs(widest) > MAX_STEP_MACS
    with pytest.raises(ValueError, match="over this page's limit of 2e.07 for a CPU a class shares; lower the"):
        EmbeddingRun(widest)
    at = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(EMBEDDINGS).run()
    embedding = at.session_state["embeddings"]
    at.button(key="embedding_step").click().run()
    for key, value in (("embedding_dim", 300), ("embedding_window", 10), ("embedding_negatives", 20)):
        at.selectbox(key=key).set_value(value)
    at.run().button(key="embedding_rebuild").click().run()
    no_exception(at)
    assert any("Those settings were not used" in e.value and "lower the dimensions" in e.value for e in at.error)
    assert embedding.cfg == Word2VecConfig() and embedding.run.steps_done == 1


def test_a_model_that_reads_values_is_offered_the_sentiment_lstm_whose_words_then_read_out():
    at = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(EMBEDDINGS).run()
    no_exception(at)
    assert any("reads values, not tokens" in i.value for i in at.info)  # the adding LSTM's
    at.button(key="embedding_open_sentiment").click().run()
    no_exception(at)
    lab = at.session_state["lab"]
    assert lab.setup.task == "sentiment" and lab.origin == "sentiment-lstm"
    vectors, vocab = readouts.token_embedding(lab.model)
    token = at.text_input(key="embedding_your_token").value
    nearest = [(w, round(c, 3)) for w, c in readouts.nearest(vectors, vocab, token, 14) if w not in ("<pad>", "<unk>")]
    assert table(at, 2) == nearest[:10]
    spec = chart(at, "of your model's")
    shown = [c[0] for c in spec["data"][0]["customdata"]]
    assert not any(t.startswith("<") and t.endswith(">") for t in shown)  # no <pad> or <unk>
    assert at.session_state["embeddings"].run.steps_done == 0  # the word2vec run is its own
