"""script_for: a run of the app written out as one standalone PyTorch file (the "export as code"
TensorFlow Playground's users have asked for since 2016).

The script imports torch and the standard library only. It draws the same batches (the same seed
streams, engine/rng.py), starts from the same weights (the layers built in the engine's order
under the same seed, then the same initialisation) and takes the same steps (optimizer, clipping,
one torch thread as the app), so it prints the app's losses to the last digit. It is made of the
templates in export_templates/, filled with the settings, each commented with the setting it came
from.

Written out: the cells PyTorch has a module for (nn.RNN with tanh or relu, nn.LSTM, nn.GRU), any
depth, bidirectional, dropout, every initialisation and forget bias, every optimizer and clipping,
on the adding, recall, parity, sine and charlm tasks, and encoder-decoders without attention
(reversed source, scheduled sampling) on reverse and copy. A setup it cannot reproduce yet is
refused with a ValueError naming the setting: a script that trained something other than the
app's run would teach the wrong thing.

`setup` is anything with `task`, `task_params`, `model` (ModelConfig) and `train` (TrainConfig),
as the app's Setup (app/session/link.py); `upload` is the text a charlm run read instead of the
shipped corpus.
"""
from __future__ import annotations

import hashlib
import textwrap
from dataclasses import fields
from string import Template

import torch

from .build import model_class
from .cells import GATE_COUNT, GATE_NAMES
from .config import ModelConfig
from .export_templates import parts, tasks
from .seq2seq import decoder_config
from .tasks import Task, TaskSpec, make_task
from .tasks.text import charlm_corpus

TASK_TEMPLATES = {"adding": tasks.ADDING, "recall": tasks.RECALL, "parity": tasks.PARITY, "charlm": tasks.CHARLM,
                  "reverse": tasks.REVERSE, "copy": tasks.COPY}
EXPORTED_TASKS = (*TASK_TEMPLATES, "sine")
NOT_YET = {  # a task the script does not write out yet -> why
    "sentiment": "its reviews are split into words, numbered and padded by the engine, which the script does "
                 "not write out yet",
    "dates": "the dates are padded to one length, and the encoder packs them to skip the pads, which the script "
             "does not write out yet",
    "sort": "a pointer network is not written out yet",
    "char_sentiment": "its reviews are cut to their last characters and padded by the engine, which the script "
                      "does not write out yet",
}
MODULES = {"lstm": "nn.LSTM", "gru": "nn.GRU", "rnn": "nn.RNN"}
OPTIMIZERS = {  # TrainConfig.optimizer -> what engine.training.make_optimizer builds
    "sgd": "torch.optim.SGD(params, lr={lr!r})",
    "momentum": "torch.optim.SGD(params, lr={lr!r}, momentum=0.9)",
    "rmsprop": "torch.optim.RMSprop(params, lr={lr!r})",
    "adam": "torch.optim.Adam(params, lr={lr!r})",
}
TEXT_NAME = "corpus.txt"  # the text a charlm script reads, as the app offers it for download
DOC_WIDTH = 96  # docstrings and the settings they list, wrapped to leave room for the indentation
SHIPPED_TEXT = "the corpus Unrolled ships, offered beside this script (engine/data/charlm_corpus.txt)"


def script_name(setup) -> str:
    """The script's file name, e.g. unrolled-adding-lstm.py."""
    return f"unrolled-{setup.task}-{setup.model.arch}.py"


