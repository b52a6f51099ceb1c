"""Lab: one student's experiment, the task, model and trainer made from a Setup.

It lives in that student's st.session_state (never in a shared cache), and has no Streamlit in
it, so every rule of the page (what rebuilds the model, what only retunes training, what an
upload may replace) is tested without a browser. Every way a model enters the lab (a new lab,
Reset, a lesson, the form, a checkpoint) goes through `install`, which checks the size budget
before anything is built and leaves the lab as it was when it refuses; a model shipped in pretrained/
over the budget (the translator at real size) is installed to read, not to train (`trainable`). What the lab logs over
training beside the Trainer's history (held-out evaluations, the best step's weights, the marks
of setting changes) belongs to the model installed and starts again with a new one.

A model opened from a checkpoint (a shipped one, an upload) whose task reads a public corpus that is
not on this machine opens anyway, on its task as the checkpoint's header knows it (its words: enough
to read and write), and waits for the corpus only for what needs the text: training, held-out
scores, the probe samples the pages open it up on (`probes`, `held_out` and `advance` raise
engine.datasets.CorpusMissing, naming what to download, until the corpus is here).
"""
from __future__ import annotations

import dataclasses

import engine
from app.session import pretrained
from app.session.budget import check_cost, parameters
from app.session.heldout import HeldOut
from app.session.link import OFFERED, Setup, preset_setup
from app.session.memory import LEDGER, READ_ONLY_COPIES, MemoryFull, one_step, read_only_bytes, weights_bytes
from app.session.playback import Playback
from app.session.probes import Probes
from engine import datasets

# In a playing page's ticks, its recording (and every figure drawn from it) is renewed only after
# RENEW_FACTOR times what the last renewal's drawing cost the server's thread. Each renewal sends the
# browser new figures to lay out, which costs it three to four times as much: Self-attention's five took
# 0.3 s of the server's thread and 0.8-1.4 s of chromium's main thread on this 2-core machine. Renewed
# every tick they kept chromium 91% busy, and a click on Pause reached the server 3 s late and showed 8 s
# after its run (benchmarks/README section 8). Between renewals a tick trains and sends the kept figures
# again, which neither side lays out again. A page whose figures cost little renews every tick.
RENEW_FACTOR = 10.0


def over_training_budget(setup: Setup, task: engine.Task, shipped: str | None) -> str | None:
    """None when `setup` may train on `task` here (budget.check_cost, which raises when it may not). A model
    shipped in pretrained/ (`shipped` names it) over the training budget opens all the same, to read (the
    translator at real size: 12 M weights, over the 5 M a session may hold): the reason it does not train (the
    budget's, without its advice to make the network smaller), after checking the memory its weights and their
    best-step copy take."""
    try:
        check_cost(setup, task)
        return None
    except MemoryFull:
        raise
    except ValueError as over:
        if shipped is None:
            raise
        count, _ = parameters(setup, task)
        LEDGER.check_room(READ_ONLY_COPIES * 4 * count + task.held_bytes(), "this network")
        return str(over).split("; lower")[0]


