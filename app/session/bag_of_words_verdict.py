"""Who is ahead, the network or the bag of words beside it, said plainly under a sentiment run's curve.

A bag of words (engine.bag_of_words: logistic regression on word counts) is the line a review model must beat.
On few labelled reviews of many words it often wins: it needs only which words lean which way, while a
recurrent network must also learn to carry them, in order, to the review's last word (Wang and Manning 2012,
"Baselines and Bigrams", found word-count models hard to beat on full-length reviews). When it is ahead the
page says so and why, rather than leave a student to wonder what they did wrong.
"""
from __future__ import annotations


def verdict(step: int, network: float, bag: float, labelled: int, read: int, unit: str = "words",
            what: str = "reviews", who: str = "the network") -> str:
    """One or two sentences: the latest held-out accuracy of `who` (a network, or the best of several) against
    the bag of words', and when the bag of words is ahead, why it can be (few labels, long texts). The network
    reads up to `read` `unit` (words, or characters) of each of `labelled` training `what`."""
    cited = (" (Wang and Manning 2012 found a bag of words hard to beat on full-length reviews)"
             if unit == "words" else "")
    if network >= bag:
        return (f" At step {step:,} {who} is ahead of the bag of {unit} ({network:.1%} against {bag:.1%}): "
                "it reads something the counts miss.")
    return (f" At step {step:,} **the bag of {unit} is ahead** ({bag:.1%} against {who}'s {network:.1%}). "
            f"Counting {unit} needs only which {unit} lean which way; a network must also learn to carry them, in "
            f"order, through up to {read:,} {unit} to the last, from {labelled:,} labelled {what}. Few labels and "
            f"long texts favour the count{cited}: more labelled reviews, more steps or vectors learned from "
            "unlabelled text are what a network needs.")
