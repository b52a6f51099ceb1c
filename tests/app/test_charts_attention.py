"""The attention figures plot exactly the recording's weights, contexts and scores, and a
trained reversal model's plotted alignment is the anti-diagonal."""
import json
import math

import numpy as np
import pytest
import torch

import engine
from app.charts import attention as ca
from app.charts import attention_linked
from app.charts import scaling as cs
from app.charts.beam_tree import beam_tree
from app.charts.labels import visible
from app.charts.style import VERMILLION
from engine.sites import ALIGNMENT, AttentionTrace, Site

from .conftest import plotted

S = 6  # source length of the reversal samples


def spec(fig) -> dict:
    return json.loads(fig.to_json())


def z_of(trace_json: dict) -> np.ndarray:
    return np.array(plotted(trace_json["z"]), dtype=np.float64)


def maps(fig_json: dict) -> list[dict]:
    """The weight heatmaps (not the grey mask overlays), in the order drawn."""
    return [d for d in fig_json["data"] if d["type"] == "heatmap" and d.get("name") != "masked"]


def reversal(attention="additive", steps=0):
    """A reversal task of S symbols and an LSTM encoder-decoder with attention, trained `steps`."""
    task = engine.make_task("reverse", seq_len=S, seed=0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=32, embedding_dim=16, attention=attention),
                               task, seed=0)
    if steps:
        config = engine.TrainConfig(optimizer="adam", lr=1e-2, batch_size=32, clip_norm=1.0, seed=0)
        engine.Trainer(model, task, config).step(steps)
    return task, model


def tokens(task, rec):
    return task.symbols_of(rec.x), [task.target_vocab[i] for i in rec.y.tolist()]


@pytest.fixture(scope="module")
def fresh():
    task, model = reversal()
    x, y = task.batch(2)
    return task, model, engine.record(model, x, y, jacobians=False)


@pytest.fixture(scope="module")
def charlm():
    """A causal transformer (2 layers x 4 heads) on 12 characters: its self-attention is masked."""
    task = engine.make_task("charlm", seed=0)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=4, num_layers=2)
    model = engine.build_model(cfg, task, seed=0)
    x, y = task.batch(1)
    return task, model, engine.record(model, x[:, :12], y[:, :12], jacobians=False)


@pytest.fixture(scope="module")
def transformer_reversal():
    task = engine.make_task("reverse", seq_len=S, seed=0)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=4, num_layers=2)
    model = engine.build_model(cfg, task, seed=0)
    x, y = task.batch(1)
    rec = engine.record(model, x, y, jacobians=False)
    decoder_inputs = ["<sos>"] + [task.target_vocab[i] for i in rec.y.tolist()[:-1]]
    return task, rec, {"encoder": task.symbols_of(rec.x), "decoder": decoder_inputs}


# ------------------------------------------------------------------ alignment

def test_the_alignment_plots_the_weights_with_tokens_as_ticks(fresh):
    task, _, rec = fresh
    trace = rec.attention_traces[ALIGNMENT]
    source, output = tokens(task, rec)
    fig = spec(ca.alignment(trace, source, output))
    (heatmap,) = maps(fig)
    assert heatmap["z"]["dtype"] == "f4"  # a typed array, not a list of numbers
    assert np.array_equal(z_of(heatmap), trace.weights[0].numpy().astype(np.float64))
    assert z_of(heatmap).sum(axis=1) == pytest.approx(np.ones(S + 1), abs=1e-6)
    layout = fig["layout"]
    assert layout["xaxis"]["ticktext"] == source
    assert layout["yaxis"]["ticktext"] == [visible(t) for t in output] and "&lt;eos&gt;" in layout["yaxis"]["ticktext"]
    assert layout["yaxis"]["autorange"] == "reversed"  # t = 0 at the top
    assert layout["xaxis"]["title"]["text"] and layout["yaxis"]["title"]["text"] and layout["title"]["text"]
    assert layout["coloraxis"]["cmin"] == 0 and layout["coloraxis"]["cmax"] == 1
    assert "α" in layout["coloraxis"]["colorbar"]["title"]["text"]
    assert "%{z:.6g}" in heatmap["hovertemplate"] and heatmap["customdata"][2][3] == [output[2], source[3]]
    with pytest.raises(ValueError, match="one token per position"):
        ca.alignment(trace, source[:-1], output)


