"""Unrolled's engine: recurrent models that train on PyTorch's kernels and open up exactly,
and encoder-decoders with attention and transformers whose every attention weight is recorded.

    import engine
    task  = engine.make_task("adding", seq_len=50, seed=0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=64), task)
    x, y  = task.batch(32)
    rec   = engine.record(model, x, y)
"""

from .attention_seq2seq import AttentionEncoderDecoder
from .beam import Beam, Candidate, beam_search, forced_search
from .build import build_model
from .checkpoint import from_bytes, load, save, to_bytes
from .config import ModelConfig
from .contract import Decoder, DecodingState, Model
from .describe import Part, Read
from .model import SequenceModel
from .multihead import Saturation, saturation
from .pointer import PointerNetwork
from .positional import positional_encoding
from .record import record
from .recording import BlockTrace, Recording, StackTrace
from .sampling import Sampling, generate
from .seq2seq import EncoderDecoder
from .sites import AttentionTrace, Site
from .spectra import Spectra, weight_spectra
from .tasks import ATTENTION_TASKS, TASKS, Preset, Task, TaskSpec, make_task, task_params
from .train_config import TrainConfig
from .training import StepStats, Trainer
from .transformer import TransformerModel
from .transformer_seq2seq import TransformerEncoderDecoder

__all__ = [
    "ModelConfig", "TrainConfig", "TaskSpec", "Task", "Preset", "TASKS", "ATTENTION_TASKS", "make_task", "task_params",
    "SequenceModel", "EncoderDecoder", "build_model", "record", "Recording", "StackTrace", "Trainer", "StepStats",
    "save", "load", "to_bytes", "from_bytes",
    "AttentionEncoderDecoder", "PointerNetwork", "TransformerModel", "TransformerEncoderDecoder", "positional_encoding",
    "beam_search", "forced_search", "Beam", "Candidate", "weight_spectra", "Spectra", "saturation", "Saturation",
    "generate", "Sampling",
    "Model", "Decoder", "DecodingState", "Part", "Read", "BlockTrace", "AttentionTrace", "Site",
]
