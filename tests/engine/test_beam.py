"""The attention row of each beam hypothesis (engine.beam: Candidate.attention), against a
reference: the recording of the decoder teacher-forced on that hypothesis's own tokens, whose
alignment (a pointer network's pointer, a transformer's top cross-attention) at step t is what
the decoder looked at to write token t. Every decoder with attention, a padded date among them;
a decoder without attention keeps none."""
import pytest
import torch

import engine
from engine.beam import forced_search
from engine.seq2seq import EOS

from .cases import case_id

CASES = [
    dict(arch="gru", attention="dot"),
    dict(arch="lstm", attention="additive", bidirectional=True),  # Bahdanau: s_{t-1} asks
    dict(arch="lstm", attention="general", num_layers=2, reverse_source=True),
    dict(arch="transformer", num_heads=2, num_layers=2),
    dict(arch="lstm", attention="additive", task="sort"),  # a pointer network
    dict(arch="gru", attention="dot", task="dates"),  # front-padded sources
]


def model_for(case, seed=0):
    """An untrained decoder in double precision and one source for it."""
    case = dict(case)
    name = case.pop("task", "reverse")
    task = engine.make_task(name, **({"seq_len": 5, "symbols": 4} if name == "reverse" else {}))
    cfg = engine.ModelConfig(hidden_size=8, embedding_dim=4, **case)
    model = engine.build_model(cfg, task, seed=seed).double().eval()
    x, _ = task.batch(1, torch.Generator().manual_seed(seed))
    return model, x[0].double() if x.is_floating_point() else x[0]


def teacher_forced_rows(model, x, tokens) -> torch.Tensor:
    """[heads, len(tokens), S_k]: the attention over the source of the decoder teacher-forced on
    `tokens` (then <eos>, which the rows before it never read), from engine.record."""
    y = torch.tensor([[*tokens, *[EOS] * (model.spec.out_len - len(tokens))]])  # [1, T_out]
    rec = engine.record(model, x[None], y, jacobians=False)
    kinds = {"alignment": 0, "pointer": 0, "cross": 1}
    site = max((s for s in rec.attention_traces if s.kind in kinds), key=lambda s: (kinds[s.kind], s.layer or 0))
    return rec.attention_traces[site].weights[:, : len(tokens)]  # [heads, t, S_k]


def every_candidate(beam):
    return [c for step in beam.steps for c in step]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_hypothesis_keeps_the_attention_the_decoder_computes_teacher_forced_on_it(case):
    for seed in range(2):
        model, x = model_for(case, seed)
        beam = engine.beam_search(model, x, width=3)
        assert beam.best in every_candidate(beam)
        for candidate in every_candidate(beam):
            rows = candidate.attention  # [t, heads, S_k]
            assert rows.shape[0] == len(candidate.tokens)
            torch.testing.assert_close(rows.transpose(0, 1), teacher_forced_rows(model, x, candidate.tokens),
                                       atol=1e-12, rtol=0)
            torch.testing.assert_close(rows.sum(-1), torch.ones(rows.shape[:2], dtype=torch.float64),
                                       atol=1e-12, rtol=0)


def test_a_padded_sources_padding_gets_no_weight_in_any_hypothesis():
    model, x = model_for(CASES[-1])
    padded = model.spec.padded(x[None])[0]  # [S]
    assert padded.any()
    for candidate in every_candidate(engine.beam_search(model, x, width=3)):
        assert (candidate.attention[:, :, padded] == 0).all()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_forced_prefix_keeps_the_rows_of_the_tokens_it_was_made_to_read(case):
    """Forcing a token the decoder would not write: its rows, and those of the beam that goes on
    from it, are still the teacher-forced recording's on the whole forced sequence."""
    model, x = model_for(case)
    greedy = engine.beam_search(model, x, width=1).best.tokens
    writable = range(2, x.shape[0] + 2) if model.spec.mapping == "pointer" else range(2, model.spec.output_size)
    other = next(t for t in writable if t != greedy[0])
    beam = forced_search(model, x, (other,), width=2)
    for candidate in every_candidate(beam):
        assert candidate.tokens[0] == other
        torch.testing.assert_close(candidate.attention.transpose(0, 1),
                                   teacher_forced_rows(model, x, candidate.tokens), atol=1e-12, rtol=0)


def test_a_decoder_without_attention_keeps_no_rows():
    model, x = model_for(dict(arch="gru"))
    beam = engine.beam_search(model, x, width=3)
    assert all(c.attention is None for c in every_candidate(beam))
    assert beam.best.attention is None