class Lab(Playback):
    def __init__(self, setup: Setup, upload: str | bytes | None = None):
        super().__init__()  # in the memory ledger from here: held_bytes is read by other sessions' threads
        self.task: engine.Task | None = None
        self.too_big: str | None = None  # why a shipped model reads but does not train here; None: it trains
        self.setup, self.upload = setup, None
        self.install(setup, upload)

    def task_for(self, setup: Setup, upload: str | bytes | None, header: tuple | None = None) -> engine.Task:
        """The task `setup` asks for: the one the lab has when only the model or training
        settings differ (parsing an uploaded corpus again can take seconds), else a new one.
        `header`, the (spec, vocabulary, output vocabulary) of the checkpoint the model comes from:
        when the task's public corpus is not on this machine, the task as the header knows it
        (engine.tasks.header_task), which reads its corpus once it is here; without a header, or
        one without a vocabulary, CorpusMissing."""
        same = self.task is not None and (setup.task, setup.task_params, setup.train.seed, upload) == (
            self.setup.task, self.setup.task_params, self.setup.train.seed, self.upload
        )
        if same:
            return self.task
        try:
            return setup.make_task(upload)
        except datasets.CorpusMissing:
            if header is None or header[1] is None:
                raise
            spec, vocab, target_vocab = header
            return engine.tasks.header_task(setup.task, spec, vocab, target_vocab, seed=setup.train.seed,
                                            **setup.task_params)

    def install(self, setup: Setup, upload: str | bytes | None = None, model: engine.SequenceModel | None = None,
                origin: str | None = None) -> None:
        """Make `setup` (with `model`, else fresh weights from its seed) the lab's experiment;
        `origin` names the shipped checkpoint the model was copied from (pretrained/), if any.
        Raises ValueError, leaving the lab as it was, when the task cannot be made, the setup is
        over the size budget (a shipped model over it is installed to read: over_training_budget), or the
        model and task cannot train together."""
        if setup.upload_param is None:
            upload = None  # only charlm and sentiment read a file
        header = None if model is None else (model.spec, getattr(model, "vocab", None),
                                             getattr(model, "target_vocab", None))
        task = self.task_for(setup, upload, header)
        too_big = over_training_budget(setup, task, origin)
        if model is None:
            model = engine.build_model(setup.model, task, seed=setup.train.seed)
        trainer = engine.Trainer(model, task, setup.train)
        self.playing = False
        with self.lock:
            self.setup, self.upload = setup, upload
            self.task, self.model, self.trainer, self.too_big = task, model, trainer, too_big
            self.made_from_corpus: tuple[Probes, HeldOut] | None = None
            self.missing: datasets.CorpusMissing | None = None  # what measured() last waited for
            try:
                self.measured()
            except datasets.CorpusMissing:
                pass  # a model opened before its corpus is here: measured once it is
            self.marks: list[tuple[int, str]] = []  # (step, what changed there): drawn on the curves
            self.origin = origin  # its steps count from the checkpoint's, which its card gives
            self.renewal_cost, self.drawn_at = 0.0, -1  # s the last drawing of a new recording took; its step

    def measured(self) -> tuple[Probes, HeldOut]:
        """The installed model's probe samples and held-out log, made when it is installed, or for a
        model opened before its corpus was on this machine, at the first call once the corpus is here
        (before its first training step: their logs start at the step it was opened at). Until then
        CorpusMissing, which names the corpus, its size, source, licence and how to get it."""
        if self.made_from_corpus is None:
            with self.lock:
                if self.made_from_corpus is None:
                    try:
                        probes = Probes(self.trainer, self.setup.model, self.lock)
                        self.made_from_corpus = (probes, HeldOut(self.trainer))
                    except datasets.CorpusMissing as missing:
                        self.missing = missing
                        raise
                    self.missing = None
        return self.made_from_corpus

    @property
    def probes(self) -> Probes:
        return self.measured()[0]

    @property
    def held_out(self) -> HeldOut:
        return self.measured()[1]

    @property
    def corpus_missing(self) -> datasets.CorpusMissing | None:
        """The public corpus the lab's model waits for before it trains, is scored or opened up on
        samples (its task was made from its checkpoint's header), or None: here, or never needed."""
        try:
            self.measured()
        except datasets.CorpusMissing as missing:
            return missing
        return None

    @property
    def measured_yet(self) -> bool:
        """Whether the probes and held-out log exist, read without the lock (the class board's thread)."""
        return self.made_from_corpus is not None

    @property
    def steps_taken(self) -> int:
        return self.trainer.steps_done

    def held_bytes(self) -> int:
        """Its model's weights four times over (READ_ONLY_COPIES times, read only), and its data as its task
        counts it (a lab that read a 66 MB review CSV held about 300 MB more than its weights), the upload
        kept beside it. 0 until installed."""
        if self.task is None or not hasattr(self, "model"):
            return 0
        weights = weights_bytes(self.model) if self.trainable else read_only_bytes(self.model)
        return weights + self.task.held_bytes(beside=(self.upload,))

    def steps_left(self, until: int) -> int:
        return 0 if self.trainer.diverged_at is not None else max(0, until - self.trainer.steps_done)

    @property
    def trainable(self) -> bool:
        """Whether the model may train here: every model but a shipped one over the training budget."""
        return self.too_big is None

    def advance(self, until: int | None = None) -> bool:
        """One training step (the caller holds the lock), measured every RECORD_EVERY steps."""
        if not self.trainable or self.trainer.diverged_at is not None or (until is not None and self.finished(until)):
            return False
        probes, held_out = self.measured()  # CorpusMissing before any step while the corpus is not here
        with one_step():  # its recording and held-out scoring too
            self.trainer.step(1)
            probes.trained()
            held_out.trained()
        return True

    def finished(self, until: int) -> bool:
        return self.trainer.steps_done >= until or self.trainer.diverged_at is not None

    def recording(self, index: int = 0) -> engine.Recording:
        """Probe sample `index` recorded; for a tick of the live fragment, kept until RENEW_FACTOR x
        the last renewal's drawing has passed. A tick asks for nothing new (a moved control starts a
        whole-page run, which records afresh), so everything it draws was worked out from one recording."""
        return self.probes.recording(index, RENEW_FACTOR * self.renewal_cost if self.ticking else 0.0)

    def drawn(self, seconds: float) -> None:
        """A drawing that renewed the recording took `seconds`: what the next renewal waits on."""
        if self.probes.recorded_at != self.drawn_at:
            self.renewal_cost, self.drawn_at = seconds, self.probes.recorded_at

    def symbols(self, index: int, stack: str | None = None) -> list[str] | None:
        """What probe sample `index` reads at each step, as the task's own symbols, when its
        inputs are symbols (tokens, or one-hot like recall's); None for values. In the order the
        stack reads them: an encoder set to reverse its source reads it backwards."""
        symbols = self.task.symbols_of(self.probes.samples[0][index])
        if symbols is not None and stack == "encoder" and self.setup.model.reverse_source:
            return symbols[::-1]
        return symbols

    def reset(self) -> None:
        """Fresh weights from the seed; the same task and upload."""
        self.install(self.setup, self.upload)

    def start(self, setup: Setup) -> None:
        """Begin again from `setup` (a lesson): a fresh model, no upload."""
        self.install(setup)

    def step(self) -> None:
        """One training step, pausing first."""
        self.playing = False
        with self.lock:
            self.advance()

    def change(self, setup: Setup, upload: str | bytes | None = None) -> str:
        """Apply new settings. A new task, task parameter, model setting, seed or upload builds a
        new model (training restarts: a seed draws the start, the data and the probe and held-out
        samples); other training settings carry on from the current weights. Nothing changes if
        the new settings are refused (the ValueError says why)."""
        if setup.upload_param is None:
            upload = None
        rebuild = (setup.task, setup.task_params, setup.model, setup.train.seed, upload) != (
            self.setup.task, self.setup.task_params, self.setup.model, self.setup.train.seed, self.upload
        )
        if rebuild:
            self.install(setup, upload)
            return "rebuilt"
        if setup.train != self.setup.train:
            if not self.trainable:
                raise ValueError("this shipped model reads but does not train here, so its training settings "
                                 "stay as it was built; to train a model of its task, open the task's preset")
            check_cost(setup, self.task)  # a bigger batch is a heavier step: the budget holds here too
            with self.hold():
                self.trainer.retune(setup.train)
                self.marks.append((self.trainer.steps_done, changes(self.setup.train, setup.train)))
                self.setup = setup
            return "retuned"
        return "unchanged"

    def restore_best(self) -> int:
        """Early stopping: put back the weights of the step with the lowest held-out loss so far,
        pausing first. The history and the step count carry on (training goes on from those
        weights), and the curves mark the step it happened at. Returns the best step."""
        self.playing = False
        with self.lock:
            best = self.held_out.restore()
            self.marks.append((self.trainer.steps_done, f"back to step {best:,}'s weights"))
            self.probes.forget()
            return best

    def load_model(self, data: bytes) -> None:
        """Replace the model with an uploaded checkpoint. Its task becomes the current task (with
        that task's default parameters if it is another one). Raises ValueError, leaving the lab
        as it was, when the file is not a checkpoint or fits none of this app's tasks. Everything is
        checked on the file's header, the size budget included, before a weight is read."""
        cfg, spec, vocab = engine.checkpoint.config_of(data)
        if spec.name not in OFFERED:
            raise ValueError(f"this model was trained on a task called {spec.name!r}, which this app does not have")
        shipped = pretrained.name_of(data)  # its card names its task's parameters (the translator's corpus)
        setup = (pretrained.setup_for(pretrained.named(shipped)) if shipped is not None else
                 self.setup if spec.name == self.setup.task else preset_setup(spec.name))
        upload = self.upload if setup is self.setup else None
        task = self.task_for(setup, upload, (spec, vocab, engine.checkpoint.target_vocab_of(data)))
        if spec != task.spec:
            raise ValueError(
                f"this model reads {spec.input_size} inputs and gives {spec.output_size} "
                f"outputs, but the {task.spec.name} task as set here needs {task.spec.input_size} and "
                f"{task.spec.output_size}; set the task's parameters (and, for an uploaded corpus or "
                "CSV, the file) as they were when it was saved"
            )
        opened = dataclasses.replace(setup, model=cfg)  # may raise (a model the app does not open)
        over_training_budget(opened, task, shipped)  # a shipped checkpoint over the training budget opens to read
        self.install(opened, upload, engine.from_bytes(data), origin=shipped)

    def summary(self) -> dict[str, str]:
        """What the sidebar shows on every page."""
        cfg = self.setup.model
        shape = f"{cfg.num_layers} x {cfg.hidden_size}" + (" bidirectional" if cfg.bidirectional else "")
        last = self.trainer.last
        metric = self.task.metric_name
        shown = (lambda value: f"{value:.1%}") if metric == "accuracy" else (lambda value: f"{value:.3g}")
        # Read without the lock (the class board's thread calls this): a model opened before its corpus was
        # here has no held-out log yet, and says what it waits for.
        made = self.made_from_corpus
        scored = made[1].log.last if made is not None else None  # scored every EVAL_EVERY steps
        held_out = (f"{shown(scored['metric'])} ({self.step_said(scored['step'])})" if scored is not None else
                    f"needs {self.missing.corpus.title}" if self.missing is not None else "-")
        return {
            "task": self.setup.task,
            "model": f"{cfg.arch.upper()} {shape}",
            "parameters": f"{sum(p.numel() for p in self.model.parameters()):,}",
            **({"pretrained": self.origin} if self.origin else {}),
            "steps trained": (f"{self.shipped_steps:,} before shipping + {self.trainer.steps_done:,} here"
                              if self.origin else f"{self.trainer.steps_done:,}"),
            "last loss": "-" if last is None else "diverged" if last.diverged else f"{last.loss:.4g}",
            f"held-out {metric}": held_out,
            **self.card_score(metric, shown),
        }

    @property
    def shipped_steps(self) -> int:
        """The steps a shipped model trained before it was shipped, as its card says (0 for a model built here):
        "steps trained: 0" under a model trained 2,000 steps read as an untrained one (issue 44)."""
        return pretrained.named(self.origin).fields["training"]["steps"] if self.origin else 0

    def step_said(self, step: int) -> str:
        """A step of this lab's model as a caption says it: "step 25", or a shipped model's counted from its
        card's ("step 8,000, as shipped": "step 0" under a translator trained 8,000 steps read as untrained)."""
        if not self.origin:
            return f"step {step:,}"
        shipped = self.shipped_steps
        if step == 0:
            return f"step {shipped:,}, as shipped"
        return f"step {shipped + step:,} ({shipped:,} before shipping)"

    def card_score(self, metric: str, shown) -> dict[str, str]:
        """A shipped model's card scores it on its own held-out data (a file never trained on), which
        is not the Lab's held-out set (windows of the training text for a char LM): both are shown,
        each named, so the card's 48% and the sidebar's 73% do not read as one figure gone wrong."""
        if not self.origin:
            return {}
        held_out = pretrained.named(self.origin).fields["held_out"]
        if metric not in held_out["metrics"]:
            return {}
        return {f"{metric} on the card's test data": f"{shown(held_out['metrics'][metric])} (data never trained on, "
                                                     "as its card on Home says)"}


def changes(old: engine.TrainConfig, new: engine.TrainConfig) -> str:
    """What a retune changed, as a curve's mark reads it: "lr 0.003 → 0.0003, clip_norm 1 → none"."""
    def shown(value) -> str:
        return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    return ", ".join(
        f"{f.name} {shown(getattr(old, f.name))} → {shown(getattr(new, f.name))}"
        for f in dataclasses.fields(new) if getattr(old, f.name) != getattr(new, f.name)
    )
