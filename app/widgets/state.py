"""Every key this app keeps in st.session_state, named once, with typed getters.

Pages and widgets read and write session state only through these names, so one idea (the sample
opened up, the layer looked at) has one key on every page and moves with the student between them.
"""
from __future__ import annotations

import streamlit as st

from app.session.comparison import Comparison
from app.session.lab import Lab

LAB = "lab"  # this session's Lab
LAB_ID = "lab_id"  # its id in the server's LabStore, kept in the address bar across reloads
OPENED = "model_opened"  # what the last run opened (an upload), said in a toast by the run after it
LINK_PROBLEM = "link_problem"  # why the link's settings were not used, shown once
TAB = "tab_token"  # this tab's token: the store hands a lab to one tab at a time (store.Kept.holder)
LAB_MOVED = "lab_moved"  # the lab id another tab of this browser took from this one: said once, with a button
LAB_LOST = "lab_lost"  # the link's lab id names no lab this process holds: said once
LESSON = "lesson"  # the key of the lesson opened from Home, while its text applies
TARGET_STEPS = "target_steps"  # "Train up to step"
PRESENTATION = "presentation"  # presentation mode: larger type for a projector
PRESENTATION_SWITCHED = "presentation_switched"  # set by the toggle for the run it starts: fold or open the sidebar
EXPORT_FORMAT = "export_format"  # what the camera button on every figure saves: "png" or "svg"
# The part of the model the look-inside pages open up (the part picker).
PROBE_INDEX = "probe_index"
STACK = "stack"
LAYER = "layer"
DIRECTION = "direction"
# Unroll
UNROLL_T = "unroll_t"
UNROLL_PLAYING = "unroll_playing"
UNROLL_CLICKED = "unroll_play_clicked"  # set by the Play/Pause button for the run it starts
UNROLL_LAST_STEP = "unroll_last_step"  # the last t of the sample shown, for Play to know it is at the end
UNROLL_UNIT = "unroll_unit"
# Gradients
TRUNCATION_OPEN = "gradients_truncation_open"  # whether its expander is open (st.expander's state)
INITIALISATION_OPEN = "gradients_initialisation_open"
# Gradients: the spectral radius swept
SWEEP = "gradients_sweep"  # this session's spectral_sweep.Sweep: its curves, measured once each
SWEEP_OPEN = "gradients_sweep_open"  # whether its expander is open (it computes only while open)
SWEEP_RHO = "gradients_sweep_rho"  # the slider's ρ
SWEEP_START = "gradients_sweep_start"  # W_hh before scaling: "orthogonal" or "default"
SWEEP_OWN = "gradients_sweep_own"  # sweep the student's task and one-layer RNN instead of the adding problem
# Attention
ATTENTION_T = "attention_t"  # the output step the decoding figure opens
BEAM_WIDTH = "beam_width"
FORCED_TOKEN = "forced_token"  # the token the decoder is made to write at step t, or None
LINKED_OPEN = "attention_linked_open"  # whether the linked alignment's expander is open
YEAR_DIGITS = "attention_year_digits"  # (weakref to the probes, step, hits, digits): encoder_decoder.year_digits
SOURCE_TEXT = "attention_source_text"  # a source the student types (a date), instead of a probe sample
BEAM_STEP = "beam_step"  # the output step whose attention rows the beam's hypotheses show
BLEU = "attention_bleu"  # (trainer ref, held-out row, step, {beam width: BLEU}, [(step, greedy)]): decoded_counts
# (trainer ref, (step, held-out row), {(low, high): (sentences, BLEU)}): decoded_counts
BLEU_BY_LENGTH = "attention_bleu_by_length"
# Compare cells
COMPARISON = "comparison"
COMPARE_STEPS = "compare_steps"
READ_LONGER_REFUSED = "read_longer_refused"  # why Build & Train's "Read the last N words" was refused
COMPARE_KIND = "compare_kind"  # what the runs differ in: comparison.KINDS
COMPARISONS_ASIDE = "comparisons_aside"  # kind -> the comparison of each other kind, paused, to switch back to
# Compare architectures
ARCHITECTURES = "architectures"  # this session's Architectures
ARCH_STEPS = "arch_steps"  # "Train each up to step"
ARCH_TASK = "arch_task"  # the task picked
ARCH_LENGTH = "arch_length"  # its length (recall's lag, else seq_len), as typed
ARCH_PARAMETERS = "arch_parameters"  # parameters per network, as typed
ARCH_PROBLEM = "arch_problem"  # why the last choice was refused, until one is taken
# Why √d_k
SCALING = "scaling"  # this session's ScalingRuns (Why √d_k): its transformer with and without the scaling
SCALING_STEPS = "scaling_steps"  # "Train each up to step" there
EMBEDDINGS = "embeddings"  # this session's EmbeddingRun (Embeddings page): word2vec on the shipped prose
EMBEDDING_STEPS = "embedding_steps"  # "Train up to step" there
EMBEDDING_WORD = "embedding_word"  # the word whose neighbours the page lists (and marks on the projection)
EMBEDDING_ANALOGY = ("embedding_a", "embedding_b", "embedding_c")  # a − b + c
EMBEDDING_AXIS = ("embedding_axis_from", "embedding_axis_to", "embedding_axis_words")
EMBEDDING_COMPARED = "embedding_compared"  # the words drawn one-hot and learned
EMBEDDING_SHOWN = "embedding_shown"  # how many words the projection draws
EMBEDDING_SAMPLING = "embedding_sampling"  # ... picked by frequency or at random
EMBEDDING_PROJECTION = "embedding_projection"  # ... as PCA or a t-SNE map
EMBEDDING_LINK_PROBLEM = "embedding_link_problem"  # what the link's Embeddings settings had wrong
EMBEDDING_SETTINGS = ("embedding_dim", "embedding_window", "embedding_negatives")
# Transfer learning
TRANSFER = "transfer"  # this session's TransferRuns: from scratch and pretrained
TRANSFER_STEPS = "transfer_steps"  # "Train each up to step" there
TRANSFER_RECIPE = "transfer_recipe"  # the Recipe last asked for in its form
TRANSFER_CSV = "transfer_csv"  # its uploader: a review CSV to read instead of the shipped reviews
TRANSFER_REVIEWS = "transfer_reviews"  # that CSV parsed (ParsedReviews, shared read-only), or None
VECTORS = "vectors"  # this session's VectorRuns (Pretrained embeddings): random, frozen, fine-tuned starts
VECTORS_STEPS = "vectors_steps"  # "Train each up to step" there
VECTORS_PLAN = "vectors_plan"  # the Plan last asked for in its form
VECTORS_YOURS = "vectors_yours"  # the student's own word2vec vectors, copied from the Embeddings page when asked
VECTORS_CSV = "vectors_csv"  # its uploader: a review CSV to read instead of the shipped sentences
VECTORS_REVIEWS = "vectors_reviews"  # that CSV parsed (ParsedReviews, shared read-only), or None
# BERT and GPT
BERT = "bert_gpt"  # this session's ObjectiveRuns: the masked (BERT) and causal (GPT) runs
BERT_STEPS = "bert_steps"  # "Train each up to step" there
BERT_PLAN = "bert_plan"  # the Plan last asked for in its form
BERT_READ = "bert_read"  # which models the read-outs use: "yours" (copies of the runs) or "shipped"
BERT_MASKED = "bert_masked"  # the sentence with one <mask>, as typed
BERT_HEADS = "bert_heads"  # the attention maps: every head, or each layer's mean of heads
BERT_WORD = "bert_word"  # the word followed through two sentences
BERT_FIRST, BERT_SECOND = "bert_first", "bert_second"  # the two sentences
BERT_LAYER = "bert_layer"  # the layer whose nearest held-out words are listed
BERT_BANKS = "bert_banks"  # the read models' held-out context banks, by the models' key, while they stand
# The class (issue 32): what this session shows the teacher's board, and what the board keeps
PRESENCE = "class_presence"  # this session's class_status.Presence: its handle, name, page, lesson, models
CLASS_NAME = "class_name"  # the name the student typed for the board, as typed
CLASS_NEWEST = "class_newest"  # the seq of the newest class broadcast this page has read: an older one is a replay
CLASS_PAUSED = "class_paused"  # the teacher has paused the class: Play, Step and Reset wait (class_link.py)
FOLLOWED = "class_followed"  # the sequence number of the last "follow me" this session answered or dismissed
PREDICTION = "prediction"  # {"lesson", "choice", "locked"}: the student's answer to the open lesson's question
TEACHER = "teacher"  # True once this session gave the class's teacher key, the link's code or a pass
TEACHER_PASS = "teacher_pass"  # the pass this session keeps in its browser's cookie (session/teacher_pass.py)
TEACHER_COOKIE_TRIED = "teacher_cookie_tried"  # this session has tried the code in the teacher link's cookie, once
BOARD_SEEN = "board_seen"  # the board's memory of each student's steps and when they last moved (stalled)
BOARD_HIDE_NAMES = "board_hide_names"  # the board shows "student N" for each name (the projector)
# BPTT and RTRL
RTRL = "rtrl"  # this session's rtrl.SideBySide: the page's model, its sample and what is computed of them
RTRL_ARCH = "rtrl_arch"  # the cell: "rnn" or "gru"
RTRL_TASK = "rtrl_task"  # "sine" or "adding"
RTRL_HIDDEN = "rtrl_hidden"  # H
RTRL_LENGTH = "rtrl_length"  # T
RTRL_TRAINED = "rtrl_trained"  # Adam steps before looking
RTRL_STEP = "rtrl_step"  # the step t the online gradient is read at (1..T)
RTRL_ROUND = "rtrl_round"  # how many times "Measure again" was pressed: part of the cost table's cache key
# Generate
GEN_PROMPT = "gen_prompt"
GEN_LENGTH = "gen_length"
GEN_METHOD = "gen_method"  # engine.sampling.METHODS
GEN_TEMPERATURE = "gen_temperature"
GEN_K = "gen_k"
GEN_P = "gen_p"
GEN_WIDTH = "gen_width"
GEN_SEED = "gen_seed"
GEN_RESULT = "gen_result"  # the last text generated: a generation.Generated
GEN_PROBLEM = "gen_problem"  # why the last request was refused, shown once
GEN_POSITION = "gen_position"  # the position whose next-character distribution is shown
GEN_VIEW_TEMPERATURE = "gen_view_temperature"  # the temperature that distribution is shown at
GEN_LAYER = "gen_layer"  # the layer (and h or c) whose units colour the text
GEN_UNIT = "gen_unit"  # the unit the text is coloured by
# A page's own settings that opening a lesson sets back, so the page opens as the lesson says (Generate's prompt
# to its model's default, its text written by another model gone).
RESET_BY_A_LESSON = (TRANSFER_RECIPE, VECTORS_PLAN, COMPARE_KIND, COMPARISON, COMPARISONS_ASIDE, BERT_PLAN, BERT_READ,
                     BERT_MASKED, BERT_WORD, BERT_FIRST, BERT_SECOND, GEN_PROMPT, GEN_METHOD, GEN_RESULT)
