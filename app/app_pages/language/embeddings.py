"""Embeddings: one-hot against dense word vectors, and word2vec (skip-gram with negative sampling,
Mikolov et al. 2013) trained live on four Austen novels, with its space read out as it learns:
a 2-D projection, nearest neighbours, analogies and the axis between two words."""
from __future__ import annotations

import re

import numpy as np
import streamlit as st
import torch
from torch import Tensor

from app.charts import embeddings as charts
from app.charts.training import training_curves
from app.charts.views import view
from app.session import pretrained
from app.session.embeddings import (
    DIMS,
    FEWEST_WORDS,
    NEGATIVES,
    PROJECTIONS,
    SHOWN,
    TSNE_WORDS,
    WINDOWS,
    EmbeddingRun,
    PageSettings,
    parse_link,
    with_settings,
)
from app.session.lab import Lab
from app.session.tsne_maps import TsneMap, TsneMaps
from app.widgets import state
from app.widgets.controls import live_training, progress, set_playing
from app.widgets.corpus_needed import corpus_needed
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from app.widgets.pretrained import open_shipped
from engine import datasets
from engine import embeddings as readouts
from engine.prose import RELATED
from engine.tsne import perplexity_for

STEPS = 3000  # the measured claim's budget (tests/engine/test_word2vec.py, benchmarks/README section 16)
TRAIN_SECONDS = 0.5  # a step takes 3-6 ms: about a hundred between two redraws
COMPARED = ["mr", "mrs", "he", "she", "morning", "evening", "brother", "sister"]
ANALOGY = ("mrs", "mr", "he")  # mrs − mr + he: which word is to "he" as "mrs" is to "mr"?
AXIS = ("he", "she", "mr, mrs, father, mother, brother, sister, husband, wife, son, daughter, sir, lady, man, woman")
NEIGHBOURS = 10
POLL_SECONDS = 0.5  # how often a paused page looks whether the t-SNE map it waits for is done
SENTIMENT = "sentiment-lstm"  # the shipped checkpoint whose embedding the page offers
SPECIAL = re.compile(r"<[a-z]+>")  # a vocabulary's own tokens (padding, unknown, start, end): no words
# The claim the caption quotes, as the training-tier test measured it after STEPS steps over seeds 0-2
# on two kernel paths (avx2 and default, the same figures): the mean share of the vocabulary nearer to
# a RELATED word than its partner.
MEASURED_SHARE = (0.019, 0.073)


def run() -> None:
    try:
        embedding, missing = current(), None  # before the header, which rewrites the link with the Lab's settings alone
    except datasets.CorpusMissing as absent:  # word2vec's prose is not on this machine: the rest of the page works
        embedding, missing = None, absent
    lab = page_header("Embeddings", own_runs="word2vec runs of its own")
    st.markdown(
        "A network reads words as numbers. The simplest code is one-hot: word k of a vocabulary of V is a "
        "vector of V zeros with a 1 at k. Every two words are then orthogonal, their cosine 0, and \"mother\" "
        "is as far from \"father\" as from \"umbrella\". An embedding gives each word a dense vector of a few "
        "dozen numbers, learnt so that words used alike lie near each other (\"Recurrent Architectures\", "
        "section NLP). word2vec learns them by skip-gram with negative sampling (Mikolov et al. 2013): each "
        "word's vector v is pushed towards the output vectors u of the words around it, and away from k "
        "noise words drawn from the unigram distribution to the power 3/4:")
    st.latex(r"\log\sigma(u_{\text{context}}^\top v_w) + \sum_{i=1}^{k}\log\sigma(-u_{\text{noise}_i}^\top v_w)")
    problem = st.session_state.pop(state.EMBEDDING_LINK_PROBLEM, None)
    if problem:
        st.warning(problem, icon=":material/link_off:")
    if missing is not None:
        corpus_needed(missing, "word2vec trains on its words here, and its read-outs (nearest words, analogies, the "
                               "projection) read the vectors it learns; your model's own embedding, below, needs "
                               "nothing.", "word2vec")
    else:
        settings(embedding)
        view_settings(embedding)
        controls(embedding)
        live_training(embedding, draw, state.EMBEDDING_STEPS, TRAIN_SECONDS)
        read_outs(embedding)
        downloads(embedding)
    your_model(lab)
    if embedding is not None:
        write_link(embedding)


