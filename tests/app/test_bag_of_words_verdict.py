"""What a sentiment page says of its run against the bag of words: each case in its own words."""
from app.session.bag_of_words_verdict import CITED, verdict


def test_untrained_level_ahead_and_behind_are_each_said_as_they_are():
    assert verdict("step 0", False, 0.5, 0.66, 300, 11) == (
        " At step 0 the network, untrained, scores 50.0%; the bag of words, 66.0%, is the line it must pass.")
    assert verdict(None, True, 0.7, 0.7, 300, 11, who="the frozen run") == (
        " The frozen run is level with the bag of words (70.0%).")
    assert verdict("step 25", True, 0.8, 0.7, 300, 11) == (
        " At step 25 the network is ahead of the bag of words (80.0% against 70.0%): it reads what the counts miss.")
    behind = verdict("step 25", True, 0.6, 0.7, 300, 11.5, what="sentences", helps="More steps would help.")
    assert behind == (" At step 25 **the bag of words is ahead** (70.0% against the network's 60.0%). Counting words "
                      "needs only which words lean which way; a network must also learn to carry them, in order, to "
                      "the last, from 300 labelled sentences of 12 words on median as read." + CITED
                      + " More steps would help.")


def test_the_paper_on_word_counts_is_cited_only_for_words():
    assert CITED not in verdict("step 5", True, 0.5, 0.6, 300, 180, unit="characters")
