"""A bag-of-words baseline for a classification task whose inputs are tokens: what the tokens say
with their order thrown away.

Logistic regression on how often each token occurs in a sample (the same tokens the sequence
model reads: a review's last seq_len words or characters, padding left out), fitted on the
task's training split and scored on its held-out split. Beside a recurrent model's held-out
accuracy on the same split it shows what word order adds (issue 16: "Sentiment on real reviews").
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

L2 = 1e-3  # on the token weights: keeps a token seen in one review from deciding alone
MAX_ITERATIONS = 100  # L-BFGS iterations


def counts(x: Tensor, vocab_size: int, pad_id: int | None) -> Tensor:
    """Sparse [N, V]: how often each token occurs in each sample x [N, T], padding not counted
    (an IMDB-size upload's dense counts would take gigabytes)."""
    rows = torch.arange(len(x)).repeat_interleave(x.shape[1])  # [N*T]
    tokens = x.reshape(-1).long()  # [N*T]
    keep = tokens != pad_id if pad_id is not None else torch.ones_like(tokens, dtype=torch.bool)
    index = torch.stack([rows[keep], tokens[keep]])  # [2, kept]
    ones = torch.ones(index.shape[1])  # [kept]
    return torch.sparse_coo_tensor(index, ones, (len(x), vocab_size), check_invariants=True).coalesce()


def bag_of_words_accuracy(train_x: Tensor, train_y: Tensor, test_x: Tensor, test_y: Tensor, vocab_size: int,
                          classes: int, pad_id: int | None) -> float:
    """Held-out accuracy of logistic regression on token counts, fitted by L-BFGS on the training
    rows. Deterministic: the weights start at 0."""
    train, test = counts(train_x, vocab_size, pad_id), counts(test_x, vocab_size, pad_id)  # [N, V] sparse
    weight = torch.zeros(vocab_size, classes, requires_grad=True)  # [V, C]
    bias = torch.zeros(classes, requires_grad=True)  # [C]
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=MAX_ITERATIONS, line_search_fn="strong_wolfe")

    def loss() -> Tensor:
        optimizer.zero_grad()
        logits = torch.sparse.mm(train, weight) + bias  # [N, C]
        value = nn.functional.cross_entropy(logits, train_y) + L2 * weight.square().sum()
        value.backward()
        return value

    with torch.enable_grad():
        optimizer.step(loss)
    with torch.no_grad():
        predicted = (torch.sparse.mm(test, weight) + bias).argmax(-1)  # [N_test]
    return (predicted == test_y).float().mean().item()