def current() -> EmbeddingRun:
    """This session's run; the first time, made from the link's settings (the defaults, saying
    what was wrong, when they cannot be used). CorpusMissing while the prose is not on this machine."""
    embedding = state.get(state.EMBEDDINGS)
    if embedding is None:
        try:
            page = parse_link(st.query_params.to_dict())
        except datasets.CorpusMissing:
            raise  # not the link's fault: the page says what to download, and reads the link once it is here
        except ValueError as err:
            st.session_state[state.EMBEDDING_LINK_PROBLEM] = (
                f"This link's Embeddings settings could not be used ({literal(err)}). The page started with its "
                "defaults instead.")
            page = PageSettings()
        embedding = st.session_state[state.EMBEDDINGS] = EmbeddingRun(page.cfg)
        st.session_state.setdefault(state.EMBEDDING_STEPS, STEPS)
        st.session_state[state.EMBEDDING_SHOWN] = page.words
        st.session_state[state.EMBEDDING_SAMPLING] = page.pick
        st.session_state[state.EMBEDDING_PROJECTION] = page.projection
    # Streamlit forgets a widget's value on a page that does not draw it: back here, the defaults
    st.session_state.setdefault(state.EMBEDDING_SHOWN, SHOWN)
    st.session_state.setdefault(state.EMBEDDING_SAMPLING, "frequent")
    st.session_state.setdefault(state.EMBEDDING_PROJECTION, "pca")
    return embedding


def page_settings(embedding: EmbeddingRun) -> PageSettings:
    """The page's settings as they are: the run's word2vec settings and the figures' choices."""
    return PageSettings(embedding.cfg, state.get(state.EMBEDDING_SHOWN) or SHOWN,
                        state.get(state.EMBEDDING_SAMPLING) or "frequent",
                        state.get(state.EMBEDDING_PROJECTION) or "pca")


def write_link(embedding: EmbeddingRun) -> None:
    """The page's settings beside the Lab's in the address bar (the header wrote the Lab's), so the
    link reproduces both."""
    query = page_settings(embedding).to_query()
    if any(st.query_params.get(k) != v for k, v in query.items()):
        st.query_params.update(query)


def settings(embedding: EmbeddingRun) -> None:
    """Dimensions, window and noise words; a new choice trains afresh (Reset with them)."""
    cfg = embedding.cfg
    with st.expander(f"Settings: {cfg.dim} dimensions, a window of {cfg.window}, {cfg.negatives} noise words, "
                     f"{len(embedding.run.words):,} words seen at least {cfg.min_count} times"):
        dim_key, window_key, negatives_key = state.EMBEDDING_SETTINGS
        left, middle, right = st.columns(3)
        dim = left.selectbox("Dimensions", DIMS, index=DIMS.index(cfg.dim), key=dim_key)
        window = middle.selectbox("Window (words each side)", WINDOWS, index=WINDOWS.index(cfg.window),
                                  key=window_key, help="each centre word draws its own reach from 1 to this")
        negatives = right.selectbox("Noise words k", NEGATIVES, index=NEGATIVES.index(cfg.negatives),
                                    key=negatives_key, help="Mikolov et al.: 5-20 for a small corpus")
        wanted = with_settings(cfg, dim=dim, window=window, negatives=negatives)
        if wanted != cfg:
            st.button("Train afresh with these settings", key="embedding_rebuild", icon=":material/refresh:",
                      on_click=rebuild, args=(embedding, wanted))


def view_settings(embedding: EmbeddingRun) -> None:
    """Which words the one-hot picture compares, and how many the projection draws, picked how."""
    words = embedding.run.words
    with st.expander("What the figures show"):
        st.multiselect("Words compared one-hot and learned", words, default=[w for w in COMPARED if w in words],
                       key=state.EMBEDDING_COMPARED, max_selections=16)
        left, middle, right = st.columns([2, 1, 1])
        left.number_input("Words in the projection", FEWEST_WORDS, len(words), step=50, key=state.EMBEDDING_SHOWN,
                          help=f"{FEWEST_WORDS} to {len(words):,} (the whole vocabulary): PCA draws them all within "
                               f"a 2-second rerun on this machine, a t-SNE map {TSNE_WORDS:,} at most "
                               "(benchmarks/README section 19)")
        middle.radio("Picked", readouts.HOW, key=state.EMBEDDING_SAMPLING,
                     format_func={"frequent": "most frequent", "random": "at random"}.get)
        right.radio("Projection", PROJECTIONS, key=state.EMBEDDING_PROJECTION,
                    format_func={"pca": "PCA", "tsne": "t-SNE map"}.get,
                    help="PCA: the two directions of most variance, made at every step. t-SNE (openTSNE): a map "
                         "that keeps each word's nearest neighbours near, made beside the training, a few "
                         "seconds behind it")


