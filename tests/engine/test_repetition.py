"""seq-rep-n as Welleck et al. 2020 define it, on texts counted by hand."""
import pytest

from engine.repetition import seq_rep


def test_a_loop_repeats_and_fresh_words_do_not():
    loop = "the king is dead the king is dead the king is dead"  # 12 words: 9 4-grams, 4 of them distinct
    assert seq_rep(loop) == pytest.approx(1 - 4 / 9)
    assert seq_rep("one two three four five six") == 0.0  # 3 4-grams, all distinct
    assert seq_rep("a a a a a", n=1) == pytest.approx(1 - 1 / 5)
    assert seq_rep("a b\n  a b", n=2) == pytest.approx(1 - 2 / 3)  # words split at any white space


def test_too_few_words_have_no_score_and_n_must_be_positive():
    assert seq_rep("three words only") is None
    with pytest.raises(ValueError, match="at least one word"):
        seq_rep("a b", n=0)
