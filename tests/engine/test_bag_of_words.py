"""The bag-of-words baseline: logistic regression on token counts, blind to order by construction,
right where one token decides, and the figure the sentiment tasks report for their own split."""
import torch

import engine
from engine.bag_of_words import bag_of_words_accuracy, counts


def test_counts_are_each_tokens_occurrences_without_padding():
    x = torch.tensor([[0, 0, 2, 3, 2], [1, 3, 3, 3, 0]])
    assert counts(x, 4, pad_id=0).to_dense().tolist() == [[0, 0, 2, 1], [0, 1, 0, 3]]


def test_one_deciding_token_is_learnt_and_order_changes_nothing():
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(2, 20, (400, 12), generator=generator)  # [N, T] noise tokens
    y = torch.randint(0, 2, (400,), generator=generator)  # [N]
    x[:, 5] = y  # token 0 or 1 says the class
    train, test = slice(0, 300), slice(300, 400)
    exact = bag_of_words_accuracy(x[train], y[train], x[test], y[test], 20, 2, pad_id=None)
    assert exact == 1.0
    shuffled = x[:, torch.randperm(12, generator=generator)]  # every row's tokens in another order
    assert bag_of_words_accuracy(shuffled[train], y[train], shuffled[test], y[test], 20, 2, pad_id=None) == exact


def test_a_review_tasks_baseline_is_fitted_on_its_own_split():
    task = engine.make_task("sentiment", seq_len=20)
    what, value = task.baseline_metric
    assert what == "bag of words"
    assert value == bag_of_words_accuracy(task.train_x, task.train_y, task.test_x, task.test_y, len(task.vocab), 2,
                                          task.spec.pad_id)
    assert engine.make_task("adding").baseline_metric is None