def rebuild(embedding: EmbeddingRun, wanted) -> None:
    try:
        embedding.reset(wanted)
    except ValueError as err:
        st.session_state[state.EMBEDDING_WORD + ".refused"] = str(err)


def controls(embedding: EmbeddingRun) -> None:
    refused = st.session_state.pop(state.EMBEDDING_WORD + ".refused", None)
    if refused:
        st.error(f"Those settings were not used: {literal(refused)}. Your vectors are unchanged.",
                 icon=":material/block:")
    paused = state.get(state.CLASS_PAUSED, False)  # by the teacher (class_link.held_still)
    stopped = embedding.run.diverged_at is not None or paused
    play, step, reset, until = st.columns([1, 1, 1, 2], vertical_alignment="bottom")
    play.button("Pause" if embedding.playing else "Play", key="embedding_play", type="primary", width="stretch",
                disabled=stopped, icon=":material/pause:" if embedding.playing else ":material/play_arrow:",
                on_click=set_playing, args=(embedding, not embedding.playing))
    step.button("Step", key="embedding_step", width="stretch", disabled=stopped, icon=":material/skip_next:",
                help="one step: 256 centre words, each with its context and noise words", on_click=embedding.step)
    reset.button("Reset", key="embedding_reset", width="stretch", icon=":material/restart_alt:",
                 help="fresh random vectors from the seed; history cleared", on_click=embedding.reset, disabled=paused)
    until.number_input("Train up to step", min_value=1, max_value=100_000, step=500, key=state.EMBEDDING_STEPS)


def vectors_of(embedding: EmbeddingRun) -> Tensor:
    """[V, dim] the vectors as they are now, copied once per step (every read-out of a redraw shares them)."""
    run = embedding.run
    return view(run, "vectors", (), embedding.vectors, version=run.steps_done)


def draw(embedding: EmbeddingRun) -> None:
    run = embedding.run
    progress(embedding, run.steps_done, state.get(state.EMBEDDING_STEPS) or STEPS,
             f" · {run.epochs:.2f} passes over the text")
    history = run.history_frame()
    show(training_curves(history, "accuracy"), "embedding_training")
    vectors, words = vectors_of(embedding), run.words
    shares = [readouts.closer_share(vectors, words, a, b) for a, b in RELATED]
    st.caption(
        "Left, the loss of a step's pairs; right, the share of their scores on the right side of 0 (a true "
        f"context word above, a noise word below). Now, of {len(RELATED)} pairs the novels use alike (mr and "
        f"mrs, day and night, Elinor and Marianne, ...), the share of the vocabulary nearer to the first word than "
        f"its partner is **{np.mean(shares):.3f}** on average: 0.5 is chance, 0 is the partner nearest of all. "
        f"After {STEPS:,} steps it was {MEASURED_SHARE[0]:.3f} to {MEASURED_SHARE[1]:.3f} (seeds 0-2, two kernel "
        "paths).")
    compared = [w for w in state.get(state.EMBEDDING_COMPARED) or COMPARED if w in set(words)]
    if len(compared) >= 2:
        cos = readouts.cosines(vectors, words, compared).numpy()
        show(charts.one_hot_and_dense(compared, cos, len(words), embedding.cfg.dim), "embedding_one_hot")
        st.caption("Left, the words as one-hot vectors: every pair has cosine 0, whatever the words mean. Right, "
                   "the same words as the vectors learnt so far: words used alike have the larger cosines.")
    projection(embedding, vectors)


def projection(embedding: EmbeddingRun, vectors: Tensor) -> None:
    """PCA of the chosen words at this step, or their newest t-SNE map (made off this thread)."""
    run = embedding.run
    n = min(state.get(state.EMBEDDING_SHOWN) or SHOWN, len(run.words))
    how = state.get(state.EMBEDDING_SAMPLING) or "frequent"
    ids = readouts.sample_words(run.vocab.counts, n, how, seed=0)  # [n]
    words = [run.words[i] for i in ids.tolist()]
    counts = run.vocab.counts[ids].numpy()
    marked = marked_words(vectors, run.words)
    picked = f"{'most frequent' if how == 'frequent' else 'randomly drawn'}"
    if state.get(state.EMBEDDING_PROJECTION) == "tsne" and tsne(embedding, vectors, ids, words, counts, marked):
        return
    flat = view(run, "pca", (n, how), lambda: readouts.pca(vectors[ids]), version=run.steps_done)
    show(charts.projection(flat.coords.numpy(), words, counts, flat.explained.numpy(), marked),
         "embedding_pca")
    st.caption(f"The {n:,} {picked} words at the first two principal components of their vectors at step "
               f"{run.steps_done:,}: a flat shadow of a space of {embedding.cfg.dim} dimensions, so read nearness "
               "from the table below (cosine in the full space), not from this picture. Orange: the word you look "
               "up and its neighbours.")


