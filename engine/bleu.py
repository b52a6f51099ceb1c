"""Corpus BLEU (Papineni et al. 2002) of a translation model's decodings, from sacrebleu.

A hypothesis and its references are the task's tokens joined by spaces (lower-cased words and
punctuation marks, engine.tasks.translate.tokens), so sacrebleu is told they are tokenised already
(`tokenize="none"`: n-grams of exactly those tokens); otherwise its defaults (exponential
smoothing, 0-100; signature `case:mixed|eff:no|tok:none|smooth:exp`). A source sentence may
have several references (Tatoeba gives many English sentences more than one French translation):
all of them count, as BLEU defines it. Decoding is greedy (the most likely word each step) or a
beam search of a given width (engine.beam_search), each cut at its first </s>.

sacrebleu is imported when a score is asked for, so the engine's other modules never need it.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .beam import beam_search
from .config import check_int

# Sentences decoded greedily at once: their logits are 64 x 31 steps x 12,000 French words, 95 MB.
GREEDY_CHUNK = 64


def corpus_bleu(hypotheses: list[str], references: list[list[str]]) -> float:
    """sacrebleu's corpus BLEU (0-100) of hypotheses [N] against references [N][k_i], each
    hypothesis with one or more references of its own. ValueError for mismatched lengths or a
    hypothesis without a reference."""
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses and {len(references)} reference lists; give one list each")
    if not hypotheses or not all(references):
        raise ValueError("every hypothesis needs at least one reference, and there must be one hypothesis")
    width = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]  # [k][N]
    # force: the text is tokenised on purpose (else sacrebleu warns of lines ending in " .")
    return sacrebleu.corpus_bleu(hypotheses, streams, tokenize="none", force=True).score


@torch.no_grad()
def translate(model: nn.Module, task, x: Tensor, width: int = 1) -> list[list[str]]:
    """Each source of x [N, S] decoded into target words, up to its first </s>: greedily with
    width 1 (one batched pass), else by beam search of that width, one source at a time."""
    check_int("width", width, 1, 100)
    was_training = model.training
    model.eval()
    try:
        if width == 1:
            ids = torch.cat([model(part).argmax(dim=-1) for part in x.split(GREEDY_CHUNK)])  # [N, T_out]
            return [task.target_words(row) for row in ids]
        return [task.target_words(beam_search(model, source, width).best.tokens) for source in x]
    finally:
        model.train(was_training)


def held_out_bleu(model: nn.Module, task, width: int = 1, sentences: int | None = None) -> float:
    """Corpus BLEU of the model's translations of the task's held-out sentences against all
    their references (task.reference_sources, task.references): the first `sentences` of them (a
    fair subset, the split being shuffled), or all."""
    hypotheses = [" ".join(words) for words in translate(model, task, task.reference_sources[:sentences], width)]
    return corpus_bleu(hypotheses, task.references[:sentences])