# Build & Train
# Open your own model (widgets/torch_upload.py): the file, what shapes cannot say, the task it opens on
TORCH_FILE = "torch_upload.file"
TORCH_VOCAB = "torch_upload.vocab"
TORCH_ACTIVATION = "torch_upload.activation"
TORCH_MAPPING = "torch_upload.mapping"
TORCH_TASK = "torch_upload.task"
TORCH_OPEN = "torch_upload.open"
FORM_SYNCED = "form_synced_with"  # the Lab setup the settings form last showed
# Transformers: Positional encoding
PE_POSITIONS = "pe_positions"  # positions shown (rows of the table)
PE_WIDTH = "pe_width"  # d, the width of the table
PE_POSITION = "pe_position"  # the position read off the figure (the GWU lecture's 22)
PE_POSITION_BOX = "pe_position_box"  # its number box (its range changes: see transformer/models.shadowed)
PE_PAIR = "pe_pair"  # the even dimension i of the pair (i, i+1) read (the GWU lecture's 100)
PE_PAIR_BOX = "pe_pair_box"  # its number box
PE_START = "pe_start"  # (model, step, its learned table) when the page first drew that model
# Transformers: Self-attention
SA_KIND = "sa_kind"  # an encoder-decoder's decoder: its "self" or its "cross" attention
SA_HEAD = "sa_head"  # the focused head (an int), or "mean of heads"
SA_AVERAGE = "sa_average"  # the grid shows each layer's mean over heads
SA_QUERY = "sa_query"  # the query the why-sqrt(d_k) pair opens
SA_QUERY_SLIDER = "sa_query_slider"  # its slider (0..T-1, a range that changes with the stack)
SA_TEXT = "sa_text"  # text a student types for a character model to read instead of a sample
SA_DRAWN = "sa_drawn"  # what the live figures show, for downloads made on click
SA_LINES_QUERY = "sa_lines_query"  # the token the lines view highlights, or None for every token