def tsne(embedding: EmbeddingRun, vectors: Tensor, ids: Tensor, words: list[str], counts: np.ndarray,
         marked: list[str]) -> bool:
    """The newest t-SNE map of these words, saying at which step it was made, and asking for this
    step's; False (PCA is drawn instead) while none is made yet or the words are too many."""
    run, n = embedding.run, len(ids)
    if n > TSNE_WORDS:
        st.warning(f"A t-SNE map of {n:,} words would take longer than this page's 2 seconds on this machine: it "
                   f"maps {TSNE_WORDS:,} at most. Lower \"Words in the projection\" to {TSNE_WORDS:,} or fewer for "
                   f"a map, or keep PCA, which draws all {len(run.words):,}. Below, PCA.", icon=":material/timer:")
        return False
    made = embedding.maps.ask((n, tuple(ids.tolist())), run.steps_done, ids, lambda: vectors[ids])
    if embedding.maps.error:
        st.warning(f"The t-SNE map could not be made ({literal(embedding.maps.error)}). Below, PCA.",
                   icon=":material/error:")
        return False
    if not embedding.playing and (made is None or made.step != run.steps_done):
        wait_for_the_map(embedding.maps, made)
    if made is None:
        st.info(f"The t-SNE map of these {n:,} words is being made beside the training (a few seconds); it "
                "replaces this PCA when done.", icon=":material/hourglass_top:")
        return False
    show(charts.tsne_map(made.coords.numpy(), words, counts, made.step, marked), "embedding_tsne")
    late = run.steps_done - made.step
    behind = ("the vectors' step now" if late == 0 else
              f"{late:,} step{'s' if late > 1 else ''} behind the vectors now (step {run.steps_done:,}): the map "
              "of the newest step is being made")
    st.caption(f"The same words on a t-SNE map (openTSNE, perplexity {perplexity_for(n):.0f}, cosine) of their "
               f"vectors at step {made.step:,}, {behind}. It keeps each word's nearest neighbours near and gives "
               "up distances between groups: read who is near whom, not how far apart two groups lie. It "
               "starts from the PCA, so maps of successive steps look alike. Orange: the word you look up and "
               "its neighbours.")
    return True


@st.fragment(run_every=POLL_SECONDS)
def wait_for_the_map(maps: TsneMaps, drawn: TsneMap | None) -> None:
    """A paused page redraws once a newer t-SNE map than the one it drew (`drawn`) is done, or the
    map failed (a playing page redraws anyway). Asked whenever the map drawn is not of this step, not
    only while one is being made: one done between the ask and this call would have gone unseen."""
    if maps.done is not drawn or maps.error:
        st.rerun()


def marked_words(vectors: Tensor, words: tuple[str, ...]) -> list[str]:
    word = (state.get(state.EMBEDDING_WORD) or "").strip().lower()
    if word not in set(words):
        return []
    return [word, *(w for w, _ in readouts.nearest(vectors, words, word, NEIGHBOURS))]


def read_outs(embedding: EmbeddingRun) -> None:
    """The student's questions of the space: drawn at each whole-page run (a word typed, Pause)."""
    run = embedding.run
    vectors, words = vectors_of(embedding), run.words
    left, right = st.columns(2)
    with left:
        st.markdown("**Nearest words**, by cosine in the full space")
        word = st.text_input("Word", value="mother", key=state.EMBEDDING_WORD).strip().lower()
        table(lambda: readouts.nearest(vectors, words, word, NEIGHBOURS), f"nearest to '{word}'")
    with right:
        st.markdown("**Analogy**: a − b + c, the nearest word (3CosAdd, Mikolov et al. 2013)")
        cols = st.columns(3)
        a, b, c = (col.text_input(name, value=default, key=key).strip().lower() for col, name, default, key in
                   zip(cols, "abc", ANALOGY, state.EMBEDDING_ANALOGY))
        table(lambda: readouts.analogy(vectors, words, a, b, c), f"{a} − {b} + {c}")
    st.markdown("**An axis between two words** (whatlies): every word's place from the first (0) to the second (1)")
    ends = st.columns([1, 1, 4])
    start_key, end_key, words_key = state.EMBEDDING_AXIS
    a = ends[0].text_input("From", value=AXIS[0], key=start_key).strip().lower()
    b = ends[1].text_input("To", value=AXIS[1], key=end_key).strip().lower()
    listed = ends[2].text_input("Words", value=AXIS[2], key=words_key)
    placed = [w.strip().lower() for w in listed.split(",") if w.strip()]
    try:
        positions = readouts.axis(vectors, words, a, b, placed).numpy()
    except ValueError as err:
        st.warning(f"{literal(err).capitalize()}.", icon=":material/help:")
        return
    show(charts.along_axis(positions, placed, a, b), "embedding_axis")
    st.caption("Each word's vector projected on the line from the first word's to the second's (unit vectors), "
               "so the first sits at 0 and the second at 1.")


