"""Date normalisation: a small translation task with a real alignment pattern.

"21 November 2026", "11/21/26", "21.11.2026", "November 21, 2026" or "21 Nov 2026" in,
"2026-11-21" out, character by character. To write the year the decoder must look at the
year wherever this format puts it; the month's two digits come from a word, or from digits
that sit first (US) or second (European); a two-digit year needs its century guessed (years
50-99 are 19xx, 00-49 are 20xx). Dates are drawn uniformly from 1950-01-01 to 2049-12-31.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..config import ModelConfig
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec
from .reverse import SPECIALS, ReverseTask

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
FIRST_DAY = datetime.date(1950, 1, 1)
LAST_DAY = datetime.date(2049, 12, 31)


def long_form(d: datetime.date) -> str:  # 21 November 2026
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def us_short(d: datetime.date) -> str:  # 11/21/26
    return f"{d.month:02d}/{d.day:02d}/{d.year % 100:02d}"


def european(d: datetime.date) -> str:  # 21.11.2026
    return f"{d.day:02d}.{d.month:02d}.{d.year}"


def us_long(d: datetime.date) -> str:  # November 21, 2026
    return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"


def abbreviated(d: datetime.date) -> str:  # 21 Nov 2026
    return f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}"


FORMATS = (long_form, us_short, european, us_long, abbreviated)
PAD = "<pad>"  # source token 0: sources are padded at the front, so every one ends the same step
SOURCE_CHARS = tuple(sorted(set("0123456789 /.,") | set("".join(MONTHS))))
TARGET_CHARS = tuple("0123456789-")
MAX_SOURCE_LEN = max(len(f(datetime.date(2000, 9, 30))) for f in FORMATS)  # "September 30, 2000": 18
TARGET_LEN = len("2026-11-21")


@dataclass
class DatesTask(Task):
    """x: a date in one of five formats, as character ids [B, 18], front-padded with <pad> (0).
    y: its ISO form "YYYY-MM-DD" as target ids, then <eos> [B, 11] (<sos> 0, <eos> 1, then
    the characters 0-9 and '-')."""

    help: ClassVar[str] = "encoder-decoder: rewrite a date given in one of five formats as YYYY-MM-DD"
    decodes: ClassVar[bool] = True
    symbol_separator: ClassVar[str] = ""  # characters of a date
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=32, embedding_dim=16, bidirectional=True, attention="dot"),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=64, clip_norm=1.0),
        steps=300,
        lesson=(
            "With attention, an encoder-decoder writes dates given in five formats as YYYY-MM-DD, every "
            "one right after 300 steps (5 seconds). Its alignment shows where each output digit comes "
            "from: the year's digits look at the year and the day's at the day, wherever the format "
            "put them, and the month's at the month's name or digits. Without attention the same "
            "network gets 4% of the dates right after 250 steps and needs about 1500 to pass 95%."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.vocab = (PAD,) + SOURCE_CHARS
        self.target_vocab = SPECIALS + TARGET_CHARS
        self.spec = TaskSpec(
            "dates", "encdec", "tokens", input_size=len(self.vocab), output_size=len(self.target_vocab),
            loss="ce", out_len=TARGET_LEN + 1, pad_id=self.vocab.index(PAD),
        )

    def sample(self, batch_size, generator):
        days = torch.randint(0, (LAST_DAY - FIRST_DAY).days + 1, (batch_size,), generator=generator)  # [B]
        styles = torch.randint(0, len(FORMATS), (batch_size,), generator=generator)  # [B]
        dates = [FIRST_DAY + datetime.timedelta(days=int(n)) for n in days]
        sources = [FORMATS[int(s)](d) for s, d in zip(styles, dates)]
        x = torch.stack([self.encode(text) for text in sources])  # [B, 18]
        y = torch.stack([self.encode_target(d.isoformat()) for d in dates])  # [B, 11]
        return x, y

    @property
    def source_len(self) -> int:
        return MAX_SOURCE_LEN  # every source is front-padded to the longest format's length

    def encode(self, text: str) -> torch.Tensor:
        """A date as the model reads it: [18] character ids, front-padded (so a student can type one)."""
        index = {ch: i for i, ch in enumerate(self.vocab)}
        unknown = sorted(set(text) - set(SOURCE_CHARS))
        if unknown:
            raise ValueError(f"characters {unknown!r} do not occur in the date formats; write e.g. '21 November 2026'")
        if not text or len(text) > MAX_SOURCE_LEN:
            raise ValueError(
                f"a date has 1 to {MAX_SOURCE_LEN} characters, e.g. '21 November 2026'; got {len(text):,} characters"
            )
        return torch.tensor([self.spec.pad_id] * (MAX_SOURCE_LEN - len(text)) + [index[ch] for ch in text])  # [18]

    def encode_target(self, iso: str) -> torch.Tensor:
        """"2026-11-21" -> [11] target ids, <eos> last."""
        index = {ch: i for i, ch in enumerate(self.target_vocab)}
        return torch.tensor([index[ch] for ch in iso] + [SPECIALS.index("<eos>")])  # [11]

    def decode(self, ids) -> str:
        """Source ids back to text, without the padding."""
        return "".join(self.vocab[int(i)] for i in ids if int(i) != self.spec.pad_id)

    def decode_target(self, ids) -> str:
        """Target ids (a model's argmax) back to text, up to <eos>."""
        chars = []
        for i in ids:
            if int(i) == SPECIALS.index("<eos>"):
                break
            chars.append(self.target_vocab[int(i)])
        return "".join(chars)

    @property
    def class_names(self):
        return self.target_vocab

    sequence_accuracy = ReverseTask.sequence_accuracy