def test_a_trained_reversal_model_aligns_on_the_anti_diagonal():
    """Measured (model and training seeds 0-2, avx2 and avx512 kernels, 8 samples of 6 rows): after
    600 steps every one of the 48 rows' heaviest weight is on the anti-diagonal, its mean weight
    there 0.66-0.90 per sample. After 300 steps seed 0 still read 5, 5, 3, ... in 5-12 of the 48
    rows, which the earlier exact check over 4 samples tripped on; untrained, 8 of 48 rows and 1/6."""
    task, model = reversal(steps=600)
    x, y = task.batch(8)
    on = []
    for k in range(8):
        rec = engine.record(model, x, y, index=k, jacobians=False)
        z = z_of(maps(spec(ca.alignment(rec.attention_traces[ALIGNMENT], *tokens(task, rec))))[0])  # [S+1, S]
        anti = z[np.arange(S), S - 1 - np.arange(S)]  # output step t reads source S-1-t
        on.extend(z[:S].argmax(axis=1) == np.arange(S)[::-1])
        assert anti.mean() > 0.5
    assert np.mean(on) > 0.9  # the plotted rows' heaviest weights on the anti-diagonal


def test_a_decoding_step_shows_alpha_t_c_t_and_the_next_token(fresh):
    task, _, rec = fresh
    trace, t = rec.attention_traces[ALIGNMENT], 3
    source, _ = tokens(task, rec)
    fig = spec(ca.decoding_step(trace, rec.y_hat, t, source, task.target_vocab))
    alpha, context, p = fig["data"]
    assert np.array_equal(plotted(alpha["y"]), trace.weights[0, t].numpy().tolist())
    assert np.array_equal(plotted(context["y"]), trace.context[0, t].numpy().tolist())
    expected = torch.softmax(rec.y_hat[t].double(), dim=-1).numpy()
    assert plotted(p["y"]) == pytest.approx(expected.tolist(), abs=1e-7)
    greedy = int(expected.argmax())
    assert [i for i, c in enumerate(p["marker"]["color"]) if c == VERMILLION] == [greedy]
    layout = fig["layout"]
    assert layout["xaxis3"]["labelalias"][str(greedy)] in layout["title"]["text"]
    assert [a["text"] for a in layout["annotations"] if a.get("showarrow")] == [
        f"chosen: {visible(task.target_vocab[greedy])}"]
    forced = spec(ca.decoding_step(trace, rec.y_hat, t, source, task.target_vocab, chosen=(greedy + 1) % 10))
    assert forced["data"][2]["marker"]["color"].index(VERMILLION) == (greedy + 1) % 10
    with pytest.raises(ValueError, match="t must be"):
        ca.decoding_step(trace, rec.y_hat, S + 1, source, task.target_vocab)
    with pytest.raises(ValueError, match="chosen must be"):
        ca.decoding_step(trace, rec.y_hat, t, source, task.target_vocab, chosen=10)


def test_a_decoding_step_over_a_large_vocabulary_draws_its_likeliest_tokens_and_the_one_written(fresh):
    """Issue 44, finding 4: over the translator's 810 French words a bar each was under a pixel wide and the
    panel looked empty. Past LIKELIEST tokens the panel draws the likeliest, most likely first, with their
    probabilities over the whole vocabulary, and the written token among them even when it is not one."""
    task, _, rec = fresh
    trace = rec.attention_traces[ALIGNMENT]
    source, _ = tokens(task, rec)
    vocab = [f"w{i}" for i in range(810)]
    logits = torch.randn(trace.weights.shape[1], len(vocab), generator=torch.Generator().manual_seed(0))
    expected = torch.softmax(logits[2].double(), dim=-1).numpy()
    order = np.argsort(-expected, kind="stable")
    fig = spec(ca.decoding_step(trace, logits, 2, source, vocab))
    p = fig["data"][2]
    assert list(p["customdata"]) == [vocab[i] for i in order[:ca.LIKELIEST]]
    assert plotted(p["y"]) == pytest.approx(expected[order[:ca.LIKELIEST]].tolist(), abs=1e-7)
    assert fig["layout"]["annotations"][2]["text"] == "p (top 20 of 810)"
    unlikely = int(order[-1])  # a teacher forcing the least likely word
    forced = spec(ca.decoding_step(trace, logits, 2, source, vocab, chosen=unlikely))["data"][2]
    assert list(forced["customdata"])[-1] == vocab[unlikely] and len(forced["customdata"]) == ca.LIKELIEST
    assert forced["marker"]["color"].index(VERMILLION) == ca.LIKELIEST - 1


