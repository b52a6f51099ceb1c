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


# English sentence lengths in words (punctuation not counted) that BLEU is given by: Bahdanau et al. (2015),
# Figure 2, draws it against length; Tatoeba's 2017 file has 624 pairs of 16-20 words and 111 longer.
LENGTHS = ((1, 5), (6, 10), (11, 15), (16, 20))
# Held-out sentences of each span a page decodes for BLEU by length (seconds: 800 sentences greedily), and the
# length lesson measures on, so a page's figure and the lesson's ensemble score the same sentences.
PER_LENGTH = 200


def length_groups(lengths: list[int], spans=LENGTHS, most: int | None = None) -> dict[tuple[int, int], list[int]]:
    """The positions in `lengths` of each span's sentences (the first `most` of each, or all), for the spans
    that have any."""
    groups = {(low, high): [i for i, n in enumerate(lengths) if low <= n <= high][:most] for low, high in spans}
    return {span: group for span, group in groups.items() if group}


def bleu_by_length(model: nn.Module, task, width: int = 1, most: int | None = None,
                   spans=LENGTHS) -> dict[tuple[int, int], tuple[int, float]]:
    """(sentences, corpus BLEU) of the held-out English sentences of each span of lengths, the first `most` of
    each (a fair subset: the split is shuffled), decoded with `width`."""
    groups = length_groups(task.reference_lengths, spans, most)
    chosen = [i for group in groups.values() for i in group]
    written = dict(zip(chosen, translate(model, task, task.reference_sources[chosen], width)))
    return {span: (len(group), corpus_bleu([" ".join(written[i]) for i in group],
                                           [task.references[i] for i in group]))
            for span, group in groups.items()}
