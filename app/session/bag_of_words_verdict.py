"""Who is ahead, the network or the bag of words beside it, said plainly under a sentiment run's curve.

A bag of words (engine.bag_of_words: logistic regression on word counts) is the line a review model must beat.
With few labels it often wins: it needs only which words lean which way, while a recurrent network must also
learn to carry them, in order, to the last word. Wang and Manning 2012 ("Baselines and Bigrams") found
classifiers on word and bigram counts matching or beating published models on sentences and full reviews alike.
When the count is ahead the page says so, and what the network lacks, rather than leave a student to wonder what
they did wrong.
"""
from __future__ import annotations

CITED = (" Wang and Manning 2012 found classifiers on word and bigram counts matching or beating published models "
         "on sentences and full reviews alike.")


def verdict(at: str | None, trained: bool, network: float, bag: float, labelled: int, median: float,
            unit: str = "words", what: str = "reviews", who: str = "the network", helps: str = "") -> str:
    """One or two sentences: the latest held-out accuracy of `who` (a network, or the best of several) against
    the bag of `unit`'s, `at` the step as the page says it ("step 25"; None: the caption has just said it),
    `trained` whether it has trained at all; when the bag is ahead, what the network lacks: `labelled` training
    `what` of a `median` length in `unit` as read; `helps`, what the page offers to change (a sentence)."""
    at = f" At {at}" if at is not None else ""
    subject = f"{at} {who}" if at else f" {who[0].upper()}{who[1:]}"
    if not trained:
        return f"{subject}, untrained, scores {network:.1%}; the bag of {unit}, {bag:.1%}, is the line it must pass."
    if network == bag:
        return f"{subject} is level with the bag of {unit} ({bag:.1%})."
    if network > bag:
        return (f"{subject} is ahead of the bag of {unit} ({network:.1%} against {bag:.1%}): it reads what the counts "
                "miss.")
    lead = f"{at} **the bag of {unit} is ahead**" if at else f" **The bag of {unit} is ahead**"
    return (f"{lead} ({bag:.1%} against {who}'s {network:.1%}). Counting {unit} needs only which {unit} lean which "
            f"way; a network must also learn to carry them, in order, to the last, from {labelled:,} labelled {what} "
            f"of {median:,.0f} {unit} on median as read." + (CITED if unit == "words" else "")
            + (f" {helps}" if helps else ""))