def check_exportable(setup) -> None:
    """ValueError naming the first setting whose run the script cannot reproduce yet."""
    cfg = setup.model
    if setup.task not in EXPORTED_TASKS:
        why = NOT_YET.get(setup.task, "its data is not written out yet")
        raise ValueError(f"not exportable yet: task={setup.task!r}: {why}")
    if setup.task_params.get("corpus", "python") != "python":
        raise ValueError(f"not exportable yet: corpus={setup.task_params['corpus']!r}: the script reads the shipped "
                         "Python corpus or a text you uploaded; upload the text to train on it")
    if cfg.arch == "transformer":
        raise ValueError("not exportable yet: arch='transformer': the script writes out RNN, LSTM and GRU networks")
    if cfg.attention is not None:
        raise ValueError(
            f"not exportable yet: attention={cfg.attention!r}: attention is not written out yet; the script writes "
            "out an encoder-decoder without it (attention=None)"
        )
    if not cfg.uses_fused_kernel:
        setting = ("peephole=True" if cfg.peephole else "layer_norm=True" if cfg.layer_norm
                   else f"zoneout={cfg.zoneout}" if cfg.zoneout else f"activation={cfg.activation!r}")
        raise ValueError(
            f"not exportable yet: {setting}: this cell trains on Unrolled's own written-out loop, which the "
            "script does not include (it writes out the cells PyTorch has: nn.LSTM, nn.GRU, nn.RNN with tanh or relu)"
        )
    if setup.train.bptt_window:
        raise ValueError(
            f"not exportable yet: bptt_window={setup.train.bptt_window}: truncated BPTT is not written out; "
            "set bptt_window=0 (full BPTT)"
        )


def reads_text(setup) -> bool:
    """Whether the script reads its data from a text file (--text), which the run read: charlm's corpus."""
    return setup.task == "charlm"


def task_of(setup, upload: str | bytes | None) -> Task:
    params = dict(setup.task_params)
    if upload is not None and reads_text(setup):
        params["text"] = upload
    return make_task(setup.task, seed=setup.train.seed, **params)


def text_for(setup, upload: str | bytes | None = None) -> str | None:
    """The text a charlm script reads (from the file given as --text): the upload, else the shipped
    corpus. None for the other tasks, whose scripts make their own data."""
    if not reads_text(setup):
        return None
    task = task_of(setup, upload)
    return charlm_corpus() if task.text is None else task.text


def script_for(setup, upload: str | bytes | None = None) -> str:
    """The standalone script of `setup`'s run, as the text of a .py file (see the module's notes)."""
    check_exportable(setup)
    task = task_of(setup, upload)
    cfg, train = setup.model, setup.train
    model_class(cfg, task.spec)  # build_model's own refusal of settings that do not fit the task
    title = f"Unrolled's run of the {setup.task} task with {article(cfg.arch)} {cfg.arch.upper()}"
    usage = f" --steps {task.preset.steps}" + (f" --text {TEXT_NAME}" if reads_text(setup) else "")
    header = fill(parts.HEADER, title=title, torch_version=torch.__version__, settings=settings(setup, task),
                  file_name=script_name(setup), usage=usage, seed=train.seed, batch_size=train.batch_size)
    sections = [header, data_part(task, upload), loss_part(task.spec)]
    if initialises(cfg):
        sections.append(init_part(cfg))
    vocab = "VOCAB_SIZE" if reads_text(setup) else str(task.spec.input_size)
    sections += [model_part(cfg, task.spec, vocab, train.scheduled_sampling), train_part(setup, task, title)]
    return "".join(sections)


def fill(template: str, **values) -> str:
    return Template(template).substitute(values)


def docstring(text: str, spaces: int = 4) -> str:
    """`text` wrapped as the body of a docstring `spaces` in."""
    return textwrap.fill(text, width=DOC_WIDTH + 4 - spaces, subsequent_indent=" " * spaces)


def article(arch: str) -> str:
    return "an" if arch in ("lstm", "rnn") else "a"  # an LSTM, an RNN, a GRU


def settings(setup, task: Task) -> str:
    """The settings the script reproduces, as the docstring lists them."""
    cfg, train = setup.model, setup.train
    shown = ["arch", "hidden_size", "num_layers", "bidirectional", "dropout", "init"]
    if cfg.arch == "rnn":
        shown.append("activation")
    if task.spec.input_kind == "tokens":
        shown.append("embedding_dim")
    shown += [name for name in ("spectral_radius", "forget_bias") if getattr(cfg, name) is not None]
    task_params = ", ".join(f"{k}={v!r}" for k, v in setup.task_params.items())
    training = ["optimizer", "lr", "batch_size", "clip_norm", "clip_value", "seed"]
    if task.spec.mapping == "encdec":
        shown.append("reverse_source")
        training.append("scheduled_sampling")
    rows = {
        "task": setup.task + (f": {task_params}" if task_params else ""),
        "model": ", ".join(f"{name}={getattr(cfg, name)!r}" for name in shown),
        "training": ", ".join(f"{name}={getattr(train, name)!r}" for name in training),
    }
    return "\n".join(textwrap.fill(f"{label:<10}{text}", DOC_WIDTH, initial_indent="    ", subsequent_indent=" " * 14)
                     for label, text in rows.items())