def form_key(section: str, name: str) -> str:
    """A settings-form widget: form.task.name, form.model.hidden_size, form.train.lr..."""
    return f"form.{section}.{name}"


def upload_key(task: str) -> str:
    """The file uploader of a task that reads files: each task keeps its own file."""
    return f"upload.{task}"


def window_key(seq_len: int) -> str:
    """The truncation window looked at, per sequence length (its slider's range)."""
    return f"look_window.{seq_len}"


# Query parameters of the address bar that are not settings of the Setup.
LAB_PARAM = "lab"  # this tab's lab id: a reload brings that lab back, to its owner only
LESSON_PARAM = "lesson"  # the open lesson: a lesson's link opens it, banner included
STEPS_PARAM = "steps"  # "Train up to step": a teacher's link gives the class the same target
OWNER_COOKIE = "unrolled_owner"  # the browser's owner token, never in a link

# What a reload brings back with the lab, beside it.
# Not the class name: its box is drawn before the page restores these (a reload then raised
# StreamlitWidgetAlreadyInstantiatedError); a reloaded student types it again.
KEPT_WITH_THE_LAB = (LESSON, TARGET_STEPS, PRESENTATION, EXPORT_FORMAT, FOLLOWED, PREDICTION)
# The pages that train runs of their own (in turns), and the key each keeps them under; every other
# page trains the Lab. A lesson's question and the class board read the lesson's runs from here.
OWN_RUNS = {"compare": COMPARISON, "scaling": SCALING, "transfer": TRANSFER, "word-vectors": VECTORS,
            "bert-gpt": BERT, "architectures": ARCHITECTURES}


