"""TrainConfig: how to train, validated on construction (kept apart from the Trainer so that
tasks can carry a training preset without importing the training loop)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .config import ANY_DECODER, check_choice, check_float, check_int, from_known_fields, setting

OPTIMIZERS = ("sgd", "momentum", "adam", "rmsprop")
MAX_BATCH = 1024
MIN_LR = 1e-8  # below it no weight of a model this size moves a float32 step (lr=1e-300 was accepted)
MAX_BPTT_WINDOW = 10_000


@dataclass(frozen=True)
class TrainConfig:
    """optimizer    "sgd", "momentum" (SGD with momentum 0.9), "adam" or "rmsprop"
    lr           learning rate, > 0
    batch_size   samples per step
    clip_norm    rescale the whole gradient to at most this global L2 norm; None = off
    clip_value   clamp every gradient entry to [-clip_value, clip_value]; None = off
    bptt_window  truncated BPTT: backpropagate at most this many steps (the hidden state is
                 carried forward but detached every window); 0 = full BPTT
    seed         seeds the batches, dropout, scheduled sampling's coins and evaluate()'s held-out
                 batch, each from its own stream (engine.rng.stream), so a run can be repeated (pass
                 the same seed to build_model to start from the same weights)
    scheduled_sampling  encoder-decoders: the probability that the decoder, in training, reads its
                 own previous prediction instead of the true previous token (Bengio et al. 2015),
                 so it learns to recover from its own mistakes; 0 = pure teacher forcing. How it
                 trains, not what the model is, so a training setting; Bengio et al. raise it over
                 a run, which Trainer.retune does here.
    """

    optimizer: str = "adam"
    lr: float = 1e-3
    batch_size: int = 32
    clip_norm: float | None = None
    clip_value: float | None = None
    bptt_window: int = 0
    seed: int = 0
    scheduled_sampling: float = setting(0.0, ANY_DECODER)

    def __post_init__(self) -> None:
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_float("lr", self.lr, MIN_LR, 100.0)
        check_int("batch_size", self.batch_size, 1, MAX_BATCH)
        if self.clip_norm is not None:
            check_float("clip_norm", self.clip_norm, 0.0, 1e6, low_open=True)
        if self.clip_value is not None:
            check_float("clip_value", self.clip_value, 0.0, 1e6, low_open=True)
        check_int("bptt_window", self.bptt_window, 0, MAX_BPTT_WINDOW)
        check_int("seed", self.seed, 0, 2**31 - 1)
        check_float("scheduled_sampling", self.scheduled_sampling, 0.0, 1.0)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        return from_known_fields(cls, data)