def test_the_decoding_steps_panels_keep_their_labels_to_themselves_on_a_narrow_page(fresh):
    """At 1024 px the c_t and probability axis titles ran into the panel on their left, and a
    typed date's 17 source tokens, each a tick label, into one another under the α panel. The
    tokens are now the labels of a category axis of positions, which plotly thins to the room it
    has; the panels stand far enough apart for a y axis's ticks and title; the title stands on the
    panels' titles. (The pixels are checked in tests/browser/test_attention.py's screenshots.)"""
    task, _, rec = fresh
    trace = rec.attention_traces[ALIGNMENT]
    date = list("November 21, 2026")
    typed = AttentionTrace(trace.site, torch.softmax(torch.randn(1, 2, len(date)), -1), torch.zeros(1, 2, len(date)),
                           torch.randn(1, 2, 64))  # a typed date's 17 source tokens
    logits = torch.randn(2, len(task.target_vocab))
    layout = spec(ca.decoding_step(typed, logits, 1, date, task.target_vocab))["layout"]
    for axis, tokens in (("xaxis", date), ("xaxis3", list(task.target_vocab))):
        names = [str(i) for i in range(len(tokens))]
        assert layout[axis]["type"] == "category" and layout[axis]["categoryarray"] == names
        assert layout[axis]["labelalias"] == dict(zip(names, [visible(tok) for tok in tokens], strict=True))
        assert "tickvals" not in layout[axis] and layout[axis]["automargin"]  # plotly thins them
    assert "tickangle" not in layout["xaxis"] and layout["xaxis3"]["tickangle"] == -90  # <sos> stands upright
    domains = [layout[axis]["domain"] for axis in ("xaxis", "xaxis2", "xaxis3")]
    gaps = [right[0] - left[1] for left, right in zip(domains, domains[1:])]
    assert min(gaps) == pytest.approx(0.15)  # 72 px of a 480 px plot: "−0.5" at 15 px and a 17 px title
    assert [layout[f"yaxis{n}"]["title"]["text"] for n in ("2", "3")] == ["c<sub>1</sub>", "p"]  # panel titles say more
    assert layout["title"]["yref"] == "paper" and layout["title"]["yanchor"] == "bottom"
    assert layout["title"]["pad"]["b"] >= 24  # above the panels' titles, a wrapped second line too
    reach = layout["yaxis2"]["range"][1]
    assert layout["yaxis2"]["range"][0] == -reach and reach > float(typed.context[0, 1].abs().max())


# ------------------------------------------------------------------ a transformer's heads

def test_the_head_grid_is_every_layer_and_head_with_the_causal_mask_exactly_zero(charlm):
    task, _, rec = charlm
    fig = spec(ca.head_grid(rec, task.symbols_of(rec.x)))
    heatmaps = maps(fig)
    assert len(heatmaps) == 2 * 4
    for k, heatmap in enumerate(heatmaps):
        weights = rec.attention[f"layer {k // 4} self"][k % 4].numpy()  # [T, T]
        z = z_of(heatmap)
        assert np.array_equal(z, weights.astype(np.float64))
        assert z.sum(axis=1) == pytest.approx(np.ones(12), abs=1e-6)
        assert (z[np.triu_indices(12, 1)] == 0).all()  # the future: exactly 0
        assert heatmap["coloraxis"] == "coloraxis"  # one shared scale
    overlays = [d for d in fig["data"] if d.get("name") == "masked"]
    assert len(overlays) == 8
    greyed = z_of(overlays[0]) == 1
    assert np.array_equal(greyed, np.triu(np.ones((12, 12), dtype=bool), 1))
    assert (fig["layout"]["coloraxis"]["cmin"], fig["layout"]["coloraxis"]["cmax"]) == (0, 1)
    assert "masked" in fig["layout"]["title"]["subtitle"]["text"]
    assert [a["text"] for a in fig["layout"]["annotations"]][:5] == [
        "layer 0 · head 0", "layer 0 · head 1", "layer 0 · head 2", "layer 0 · head 3", "layer 1 · head 0"]
    assert fig["layout"]["yaxis"]["ticktext"] == [visible(c) for c in task.symbols_of(rec.x)]


