"""Each task's data written out as the engine's task makes it (engine/tasks/*.py): the same calls
on the same generator in the same order, hence the same batches. `$name`: a task parameter."""
from string import Template

ADDING = '''

# The data ---------------------------------------------------------------------------------------
# The adding problem (Hochreiter & Schmidhuber 1997): each step carries a value in [0, 1) and a
# marker bit; two steps are marked, one in each half. The target, after the last step, is the sum
# of the two marked values. Always answering 1.0 scores MSE 1/6 ~ 0.167: the line to get below.
SEQ_LEN = $seq_len  # task: seq_len


def batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    T, half = SEQ_LEN, SEQ_LEN // 2
    values = torch.rand(BATCH_SIZE, T, generator=generator)  # [B, T]
    first = torch.randint(0, half, (BATCH_SIZE,), generator=generator)  # [B]: the mark in the first half
    second = torch.randint(half, T, (BATCH_SIZE,), generator=generator)  # [B]: the mark in the second half
    markers = torch.zeros(BATCH_SIZE, T)  # [B, T]
    rows = torch.arange(BATCH_SIZE)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = torch.stack([values, markers], dim=2)  # [B, T, 2]
    y = (values * markers).sum(dim=1, keepdim=True)  # [B, 1]
    return x, y
'''

RECALL = '''

# The data ---------------------------------------------------------------------------------------
# Delayed recall: step 0 shows one of SYMBOLS signal symbols, the next LAG steps random distractors
# (DISTRACTORS other symbols), every step one-hot. After the last step the model names the signal;
# chance is 1 / SYMBOLS.
LAG = $lag  # task: lag
SYMBOLS = $symbols  # task: symbols
DISTRACTORS = $distractors  # task: distractors


def batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    signal = torch.randint(0, SYMBOLS, (BATCH_SIZE,), generator=generator)  # [B]
    noise = SYMBOLS + torch.randint(0, DISTRACTORS, (BATCH_SIZE, LAG), generator=generator)  # [B, L]
    tokens = torch.cat([signal[:, None], noise], dim=1)  # [B, L+1]
    x = F.one_hot(tokens, SYMBOLS + DISTRACTORS).float()  # [B, L+1, S+D]
    return x, signal
'''

PARITY = '''

# The data ---------------------------------------------------------------------------------------
# Parity: is the number of ones so far odd? One bit of memory, flipped by every 1.
SEQ_LEN = $seq_len  # task: seq_len


def batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    bits = torch.randint(0, 2, (BATCH_SIZE, SEQ_LEN), generator=generator)  # [B, T]
    running_parity = bits.cumsum(dim=1) % 2  # [B, T]: 1 where the ones so far are odd
    y = $target
    return bits.unsqueeze(2).float(), y  # x: [B, T, 1]
'''
PARITY_TARGETS = {
    True: "running_parity  # [B, T]: task: running=True, a target after every bit",
    False: "running_parity[:, -1]  # [B]: task: running=False, one target after the last bit",
}

SINE_FORECAST = '''

# The data ---------------------------------------------------------------------------------------
# Sine waves with a random period (MIN_PERIOD to MAX_PERIOD steps) and phase: x is the wave (with
# NOISE added), the target at step t the clean value at step t+1. Answering 0 scores MSE 0.5.
SEQ_LEN = $seq_len  # task: seq_len
NOISE = $noise  # task: noise
MIN_PERIOD, MAX_PERIOD = 8.0, 40.0  # steps per cycle


def batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    period = MIN_PERIOD + (MAX_PERIOD - MIN_PERIOD) * torch.rand(BATCH_SIZE, 1, generator=generator)  # [B, 1]
    phase = 2 * math.pi * torch.rand(BATCH_SIZE, 1, generator=generator)  # [B, 1]
    steps = torch.arange(SEQ_LEN + 1).float()  # [T+1]
    wave = torch.sin(2 * math.pi * steps / period + phase)  # [B, T+1]
    # the noise is drawn even when NOISE is 0, as the app draws it: the next batch depends on it
    noisy = wave[:, :-1] + NOISE * torch.randn(BATCH_SIZE, SEQ_LEN, generator=generator)  # [B, T]
    return noisy.unsqueeze(2), wave[:, 1:].unsqueeze(2)  # x, y: [B, T, 1]
'''