def data_part(task: Task, upload: str | bytes | None) -> str:
    """The task's batches written out, its parameters filled in."""
    values = {f.name: getattr(task, f.name) for f in fields(task) if f.init}
    name = task.spec.name
    if name == "sine":
        return fill(tasks.SINE_FORECAST if task.mode == "forecast" else tasks.SINE_GENERATE, **values)
    if name == "parity":
        values["target"] = tasks.PARITY_TARGETS[task.running]
    if name == "charlm":
        text = charlm_corpus() if task.text is None else task.text
        values |= dict(vocab_size=len(task.vocab), train_end=task.train_end,
                       sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                       source="the text you uploaded" if upload is not None else SHIPPED_TEXT)
    return fill(TASK_TEMPLATES[name], **values)


def loss_part(spec: TaskSpec) -> str:
    return parts.MSE if spec.loss == "mse" else parts.CROSS_ENTROPY


def initialises(cfg: ModelConfig) -> bool:
    """Whether the weights start otherwise than PyTorch's own uniform initialisation."""
    return cfg.init != "default" or cfg.forget_bias is not None


def init_part(cfg: ModelConfig) -> str:
    """initialise(rnn): engine/init.py's scheme for cfg, on each gate's block of W_hh."""
    gates = GATE_COUNT[cfg.arch]
    body = []
    if cfg.init != "default" and gates > 1:
        body += [
            f'w_hh = getattr(rnn, f"weight_hh_l{{layer}}{{suffix}}")  # [{gates}H, H]: the '
            f"{', '.join(GATE_NAMES[cfg.arch])} blocks stacked",
            f"for gate in range({gates}):  # each block multiplies h_(t-1) in one gate",
            "    block = w_hh[gate * H:(gate + 1) * H]  # [H, H]",
            *("    " + line for line in block_lines(cfg)),
        ]
    elif cfg.init != "default":
        body += ['block = getattr(rnn, f"weight_hh_l{layer}{suffix}")  # [H, H]: W_hh', *block_lines(cfg)]
    if cfg.init == "identity" or cfg.forget_bias is not None:
        body.append('b_ih, b_hh = getattr(rnn, f"bias_ih_l{layer}{suffix}"), getattr(rnn, f"bias_hh_l{layer}{suffix}")')
    if cfg.init == "identity":
        body += ["b_ih.zero_()  # init=identity: zero bias too (IRNN)", "b_hh.zero_()"]
    if cfg.forget_bias is not None:
        body += [f"b_ih[H:2 * H] = {cfg.forget_bias!r}  # model: forget_bias={cfg.forget_bias!r}, the f block's",
                 "b_hh[H:2 * H] = 0.0  # b_if + b_hf is the forget bias"]
    uses_h = gates > 1 or cfg.init == "identity" or cfg.forget_bias is not None
    return fill(
        parts.INIT, summary=docstring(init_summary(cfg)), hidden="    H = rnn.hidden_size\n" if uses_h else "",
        body=indented(body, 12),
    )


def block_lines(cfg: ModelConfig) -> list[str]:
    """Re-initialise one [H, H] block of W_hh, `block`, as engine.init.init_block does."""
    if cfg.init == "orthogonal":
        return ["nn.init.orthogonal_(block)  # model: init=orthogonal"]
    if cfg.init == "identity":
        return ["block.copy_(torch.eye(H))  # model: init=identity"]
    return [
        "radius = torch.linalg.eigvals(block).abs().max().item()  # its spectral radius",
        "if radius > 0:",
        f"    block.mul_({cfg.spectral_radius!r} / radius)  # model: init=scaled, spectral_radius",
    ]


def init_summary(cfg: ModelConfig) -> str:
    schemes = {
        "orthogonal": "each gate's block of W_hh orthogonal",
        "identity": "each gate's block of W_hh the identity, with zero bias (IRNN, Le et al. 2015)",
        "scaled": f"each gate's block of W_hh rescaled to spectral radius {cfg.spectral_radius!r}",
    }
    said = [schemes[cfg.init]] if cfg.init in schemes else []
    if cfg.forget_bias is not None:
        said.append(f"the forget gate's bias {cfg.forget_bias!r} (Jozefowicz et al. 2015)")
    return f"Start {' and '.join(said)}, in every layer and direction, as the app does."