def test_the_grid_averages_heads_on_request_and_the_focused_map_is_one_head(charlm):
    task, _, rec = charlm
    chars = task.symbols_of(rec.x)
    mean = maps(spec(ca.head_grid(rec, chars, average=True)))
    assert len(mean) == 2
    for layer, heatmap in enumerate(mean):
        expected = rec.attention[f"layer {layer} self"].mean(dim=0).numpy()
        assert z_of(heatmap) == pytest.approx(expected, abs=1e-7)
    trace = rec.attention_traces[Site("decoder", 1, "self", alone=True)]
    (one,) = maps(spec(ca.focused_head(trace, 2, chars)))
    assert np.array_equal(z_of(one), trace.weights[2].numpy().astype(np.float64))
    (averaged,) = maps(spec(ca.focused_head(trace, None, chars)))
    assert z_of(averaged) == pytest.approx(trace.weights.mean(dim=0).numpy(), abs=1e-7)
    with pytest.raises(ValueError, match="head must be 0..3"):
        ca.focused_head(trace, 4, chars)


def test_an_encoder_decoders_cross_attention_is_target_by_source(transformer_reversal):
    _, rec, names = transformer_reversal
    fig = spec(ca.head_grid(rec, names, stack="decoder", kind="cross"))
    heatmaps = maps(fig)
    assert len(heatmaps) == 8 and not [d for d in fig["data"] if d.get("name") == "masked"]
    for k, heatmap in enumerate(heatmaps):
        assert np.array_equal(z_of(heatmap), rec.attention[f"decoder layer {k // 4} cross"][k % 4].numpy())
    assert fig["layout"]["xaxis5"]["ticktext"] == names["encoder"]  # keys: the source
    assert fig["layout"]["yaxis"]["ticktext"] == [visible(t) for t in names["decoder"]]
    with pytest.raises(ValueError, match="pick one with stack="):
        ca.head_grid(rec, names)  # the encoder and the decoder both have self-attention
    with pytest.raises(ValueError, match="needs the tokens of the encoder"):
        ca.head_grid(rec, {"decoder": names["decoder"]}, stack="decoder", kind="cross")


def test_a_512_token_map_travels_as_float32_bytes_without_per_cell_text():
    T = 512
    logits = torch.randn(1, T, T) + torch.triu(torch.full((T, T), float("-inf")), 1)  # [1, T, T]
    trace = AttentionTrace(Site("decoder", 0, "self", alone=True), logits.softmax(-1), logits, torch.zeros(1, T, 8))
    text = ca.focused_head(trace, 0, ["a"] * T).to_json()
    fig = json.loads(text)
    (heatmap,) = maps(fig)
    assert heatmap["z"]["dtype"] == "f4" and heatmap.get("customdata") is None
    assert np.array_equal(z_of(heatmap), trace.weights[0].numpy())
    overlay = next(d for d in fig["data"] if d.get("name") == "masked")
    assert overlay["z"]["dtype"] == "u1" and overlay["hoverinfo"] == "skip"
    assert len(text) < 1.9e6  # base64 of 4 bytes a cell for z, 1 for the mask: 1.4 + 0.35 MB


# ------------------------------------------------------------------ beam search