def table(make, what: str) -> None:
    """The words make() finds with their cosines, or what to change when a word is not in the vocabulary."""
    try:
        found = make()
    except ValueError as err:  # a word not in the vocabulary: the engine suggests spellings
        st.warning(f"{literal(err).capitalize()}.", icon=":material/help:")
        return
    st.dataframe({"word": [w for w, _ in found], "cosine": [round(c, 3) for _, c in found]},
                 hide_index=True, width="stretch")
    st.caption(literal(what))


def downloads(embedding: EmbeddingRun) -> None:
    """The TensorFlow Embedding Projector's pair of files, made on click between two steps."""
    def pair() -> tuple[str, str]:
        return readouts.projector_tsv(embedding.vectors(), embedding.run.words)

    with st.expander("Download the vectors (Embedding Projector's TSV)"):
        left, right = st.columns(2)
        left.download_button("vectors.tsv", lambda: pair()[0], "unrolled-word2vec-vectors.tsv",
                             mime="text/tab-separated-values")
        right.download_button("metadata.tsv", lambda: pair()[1], "unrolled-word2vec-metadata.tsv",
                              mime="text/tab-separated-values")
        st.caption("Load both at projector.tensorflow.org (Load, then each file) to explore them in 3-D. Every chart "
                   "also saves as PNG or SVG from the camera icon in its top-right corner.")


def your_model(lab: Lab) -> None:
    """The same read-outs of the embedding the Lab's own model learnt with its task (the sentiment
    LSTM's words, a character model's characters, an encoder-decoder's source symbols)."""
    st.subheader("Your model's own embedding")
    try:
        with lab.hold():  # between two training steps of a Lab that plays on another page
            vectors, vocab = readouts.token_embedding(lab.model)
    except ValueError as err:
        st.info(f"Your model ({lab.setup.model.arch.upper()} on {lab.setup.task}): {literal(err)}. The shipped "
                "sentiment LSTM learnt a word embedding with its task (it replaces your model):",
                icon=":material/info:")
        opened = st.button("Open the trained sentiment LSTM", key="embedding_open_sentiment",
                           icon=":material/download:")
        if opened and open_shipped(lab, pretrained.named(SENTIMENT)):
            st.rerun()
        return
    real = torch.tensor([not SPECIAL.fullmatch(token) for token in vocab], dtype=torch.int64)  # [V]: 0 = <pad>, <unk>
    ids = readouts.sample_words(real, min(int(real.sum()), 500), "random", seed=0)  # [n]: no counts, so at random
    flat = readouts.pca(vectors[ids])
    shown = [vocab[i] for i in ids.tolist()]
    fig = charts.projection(flat.coords.numpy(), shown, np.ones(len(shown), dtype=np.int64),
                            flat.explained.numpy())
    show(fig.update_layout(title_text=f"{len(shown):,} of your model's {int(real.sum()):,} tokens, projected to 2-D"),
         "embedding_yours")
    since = f" after opening the shipped {lab.origin}" if lab.origin else ""
    st.caption(f"{lab.setup.model.arch.upper()} on {lab.setup.task}, at step {lab.trainer.steps_done:,}{since}: the "
               f"embedding it learnt for its task, {vectors.shape[1]} numbers a token, drawn at random (its task "
               "keeps no counts to pick the most frequent by).")
    token = st.text_input("A token of your model", value=vocab[ids[0]], key="embedding_your_token")
    table(lambda: words_only(readouts.nearest(vectors, vocab, token, NEIGHBOURS + 4)),
          f"nearest to '{token}' in your model")


def words_only(found: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The NEIGHBOURS nearest that are words, not a vocabulary's own tokens (<unk> was among them)."""
    return [(w, c) for w, c in found if not SPECIAL.fullmatch(w)][:NEIGHBOURS]


run()
