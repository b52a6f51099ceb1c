"""The shipped review set: short generated film reviews where word order matters.

Negations ("was not good", "never boring") flip a sentence, and "but" makes the second clause
decide, so a bag of words cannot score full marks and a recurrent model has something to learn.
Run `python -m engine.tasks.reviews` to rebuild engine/data/reviews.csv.
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

REVIEWS_CSV = Path(__file__).resolve().parent.parent / "data" / "reviews.csv"

POSITIVE = ("good", "great", "wonderful", "brilliant", "moving", "funny", "gripping", "beautiful", "clever", "charming")
NEGATIVE = ("bad", "boring", "dull", "awful", "terrible", "clumsy", "predictable", "tedious", "weak", "lifeless")
SUBJECTS = ("the film", "the movie", "the acting", "the plot", "the script", "the ending", "the music", "the cast",
            "the story")
INTENSIFIERS = ("", "", "really ", "very ", "truly ", "quite ")
FILLER = (
    "i saw it on a sunday.",
    "it runs about two hours.",
    "my friend picked it.",
    "the cinema was full.",
    "it is based on a novel.",
)


def clause(rng: random.Random) -> tuple[str, int]:
    """A clause and its polarity (+1 or -1); negation flips the adjective's polarity."""
    positive = rng.random() < 0.5
    adjective = rng.choice(POSITIVE if positive else NEGATIVE)
    subject = rng.choice(SUBJECTS)
    form = rng.randrange(4)
    if form == 0:
        return f"{subject} was {rng.choice(INTENSIFIERS)}{adjective}", 1 if positive else -1
    if form == 1:
        return f"{subject} was not {adjective}", -1 if positive else 1
    if form == 2:
        return f"{subject} was never {adjective}", -1 if positive else 1
    return f"{subject} was not {adjective} at all", -1 if positive else 1


def review(rng: random.Random) -> tuple[str, str]:
    """One review of 1-3 sentences; the label is the sign of the sentences' sum."""
    while True:
        sentences, score = [], 0
        for _ in range(rng.randint(1, 3)):
            first, polarity = clause(rng)
            if rng.random() < 0.3:  # "X, but Y": the clause after "but" decides the sentence
                second, polarity = clause(rng)
                first = f"{first}, but {second}"
            sentences.append(first + ".")
            score += polarity
        if rng.random() < 0.4:
            sentences.insert(rng.randrange(len(sentences) + 1), rng.choice(FILLER))
        if score != 0:
            return " ".join(sentences), "positive" if score > 0 else "negative"


def generate_reviews(count: int = 2000, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [review(rng) for _ in range(count)]


def main() -> None:
    REVIEWS_CSV.parent.mkdir(exist_ok=True)
    with REVIEWS_CSV.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["review", "sentiment"])
        writer.writerows(generate_reviews())
    print(f"wrote {REVIEWS_CSV}")


if __name__ == "__main__":
    main()