def test_the_beam_tree_draws_every_kept_prefix_with_its_score_and_the_best_path(fresh):
    task, model, rec = fresh
    beam = engine.beam_search(model, rec.x, width=3)
    fig = spec(beam_tree(beam, task.target_vocab))
    nodes = fig["data"][-1]
    kept = [c for step in beam.steps for c in step]
    assert len(plotted(nodes["x"])) == 1 + len(kept)  # <sos> and every candidate
    scores = [row[1] for row in nodes["customdata"]]
    assert scores == pytest.approx([0.0] + [c.score for c in kept], abs=1e-12)
    assert plotted(nodes["x"]) == [0] + [len(c.tokens) for c in kept]
    assert nodes["text"][1] == f"{visible(task.target_vocab[kept[0].tokens[-1]])}<br>{kept[0].score:.2f}"
    best = fig["data"][1]
    assert best["line"]["color"] == VERMILLION
    assert [x for x in best["x"] if x is not None] == [v for k in range(len(beam.best.tokens)) for v in (k, k + 1)]
    written = " ".join(visible(task.target_vocab[t]) for t in beam.best.tokens)
    assert written in fig["layout"]["title"]["text"]


def test_a_long_beams_labels_are_cut_to_their_steps_width_and_its_title_to_its_first_tokens():
    """An untrained translator writes 31 long words: each node's token is cut to the width its step has at 1024 px
    (an ellipsis for the rest; the hover keeps the whole prefix), and the title names the first TITLE_TOKENS."""
    from app.charts.beam_tree import TITLE_TOKENS, fitting_token
    from engine import Beam, Candidate

    words = ("<pad>", "<sos>", "<eos>", "commencèrent", "vous-mêmes", "<unk>")
    steps = [[Candidate(tuple(3 + (k + j) % 2 for k in range(t + 1)), -float(t + j)) for j in range(2)]
             for t in range(30)]
    steps.append([Candidate(steps[-1][0].tokens + (5,), -30.0), Candidate(steps[-1][1].tokens + (5,), -31.0)])
    beam = Beam(steps, [])  # none finished: it returns the best of the last step
    fig = spec(beam_tree(beam, words))
    labels = [text.split("<br>")[0] for text in fig["data"][-1]["text"][1:]]
    assert set(labels) == {"co…", "vo…", "&lt;u…"}  # <unk> cut, then escaped: never inside its "&lt;"
    prefixes = [row[0] for row in fig["data"][-1]["customdata"][1:]]
    assert prefixes[-2].split() == [visible(words[t]) for t in steps[-1][0].tokens]  # the hover: every word whole
    title = fig["layout"]["title"]["text"].replace("<br>", " ")
    assert "… (31 tokens)" in title and title.count("commencèrent") + title.count("vous-mêmes") == TITLE_TOKENS
    assert fitting_token("est", 31) == "est" and fitting_token("commencèrent", 3) == "commencèrent"


# ------------------------------------------------------------------ linked view

def test_the_linked_alignment_carries_the_weights_and_two_pointer_selections(fresh):
    task, _, rec = fresh
    trace = rec.attention_traces[ALIGNMENT]
    source, output = tokens(task, rec)
    chart = attention_linked.alignment_linked(trace, source, output).to_dict()  # validates against Vega-Lite's schema
    params = {p["name"]: p for p in json.loads(json.dumps(chart)).get("params", [])}
    text = json.dumps(chart)
    for name, field in (("source_i", "i"), ("output_t", "t")):
        assert f'"param": "{name}"' in text  # the strips and the cell's frame test the selection
        found = params.get(name) or next(p for p in find_params(chart) if p["name"] == name)
        assert found["select"]["fields"] == [field] and found["select"]["on"] == "pointerover"
    values = next(rows for rows in chart["datasets"].values() if "alpha" in rows[0])
    z = np.zeros((S + 1, S))
    for row in values:
        z[row["t"], row["i"]] = row["alpha"]
    assert np.array_equal(z, trace.weights[0].numpy().astype(np.float64))
    assert "<eos>" in text and "&lt;" not in text  # Vega draws text as it is


def find_params(spec: dict) -> list[dict]:
    """Every selection parameter anywhere in a nested Vega-Lite spec."""
    found = list(spec.get("params", []))
    for key in ("vconcat", "hconcat", "layer"):
        for part in spec.get(key, []):
            found += find_params(part)
    return found


# ------------------------------------------------------------------ why sqrt(d_k)