SINE_GENERATE = '''

# The data ---------------------------------------------------------------------------------------
# Draw a sine wave from its description: x is [period / MAX_PERIOD, sin(phase), cos(phase)] for a
# random period (MIN_PERIOD to MAX_PERIOD steps) and phase, the target the wave over SEQ_LEN steps.
SEQ_LEN = $seq_len  # task: seq_len
MIN_PERIOD, MAX_PERIOD = 8.0, 40.0  # steps per cycle


def batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    period = MIN_PERIOD + (MAX_PERIOD - MIN_PERIOD) * torch.rand(BATCH_SIZE, 1, generator=generator)  # [B, 1]
    phase = 2 * math.pi * torch.rand(BATCH_SIZE, 1, generator=generator)  # [B, 1]
    steps = torch.arange(SEQ_LEN + 1).float()  # [T+1]
    wave = torch.sin(2 * math.pi * steps / period + phase)  # [B, T+1]
    x = torch.cat([period / MAX_PERIOD, phase.sin(), phase.cos()], dim=1)  # [B, 3]
    return x, wave[:, :-1].unsqueeze(2)  # y: [B, T, 1]
'''

CHARLM = '''

# The data ---------------------------------------------------------------------------------------
# Character-level language modelling: windows of SEQ_LEN characters of a text, the target at each
# step the next character. The characters are numbered in sorted order.
SEQ_LEN = $seq_len  # task: seq_len
VOCAB_SIZE = $vocab_size  # the text's distinct characters
TRAIN_END = $train_end  # training windows end before this character; the text from it on is held out
# the run's text, checked: another would give other batches and another vocabulary
TEXT_SHA256 = "$sha256"


def read_text(path: str) -> torch.Tensor:
    """The text at `path` as character ids [N], once it is known to be the run's text."""
    with open(path, "rb") as file:
        text = file.read().decode("utf-8-sig")
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != TEXT_SHA256:
        raise SystemExit(f"{path} is not the text this run read; pass the file the app trained on: "
                         "$source")
    index = {ch: i for i, ch in enumerate(sorted(set(text)))}
    return torch.tensor([index[ch] for ch in text])  # [N]


def batch(ids: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.randint(0, TRAIN_END - SEQ_LEN, (BATCH_SIZE,), generator=generator)  # [B]
    window = starts[:, None] + torch.arange(SEQ_LEN + 1)  # [B, T+1]
    chunk = ids[window]  # [B, T+1]
    return chunk[:, :-1], chunk[:, 1:]  # x, y: [B, T]
'''

SEQUENCE = '''

# The data ---------------------------------------------------------------------------------------
# Sequence $what for an encoder-decoder: read SEQ_LEN symbols (tokens 0 to SYMBOLS-1) and write
# them $order, then <eos>. Target token s+2 stands for symbol s: 0 is <sos>, 1 is <eos>.
SEQ_LEN = $$seq_len  # task: seq_len
SYMBOLS = $$symbols  # task: symbols


def batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randint(0, SYMBOLS, (BATCH_SIZE, SEQ_LEN), generator=generator)  # [B, T]
    eos = torch.ones(BATCH_SIZE, 1, dtype=torch.long)  # [B, 1]
    return x, torch.cat([$target + 2, eos], dim=1)  # y: [B, T+1]
'''
# Reversal and copying differ in one line: the two templates are one, filled here (their $$seq_len
# and $$symbols left for the settings).
REVERSE = Template(SEQUENCE).substitute(what="reversal", order="backwards", target="x.flip(1)")
COPY = Template(SEQUENCE).substitute(what="copying", order="out again in the same order", target="x")
