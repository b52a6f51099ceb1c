"""The parts every exported script has: its header, loss and metric, model, initialisation and
training loop. `$name`: a setting, or lines made from the settings by engine.export_script."""

HEADER = '''"""$title.

The run Unrolled trains with these settings, written out with nothing but PyTorch (made with torch
$torch_version; it needs 2.6 or later):

$settings

It draws the same batches and starts from the same weights as the app, so on the same torch it
prints the loss the app shows at every step, to the last digit:

    python $file_name$usage
"""
import argparse
import hashlib
import math

import torch
import torch.nn.functional as F
from torch import nn

SEED = $seed  # training: seed. The weights and every random stream below come from it.
BATCH_SIZE = $batch_size  # training: batch_size


def stream_seed(purpose: str) -> int:
    """The seed of one purpose's random stream ("batches", "dropout"): the app draws each purpose
    from its own generator, seeded with a hash of (purpose, SEED), so no two purposes share draws."""
    digest = hashlib.blake2b(f"unrolled/{purpose}/{SEED}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
'''

MSE = '''

def loss_fn(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean squared error."""
    return F.mse_loss(y_hat, y)


@torch.no_grad()
def metric(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    """R2 = 1 - MSE / Var(y): 0 is the score of always answering the mean, 1 of a perfect fit."""
    var = y.var(unbiased=False)
    return (1.0 - F.mse_loss(y_hat, y) / var).item() if var > 0 else float("nan")


METRIC_NAME = "R2"
'''

CROSS_ENTROPY = '''

def loss_fn(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every prediction: y_hat [..., C] logits, y [...] class indices."""
    return F.cross_entropy(y_hat.reshape(-1, y_hat.shape[-1]), y.reshape(-1))


@torch.no_grad()
def metric(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    """Accuracy: the share of predictions whose most likely class is the target."""
    return (y_hat.argmax(dim=-1) == y).float().mean().item()


METRIC_NAME = "accuracy"
'''

MODEL = '''

# The model --------------------------------------------------------------------------------------
${prelude}class Model(nn.Module):
    """$summary"""

    def __init__(self) -> None:
        super().__init__()  # the layers in the app's order: each draws its initial weights in turn
$layers
    def forward(self, $arguments) -> torch.Tensor:
$forward'''

ENCODER_DECODER = '''\
        """$teaching"""
$reverse        _, h_n = self.encoder(self.source_embedding(x))  # the encoder's final state: [L*dirs, B, H]
        state = $context
        # teacher forcing: the decoder reads <sos>, then the true previous target token
        previous = torch.cat([torch.full_like(y[:, :1], SOS), y[:, :-1]], dim=1)  # [B, T_out]
$decode'''

TEACHER_FORCED = '''\
        out, _ = self.decoder(self.target_embedding(previous), state)  # [B, T_out, H']: all steps in one call
        return self.head(out)  # [B, T_out, V]
'''

SCHEDULED_SAMPLING = '''\
        token, logits = previous[:, 0], []  # [B]: <sos>
        for t in range(y.shape[1]):  # one step at a time, to read its own prediction where `sampled`
            token = torch.where(sampled[:, t], token, previous[:, t])  # [B]
            out, state = self.decoder(self.target_embedding(token[:, None]), state)  # [B, 1, H']
            logits.append(self.head(out[:, 0]))  # [B, V]
            token = logits[-1].argmax(dim=-1)  # [B]: its prediction
        return torch.stack(logits, dim=1)  # [B, T_out, V]
'''

TARGET_TOKENS = '''SOS = 0  # the target token <sos>, which the decoder reads first (<eos> is 1)


'''

JOIN_DIRECTIONS = '''def join_directions(s: torch.Tensor) -> torch.Tensor:
    """A bidirectional encoder's final state [L*2, B, H] as its decoder's initial state [L, B, 2H]:
    each layer's two directions side by side."""
    return s.reshape(-1, 2, *s.shape[1:]).permute(0, 2, 1, 3).reshape(s.shape[0] // 2, s.shape[1], -1)


'''

INIT = '''

@torch.no_grad()
def initialise(rnn: nn.Module) -> None:
    """$summary"""
$hidden    for layer in range(rnn.num_layers):
        for suffix in ("", "_reverse") if rnn.bidirectional else ("",):  # each layer and direction, in turn
$body'''

TRAIN = '''

# Training ---------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description="$title")
    parser.add_argument("--steps", type=int, default=$steps, help="training steps (default: the lesson's $steps)")
$arguments    args = parser.parse_args()
    torch.set_num_threads(1)  # as the app trains: the sums add up in the same order, to the last digit
$data    torch.manual_seed(SEED)  # the initial weights: the app builds the model under its seed
    model = Model()
    params = list(model.parameters())
    optimizer = $optimizer
    batches = torch.Generator().manual_seed(stream_seed("batches"))  # the app's batches, in its order
$streams    for step in range(1, args.steps + 1):
        x, y = $draw
        optimizer.zero_grad()
        y_hat = $call
        loss = loss_fn(y_hat, y)
        loss.backward()
        grad_norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]).item()
        if not (math.isfinite(loss.item()) and math.isfinite(grad_norm)):
            print(f"step {step}: the loss or the gradient is not finite; diverged (the app stops here too)")
            break
$clipping        optimizer.step()
        if not all(bool(torch.isfinite(p).all()) for p in params):
            print(f"step {step}: the update made a weight infinite; diverged (the app undoes it and stops)")
            break
        # 9 significant digits write a float32 exactly: the loss as the app computed it
        print(f"step {step}  loss {loss.item():.9g}  {METRIC_NAME} {metric(y_hat, y):.4g}  "
              f"gradient norm {grad_norm:.4g}")


if __name__ == "__main__":
    main()
'''
