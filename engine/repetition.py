"""How much of a generated text repeats itself: seq-rep-n (Welleck et al. 2020, "Neural Text Generation with
Unlikelihood Training", section 5), the share of a continuation's n-grams of words that are repeats of one
earlier in it, 1 - |unique n-grams| / |n-grams|. Greedy and beam decoding fall into loops and score high;
sampling scores near 0 (Holtzman et al. 2020)."""
from __future__ import annotations

SEQ_REP_N = 4  # Welleck et al.'s seq-rep-4


def seq_rep(text: str, n: int = SEQ_REP_N) -> float | None:
    """1 - unique / all of the n-grams of `text`'s words (split at white space); None with no n-gram (fewer
    than n words)."""
    if n < 1:
        raise ValueError(f"an n-gram has at least one word, got n = {n}")
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return None
    return 1 - len(set(grams)) / len(grams)
