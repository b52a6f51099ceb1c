"""A model knows the words it was trained on: its vocabulary travels in its checkpoint, and a
Trainer refuses a task whose ids mean other words (the same sizes, silently at chance before)."""
import pytest
import torch

import engine

FILMS = dict(subjects=["film", "plot", "cast", "score"],
             good=["fine", "good", "great", "superb"], bad=["awful", "bad", "dull", "poor"])
MEALS = dict(subjects=["soup", "tea", "cake", "bread"],
             good=["fresh", "hot", "sweet", "tasty"], bad=["bland", "cold", "sour", "stale"])


def reviews_csv(subjects: list[str], good: list[str], bad: list[str]) -> str:
    """A review,sentiment CSV: every subject with every good and every bad word."""
    rows = [f"the {s} was {w},{label}"
            for s in subjects for words, label in ((good, "positive"), (bad, "negative")) for w in words]
    return "review,sentiment\n" + "\n".join(rows) + "\n"


def two_tasks():
    """Two sentiment tasks of the same shape whose ids mean different words: the same sentences
    about films and about meals, whose words sort into other ids."""
    films, meals = (engine.make_task("sentiment", seq_len=4, max_vocab=16, csv_text=reviews_csv(**words))
                    for words in (FILMS, MEALS))
    assert films.spec == meals.spec and films.vocab != meals.vocab  # only the words tell them apart
    return films, meals


def rows(task):
    return torch.cat([task.train_x, task.test_x]), torch.cat([task.train_y, task.test_y])  # [N, T], [N]


def trained_on(task):
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, embedding_dim=4), task, seed=0)
    model.vocab = task.vocab  # what build_model(cfg, task) records
    engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=8)).step(3)
    return model


def test_the_vocabulary_travels_in_the_checkpoint():
    films, _ = two_tasks()
    loaded = engine.from_bytes(engine.to_bytes(trained_on(films)))
    assert loaded.vocab == films.vocab and isinstance(loaded.vocab, tuple)
    engine.Trainer(loaded, films, engine.TrainConfig())  # its own data: accepted


def test_a_trainer_refuses_a_task_whose_ids_mean_other_words_and_names_them():
    films, meals = two_tasks()
    loaded = engine.from_bytes(engine.to_bytes(trained_on(films)))
    differ = [i for i, (a, b) in enumerate(zip(films.vocab, meals.vocab)) if a != b]
    first = differ[0]
    with pytest.raises(ValueError) as info:
        engine.Trainer(loaded, meals, engine.TrainConfig())
    message = str(info.value)
    assert f"{len(differ)} of {len(films.vocab)} token ids mean other tokens" in message
    assert f"id {first} is {films.vocab[first]!r} in the model, {meals.vocab[first]!r} in this task" in message
    assert "the data it was trained on" in message


def test_a_model_without_a_vocabulary_is_taken_on_trust():
    films, meals = two_tasks()
    old = trained_on(films)
    old.vocab = None  # saved before checkpoints carried vocabularies
    assert engine.from_bytes(engine.to_bytes(old)).vocab is None
    from_spec = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8), films.spec)
    for model in (engine.from_bytes(engine.to_bytes(old)), from_spec):
        engine.Trainer(model, meals, engine.TrainConfig())


def test_the_mismatch_is_what_made_the_scores_fall():
    """The refused case is the harmful one: a model that reads every film review right reads the
    meal reviews as the film reviews with the same ids, and scores what those labels give."""
    films, meals = two_tasks()
    model = trained_on(films)
    engine.Trainer(model, films, engine.TrainConfig(lr=1e-2, batch_size=16)).step(150)
    film_label = dict(zip(map(tuple, rows(films)[0].tolist()), rows(films)[1].tolist()))
    x, y = rows(meals)
    # every meal review's ids are a film review's: the model reads it as that one
    as_films = torch.tensor([film_label[ids] for ids in map(tuple, x.tolist())])  # [N]
    model.eval()
    with torch.no_grad():
        assert films.metric(model(rows(films)[0]), rows(films)[1]) == 1.0
        other = meals.metric(model(x), y)
    assert other == pytest.approx((as_films == y).float().mean().item()) and other < 1.0
