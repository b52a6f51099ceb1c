"""What the project reads from outside: each public file as its source published it (a public
repository's file at a pinned commit, its sha256, size, licence and attribution), and each corpus the
tasks read, made by code from those files (engine/datasets/cuts.py) and recorded by its own sha256.

A file's `path` is where it sits in the cache and in a mirror folder (`<dataset>/<file name>`), the
layout of ../shared/data/ that the tests and CI read as the mirror.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from . import cuts

RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class PublicFile:
    path: str  # in the cache and a mirror: "<dataset>/<file name>"
    repository: str  # on GitHub, owner/name
    commit: str  # pinned: the bytes a rebuild reads whatever the repository's branch becomes
    source_path: str  # the file's path in the repository
    sha256: str
    size: int  # bytes
    licence: str
    attribution: str
    url: str = ""  # where it is downloaded from; "" means the raw address of source_path at commit

    @property
    def address(self) -> str:
        return self.url or f"{RAW}/{self.repository}/{self.commit}/{quote(self.source_path)}"


@dataclass(frozen=True)
class Corpus:
    """A text a task reads, cut from public files by `cut` (their bytes by path -> the corpus's bytes)."""
    name: str
    title: str
    files: tuple[str, ...]  # PublicFile paths, in the order `cut` reads them
    cut: Callable[[dict[str, bytes]], bytes]
    sha256: str  # of the cut: the same on every machine, so a card can name its data by it
    size: int  # bytes of the cut
    needed_by: str  # what in the app reads it, for the message a page shows when it is missing
    how_cut: str
    licence: str
    attribution: str


CC_BY_2 = "CC BY 2.0 (Tatoeba's sentences; https://creativecommons.org/licenses/by/2.0/)"
GUTENBERG = ("public domain (published 1811-1817; Project Gutenberg's text, its header, footer and licence cut off "
             "as its licence's section 1.C allows)")
SENTENCES_LICENCE = "CC BY 4.0 (UCI Machine Learning Repository, dataset 331)"
SENTENCES_ATTRIBUTION = ("Dimitrios Kotzias, Misha Denil, Nando de Freitas and Padhraic Smyth, \"From Group to "
                         "Individual Labels using Deep Features\", KDD 2015")
SENTENCES_COMMIT = "9642488481140b1697ff2dea5637596c4cd43c69"
SENTENCES_FOLDER = "sentiment labelled sentences"

FILES = {f.path: f for f in (
    PublicFile("tinyshakespeare/input.txt", "karpathy/char-rnn", "6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e",
               "data/tinyshakespeare/input.txt",
               "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", 1_115_394,
               "Shakespeare's text, public domain (the repository: MIT)",
               "Andrej Karpathy's char-rnn (2015): data/tinyshakespeare/input.txt"),
    *(PublicFile(f"austen/{number}.txt", repository, commit, f"{number}.txt", digest, size, GUTENBERG,
                 f"Jane Austen, {title}; Project Gutenberg e-text {number}, as GITenberg keeps it")
      for number, title, repository, commit, digest, size in cuts.AUSTEN),
    *(PublicFile(f"sentiment-labelled-sentences/{name}", "omarsar/dm_2018_hw_1", SENTENCES_COMMIT,
                 f"{SENTENCES_FOLDER}/{name}", digest, size, SENTENCES_LICENCE, SENTENCES_ATTRIBUTION)
      for name, digest, size in cuts.SENTENCE_FILES),
    PublicFile("tatoeba-eng-fra/eng-fra-5000.txt", "NJUxlj/seq2seq-attention-translation",
               "b20755b1c81f2d82526ab967dbc8ec6465f22f14", "data/eng-fra.txt",
               "d952b56a181da5270b7bb4ded3f3bbe61e67a9b1de0e0fbc1d46438c71fb55a7", 562_864,
               "CC BY 2.0 FR (Tatoeba's sentences; https://creativecommons.org/licenses/by/2.0/fr/)",
               "tatoeba.org: every line names its two sentences' numbers and authors"),
    PublicFile("tatoeba-eng-fra/fra-eng-2017-09-29.zip", "genimind/seq2seq", "843b8bc40396fbea4ac9171097122aacfc8b9660",
               "fra-eng.zip", "16c4f7d0df9e7c5e6c54cdb0447f3f4a18a55052ff5e2e0b27dd4a06c0e49d04", 2_951_390,
               CC_BY_2, "www.manythings.org/anki and tatoeba.org (manythings.org's English-French file of 2017-09-29)"),
)}

CORPORA = {c.name: c for c in (
    Corpus("shakespeare", "Tiny Shakespeare", ("tinyshakespeare/input.txt",), cuts.unchanged,
           "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", 1_115_394,
           "training a character model on Shakespeare and its held-out score (Generate text's shipped "
           "Shakespeare models generate without it)",
           "char-rnn's file, unchanged: speeches from the plays, each headed by its speaker's name; the task holds "
           "out its last 10%, as nanoGPT's shakespeare_char does",
           FILES["tinyshakespeare/input.txt"].licence, FILES["tinyshakespeare/input.txt"].attribution),
    Corpus("prose", "Four novels of Jane Austen", tuple(f"austen/{a[0]}.txt" for a in cuts.AUSTEN), cuts.austen,
           "660c0449d1bc386ce369a229fa2c3c80d3ae6fe384a9f0e53424a3b46ef459e4", 2_456_986,
           "word2vec on the Embeddings page, the masked and causal language models (BERT and GPT) and their "
           "held-out scores",
           "Sense and Sensibility, Emma, Northanger Abbey and Persuasion, each from its title line to the line "
           "before Project Gutenberg's end marker, CRLF made LF, joined by three blank lines",
           GUTENBERG, "Jane Austen (1775-1817)"),
    Corpus("sentences", "Sentiment Labelled Sentences (UCI)",
           tuple(f"sentiment-labelled-sentences/{name}" for name, _, _ in cuts.SENTENCE_FILES), cuts.sentences,
           "2ca97733f52e6463bdf4bd81e1650eb3b9a3f20cfab77670aab674554c0f9440", 262_680,
           "the sentiment task's real review sentences (Pretrained embeddings, its lesson, and word vectors)",
           "3,000 review sentences labelled by hand, 1,000 each from IMDB, Amazon and Yelp, as one "
           "review,sentiment,source,split CSV; 100 of each source and label held out by random.Random(0)",
           SENTENCES_LICENCE, SENTENCES_ATTRIBUTION),
    Corpus("eng-fra-5000", "Tatoeba English-French, 5,000 short pairs", ("tatoeba-eng-fra/eng-fra-5000.txt",),
           cuts.unchanged, "d952b56a181da5270b7bb4ded3f3bbe61e67a9b1de0e0fbc1d46438c71fb55a7", 562_864,
           "the translate task (training a translator, its held-out BLEU; the shipped translator translates "
           "without it)",
           "the first 5,000 lines of manythings.org's English-French file (1-5 English words), each with its "
           "Tatoeba attribution; unchanged",
           FILES["tatoeba-eng-fra/eng-fra-5000.txt"].licence, FILES["tatoeba-eng-fra/eng-fra-5000.txt"].attribution),
    Corpus("eng-fra-2017", "Tatoeba English-French of 2017-09-29 (142,787 pairs)",
           ("tatoeba-eng-fra/fra-eng-2017-09-29.zip",), cuts.fra_txt,
           "2546838ae46e0eac4c02ab7032ea0a02a006074a5340077a36a9444f41e02888", 10_009_515,
           "the translate task at real size (corpus eng-fra-2017: training a translator on it, the shipped "
           "translator's held-out BLEU and samples; the shipped translator translates typed sentences without it)",
           "fra.txt out of the zip, unchanged: English<TAB>French, one pair a line, 1 to 30+ English words",
           CC_BY_2, FILES["tatoeba-eng-fra/fra-eng-2017-09-29.zip"].attribution),
)}


def files_of(names: list[str] | tuple[str, ...]) -> list[PublicFile]:
    """The public files the named corpora are cut from, each once, in registry order; KeyError-free:
    a name that is no corpus is a ValueError naming the ones there are."""
    unknown = [name for name in names if name not in CORPORA]
    if unknown:
        raise ValueError(f"no corpus is called {', '.join(unknown)}; the corpora are {', '.join(CORPORA)}")
    wanted = {path for name in names for path in CORPORA[name].files}
    return [f for path, f in FILES.items() if path in wanted]
