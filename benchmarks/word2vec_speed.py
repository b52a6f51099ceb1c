"""word2vec on the shipped prose (issue 30): how fast engine.word2vec trains against gensim's
Word2Vec and against the same batches through autograd, what each has learned in that time, what
Mikolov's subsampling threshold t does on a corpus this small, and how many words a 2-D projection
handles within a 2-second rerun.

Same corpus (the Austen prose of engine.datasets, cut by engine.prose.words), vocabulary (min_count 5), 50
dimensions, window 5, 5 negatives, t = 1e-3, starting learning rate 0.025, epochs, one thread, one
process. gensim is not a dependency of the project: install it anywhere and put it on the path,

    pip install --target /tmp/gensim-lib --no-deps gensim==4.4.0 scipy smart_open wrapt
    PYTHONPATH=.:/tmp/gensim-lib python benchmarks/word2vec_speed.py [--quick]

and without it the script measures the other two and says gensim was not found.
"""
from __future__ import annotations

import statistics
import time

import torch
from timing import run_alone, table
from torch import nn

from engine.embeddings import closer_share, pca
from engine.prose import RELATED, prose_words
from engine.rng import stream
from engine.word2vec import SkipGramBatches, Word2Vec, Word2VecConfig, keep_probability, scores, sgns_loss

CFG = Word2VecConfig(dim=50, window=5, negatives=5, min_count=5, subsample=1e-3, centres=256, lr=0.025)
BUDGET = 2.0  # seconds: a rerun the page can afford
SIZES = (1_000, 5_000, 10_000, 50_000, 100_000, 200_000, 500_000, 1_000_000)


def pair_share(vectors: torch.Tensor, vocab) -> float:
    """Mean over engine.prose.RELATED of the share of words nearer to a than b is (0.5: chance)."""
    return statistics.mean(closer_share(vectors, vocab, a, b) for a, b in RELATED)


def ours(tokens, epochs: int) -> tuple[float, torch.Tensor, tuple]:
    run = Word2Vec(tokens, CFG)
    start = time.perf_counter()
    while run.epochs < epochs:
        run.step(1)
    return time.perf_counter() - start, run.vectors(), run.words


def autograd(tokens, epochs: int) -> tuple[float, torch.Tensor, tuple]:
    """The same batches, through autograd: sparse nn.Embedding rows, backward(), torch.optim.SGD."""
    run = Word2Vec(tokens, CFG)  # its vocabulary and starting vectors
    batches = SkipGramBatches(run.ids, run.vocab.counts, CFG, stream(CFG.seed, "batches"))
    v, u = (nn.Embedding.from_pretrained(w.detach().clone(), freeze=False, sparse=True)
            for w in (run.model.input_embedding.weight, run.model.output_embedding.weight))
    optimizer = torch.optim.SGD([v.weight, u.weight], lr=CFG.lr)
    start = time.perf_counter()
    while batches.progress < epochs:
        pairs = batches.next()
        optimizer.zero_grad()
        sgns_loss(*scores(v(pairs.centre), u(pairs.context), u(pairs.negatives))).sum().backward()
        optimizer.step()
    return time.perf_counter() - start, v.weight.detach().clone(), run.words


def gensim(tokens, epochs: int) -> tuple[float, torch.Tensor, tuple] | None:
    """gensim's skip-gram, negative sampling, one worker; the text in gensim's 10,000-word chunks."""
    try:
        from gensim.models import Word2Vec as GensimWord2Vec
    except ImportError:
        return None
    chunks = [list(tokens[i : i + 10_000]) for i in range(0, len(tokens), 10_000)]
    model = GensimWord2Vec(vector_size=CFG.dim, window=CFG.window, negative=CFG.negatives, min_count=CFG.min_count,
                           sample=CFG.subsample, alpha=CFG.lr, sg=1, hs=0, workers=1, seed=CFG.seed)
    model.build_vocab(chunks)
    start = time.perf_counter()
    model.train(chunks, total_examples=len(chunks), epochs=epochs)
    return time.perf_counter() - start, torch.from_numpy(model.wv.vectors.copy()), tuple(model.wv.index_to_key)


def speed(quick: bool) -> str:
    tokens = prose_words()
    epochs = 1 if quick else 3
    words = len(Word2Vec(tokens, CFG).ids)  # the text's words in the vocabulary: one epoch
    rows = []
    for name, train in (("engine.word2vec (SGNS gradient written out)", ours),
                        ("same batches through autograd (sparse nn.Embedding, SGD)", autograd),
                        ("gensim 4.4 Word2Vec (sg=1, negative=5, 1 worker)", gensim)):
        result = train(tokens, epochs)
        if result is None:
            rows.append([name, "not installed", "", "", ""])
            continue
        seconds, vectors, vocab = result
        rows.append([name, f"{seconds:.1f}", f"{words * epochs / seconds:,.0f}", f"{pair_share(vectors, vocab):.4f}",
                     len(vocab)])
    return table(f"Training {epochs} epoch(s) over the prose's {words:,} words (t = {CFG.subsample:g})",
                 ["trainer", "s", "words/s", "related pairs: share nearer", "vocabulary"], rows)


def subsampling(quick: bool) -> str:
    """The same steps under three thresholds: how much of the text an epoch keeps, what is learned."""
    steps = 500 if quick else 3000
    rows = []
    for t in (1e-5, 1e-4, 1e-3):
        cfg = Word2VecConfig(**{**CFG.to_dict(), "subsample": t})
        run = Word2Vec(prose_words(), cfg)
        kept = (keep_probability(run.vocab.counts, t).double() * run.vocab.counts).sum() / run.vocab.counts.sum()
        start = time.perf_counter()
        run.step(steps)
        rows.append([f"{t:g}", f"{kept.item():.1%}", f"{run.epochs:.2f}", f"{time.perf_counter() - start:.1f}",
                     f"{pair_share(run.vectors(), run.words):.4f}"])
    return table(f"Subsampling threshold t, {steps} steps of {CFG.centres} centres",
                 ["t", "text kept an epoch", "epochs", "s", "related pairs: share nearer"], rows)


def projection(quick: bool) -> str:
    """pca() of n random points (its time depends only on the shape), then a plotly scatter of them
    with a label each serialised as a page would send it."""
    rows = []
    for d in (50, 300):
        for n in SIZES[:4] if quick else SIZES:
            points = torch.randn(n, d, generator=torch.Generator().manual_seed(n))
            labels = [f"word{i}" for i in range(n)]
            pca_s = statistics.median(timed(pca, points) for _ in range(3))
            coords = pca(points).coords.numpy()
            figure_s = statistics.median(timed(scatter_json, coords, labels) for _ in range(3))
            rows.append([d, f"{n:,}", f"{pca_s * 1000:.0f}", f"{figure_s * 1000:.0f}",
                         "yes" if pca_s + figure_s <= BUDGET else "no"])
            if pca_s + figure_s > BUDGET:
                break  # larger n only take longer
    return table(f"A 2-D projection of n words: pca() and a plotly Scattergl's JSON (median of 3; budget {BUDGET:g} s)",
                 ["d", "n words", "pca ms", "figure JSON ms", f"within {BUDGET:g} s"], rows)


def scatter_json(coords, labels) -> str:
    import plotly.graph_objects as go

    return go.Figure(go.Scattergl(x=coords[:, 0], y=coords[:, 1], text=labels, mode="markers")).to_json()


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def run(quick: bool) -> str:
    return "\n".join((speed(quick), subsampling(quick), projection(quick)))


if __name__ == "__main__":
    run_alone(run, "1 epoch, 500 steps, projections up to 50,000 words: checks the script runs")