def get(key: str, default=None):
    return st.session_state.get(key, default)


def tab_alive() -> None:
    """A run of this session's own (a page run, a banner poll, a tick of its training): its tab is there.
    Said to the class board's Presence, when the session has one (app/session/class_status.py)."""
    presence = st.session_state.get(PRESENCE)
    if presence is not None:
        presence.seen()


def lab() -> Lab | None:
    return st.session_state.get(LAB)


def comparison() -> Comparison | None:
    return st.session_state.get(COMPARISON)


def probe_index() -> int:
    return st.session_state.get(PROBE_INDEX, 0)


def layer() -> int:
    return st.session_state.get(LAYER, 0)


def direction() -> int:
    """0 forward, 1 backward (the direction radio shows the words)."""
    return 1 if st.session_state.get(DIRECTION) == "backward" else 0


def target_steps() -> int:
    return st.session_state[TARGET_STEPS]


def carry_over(key: str) -> None:
    """Before a widget kept across pages (persist_state="session") is drawn: write its value back.
    Its element id includes the page, so on another page it mounts under a new id, and Streamlit
    registers that id with the widget's default and copies the kept value onto it only at the end
    of the run: the browser is never sent the value, shows the default ("Train up to step" 1,
    after a lesson that opened Gates) and sends it back with the next click. A value set through
    st.session_state is sent to the browser."""
    if key in st.session_state:
        st.session_state[key] = st.session_state[key]
