"""Unrolled's engine: recurrent models that train on PyTorch's kernels and open up exactly.

    import engine
    task  = engine.make_task("adding", seq_len=50, seed=0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=64), task)
    x, y  = task.batch(32)
    rec   = engine.record(model, x, y)
"""

from .checkpoint import from_bytes, load, save, to_bytes
from .config import ModelConfig
from .build import build_model
from .model import SequenceModel
from .record import record
from .recording import Recording, StackTrace
from .seq2seq import EncoderDecoder
from .tasks import TASKS, Preset, Task, TaskSpec, make_task, task_params
from .train_config import TrainConfig
from .training import StepStats, Trainer

__all__ = [
    "ModelConfig", "TrainConfig", "TaskSpec", "Task", "Preset", "TASKS", "make_task", "task_params",
    "SequenceModel", "EncoderDecoder", "build_model", "record", "Recording", "StackTrace", "Trainer", "StepStats",
    "save", "load", "to_bytes", "from_bytes",
]