def model_part(cfg: ModelConfig, spec: TaskSpec, vocab: str, scheduled_sampling: float) -> str:
    """The engine's SequenceModel (or EncoderDecoder) in plain torch, its layers in the engine's order.
    `vocab`: what the script calls the size of its input vocabulary (tokens only)."""
    if spec.mapping == "encdec":
        return encoder_decoder_part(cfg, spec, scheduled_sampling)
    tokens = spec.input_kind == "tokens"
    layers = [f"self.embedding = nn.Embedding({vocab}, {cfg.embedding_dim})  # model: embedding_dim"] if tokens else []
    layers += recurrent_lines("rnn", cfg, cfg.embedding_dim if tokens else spec.input_size)
    if initialises(cfg):
        layers.append("initialise(self.rnn)")
    width = cfg.hidden_size * cfg.num_directions
    layers.append(f"self.head = nn.Linear({width}, {vocab if tokens else spec.output_size})  # the read-out")
    return fill(parts.MODEL, prelude="", summary=docstring(model_summary(cfg, spec)), layers=indented(layers),
                arguments="x: torch.Tensor", forward=indented(forward_lines(cfg, spec)))


def recurrent_lines(name: str, cfg: ModelConfig, input_size: int, comment: str = "") -> list[str]:
    """self.<name> = nn.LSTM(...) (or GRU, RNN) as engine.recurrent.make_recurrent builds it."""
    nonlinearity = f'nonlinearity="{cfg.activation}", ' if cfg.arch == "rnn" else ""
    return [
        f"self.{name} = {MODULES[cfg.arch]}(  # {comment or f'model: arch={cfg.arch!r} and the settings below'}",
        f"    {nonlinearity}input_size={input_size}, hidden_size={cfg.hidden_size}, num_layers={cfg.num_layers},",
        f"    bidirectional={cfg.bidirectional}, dropout={cfg.dropout!r}, batch_first=True,",
        ")",
    ]


def indented(lines: list[str], spaces: int = 8) -> str:
    return "".join(f"{' ' * spaces}{line}\n" for line in lines)


def model_summary(cfg: ModelConfig, spec: TaskSpec) -> str:
    shape = f"{cfg.num_layers} x {cfg.hidden_size} {cfg.arch.upper()}"
    shape += ", bidirectional" if cfg.bidirectional else ""
    if spec.mapping == "encdec":
        return (f"An encoder-decoder (Sutskever et al. 2014): a {shape} encoder whose final state starts a "
                f"{cfg.num_layers} x {cfg.hidden_size * cfg.num_directions} {cfg.arch.upper()} decoder, which "
                "writes the target one token at a time.")
    read = "the last step's state" if spec.mapping == "seq2vec" else "every step's state"
    return f"{shape}, and a linear head on {read} ({spec.mapping})."


def forward_lines(cfg: ModelConfig, spec: TaskSpec) -> list[str]:
    """SequenceModel.forward written out: inputs, the stack, the read-out of its mapping."""
    lines = []
    if spec.input_kind == "tokens":
        lines.append("x = self.embedding(x)  # [B, T] -> [B, T, E]")
    elif spec.mapping == "vec2seq":
        lines.append("x = x.unsqueeze(1).expand(-1, SEQ_LEN, -1)  # [B, D] -> [B, T, D]: the one vector at every step")
    width = "2H: forward h_t, then backward h_t" if cfg.bidirectional else "H"
    lines.append(f"out, _ = self.rnn(x)  # [B, T, {width}]: the top layer's states")
    if spec.mapping != "seq2vec":
        return [*lines, "return self.head(out)  # [B, T, out]: a prediction at every step"]
    if not cfg.bidirectional:
        return [*lines, "return self.head(out[:, -1])  # [B, out]: from the last step's state"]
    return [
        *lines,
        "H = self.rnn.hidden_size",
        "# each direction's state once it has read everything: forward at the end, backward at t=0",
        "last = torch.cat([out[:, -1, :H], out[:, 0, H:]], dim=1)  # [B, 2H]",
        "return self.head(last)  # [B, out]",
    ]