def hand_trace() -> AttentionTrace:
    """One head, d_k = 4 (sqrt 2), one query over three keys, the last masked."""
    logits = torch.tensor([[[1.0, 0.5, float("-inf")]]])  # [1, 1, 3]: Q K^T / sqrt(4)
    return AttentionTrace(Site("decoder", 0, "self", alone=True), logits.softmax(-1), logits, torch.zeros(1, 1, 4))


def test_the_scaling_figure_against_a_hand_computation():
    fig = spec(cs.scaled_logits(hand_trace(), 0, 0, ["a", "b", "c"]))
    before, before_p, after, after_p = fig["data"]
    assert plotted(before["y"])[:2] == [2.0, 1.0] and math.isnan(plotted(before["y"])[2])
    assert plotted(after["y"])[:2] == [1.0, 0.5]
    e = math.e
    assert plotted(before_p["y"])[:2] == pytest.approx([e / (e + 1), 1 / (e + 1)], rel=1e-6)
    assert plotted(after_p["y"])[:2] == pytest.approx([1 / (1 + e**-0.5), e**-0.5 / (1 + e**-0.5)], rel=1e-6)
    assert "√4 = 2" in fig["layout"]["title"]["text"]
    entropy = spec(cs.row_entropy(hand_trace(), 0))["data"]
    p = 1 / (1 + e**-0.5)
    assert plotted(entropy[1]["y"]) == pytest.approx([-(p * math.log(p) + (1 - p) * math.log(1 - p))], rel=1e-6)
    p = e / (e + 1)
    assert plotted(entropy[0]["y"]) == pytest.approx([-(p * math.log(p) + (1 - p) * math.log(1 - p))], rel=1e-6)
    assert plotted(entropy[2]["y"]) == pytest.approx([math.log(2)])  # two keys it may see


def test_the_unscaled_scores_are_the_models_own_q_k_transpose(charlm):
    task, model, rec = charlm
    model.eval()
    with torch.no_grad():
        attention = model.blocks[0].self_attention
        x_in = model.inputs(rec.x[None])  # [1, T, d]
        q, k = attention.split(attention.W_q(x_in))[0], attention.split(attention.W_k(x_in))[0]  # [h, T, d_k]
    qk = (q @ k.transpose(1, 2)).numpy()  # [h, T, T]
    trace = rec.attention_traces[Site("decoder", 0, "self", alone=True)]
    fig = spec(cs.scaled_logits(trace, 1, 7, task.symbols_of(rec.x)))
    before, after = plotted(fig["data"][0]["y"]), plotted(fig["data"][2]["y"])
    assert before[:8] == pytest.approx(qk[1, 7, :8].tolist(), rel=1e-4, abs=1e-5)
    assert after[:8] == pytest.approx((qk[1, 7, :8] / math.sqrt(8)).tolist(), rel=1e-4, abs=1e-5)
    assert all(math.isnan(v) for v in before[8:])  # the future: masked, no bar
    entropies = spec(cs.row_entropy(trace, 1))["data"]
    w = trace.weights[1].double()
    expected = -(torch.where(w > 0, w * w.log(), torch.zeros_like(w))).sum(-1)
    assert plotted(entropies[1]["y"]) == pytest.approx(expected.tolist(), abs=1e-5)


def test_a_dates_beam_tree_fits_a_page_at_1024_px():
    """A date's beam is 11 steps deep: on a page at 1024 px (a plot about PAGE_PLOT px wide) each
    step has about 40 px, and labels of "token over log p to 2 decimals" ran into the next step's,
    while the title ran past the figure's edge (issue 28, item 4)."""
    from app.charts.style import PAGE_CHARS, PAGE_PLOT, shown_length

    task = engine.make_task("dates", seed=0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=32, embedding_dim=16, attention="additive"),
                               task, seed=0)
    x, _ = task.batch(1)
    beam = engine.beam_search(model, x[0], width=3)
    fig = beam_tree(beam, task.target_vocab)
    per_step = PAGE_PLOT / (len(beam.steps) + 1)  # the x axis spans depth + 1 steps
    widest = max(shown_length(line) for text in fig.data[-1].text for line in text.split("<br>"))
    assert widest * 0.6 * 12 <= per_step, f"labels {widest} characters wide in {per_step:.0f} px a step"
    assert all(shown_length(line) <= PAGE_CHARS for line in fig.layout.title.text.split("<br>"))