def encoder_decoder_part(cfg: ModelConfig, spec: TaskSpec, scheduled_sampling: float) -> str:
    """engine.seq2seq.EncoderDecoder without attention: the encoder's final state starts the decoder,
    which is as wide as the encoder's directions side by side."""
    decoder = decoder_config(cfg)
    E = cfg.embedding_dim
    layers = [
        f"self.source_embedding = nn.Embedding({spec.input_size}, {E})  # the source's symbols; model: embedding_dim",
        *recurrent_lines("encoder", cfg, E),
        f"self.target_embedding = nn.Embedding({spec.output_size}, {E})  # <sos>, <eos> and the symbols",
        *recurrent_lines("decoder", decoder, E, "the encoder's cell and depth, as wide as its directions together"),
    ]
    if initialises(cfg):
        layers += ["initialise(self.encoder)", "initialise(self.decoder)"]
    layers.append(f"self.head = nn.Linear({decoder.hidden_size}, {spec.output_size})  # the read-out")
    joined = "join_directions(h_n)"
    if cfg.arch == "lstm":
        joined = "tuple(join_directions(s) for s in h_n)  # h and c"
    context = joined if cfg.bidirectional else "h_n  # the decoder starts where the encoder ended, layer by layer"
    reverse = ["x = x.flip(1)  # model: reverse_source, the source read backwards"] if cfg.reverse_source else []
    teaching = "Logits [B, T_out, V] for the targets y [B, T_out]."
    if scheduled_sampling:
        teaching += (f" Where `sampled` [B, T_out] is True (training: scheduled_sampling={scheduled_sampling!r} "
                     "of the steps), the decoder reads its own previous prediction instead of the true token "
                     "(Bengio et al. 2015).")
    forward = fill(parts.ENCODER_DECODER, reverse=indented(reverse), context=context, teaching=docstring(teaching, 8),
                   decode=parts.SCHEDULED_SAMPLING if scheduled_sampling else parts.TEACHER_FORCED)
    prelude = parts.TARGET_TOKENS + (parts.JOIN_DIRECTIONS if cfg.bidirectional else "")
    arguments = "x: torch.Tensor, y: torch.Tensor" + (", sampled: torch.Tensor" if scheduled_sampling else "")
    return fill(parts.MODEL, prelude=prelude, summary=docstring(model_summary(cfg, spec)), layers=indented(layers),
                arguments=arguments, forward=forward)


def train_part(setup, task: Task, title: str) -> str:
    """main(): the Trainer's loop with the setup's optimizer, clipping and random streams."""
    train, cfg = setup.train, setup.model
    clipping = []
    if train.clip_norm is not None:
        clipping.append(f"torch.nn.utils.clip_grad_norm_(params, {train.clip_norm!r})  # training: clip_norm")
    if train.clip_value is not None:
        clipping.append(f"torch.nn.utils.clip_grad_value_(params, {train.clip_value!r})  # training: clip_value")
    streams, call = [], "model(x)" if task.spec.mapping != "encdec" else "model(x, y)"
    if cfg.dropout > 0:
        streams.append(f'torch.manual_seed(stream_seed("dropout"))  # model: dropout={cfg.dropout!r}: the app\'s masks')
    if train.scheduled_sampling:
        streams.append('coins = torch.Generator().manual_seed(stream_seed("coins"))  # scheduled sampling\'s coins')
        call = f"model(x, y, torch.rand(y.shape, generator=coins) < {train.scheduled_sampling!r})"
    arguments, data = [], []
    if reads_text(setup):
        arguments.append('parser.add_argument("--text", required=True, help="the text the run read")')
        data.append("ids = read_text(args.text)  # [N]")
    optimizer = OPTIMIZERS[train.optimizer].format(lr=train.lr) + f"  # training: optimizer={train.optimizer!r}, lr"
    return fill(
        parts.TRAIN, title=title, steps=task.preset.steps, optimizer=optimizer, clipping=indented(clipping),
        arguments=indented(arguments, 4), data=indented(data, 4), streams=indented(streams, 4), call=call,
        draw="batch(ids, batches)" if arguments else "batch(batches)",
    )
