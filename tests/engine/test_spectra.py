"""W_hh spectra only when asked, against torch.linalg, within a size limit, and never a
torch.linalg call on a non-finite matrix (this torch build's eigvals segfaults on one)."""
import pytest
import torch

import engine
import engine.spectra

from .cases import CASES, case_id


def built(task_name="adding", seed=0, **cfg):
    return engine.build_model(engine.ModelConfig(**cfg), engine.make_task(task_name, seq_len=6), seed=seed)


@pytest.fixture
def linalg_calls(monkeypatch):
    """Counts every eigvals / svdvals / matrix_norm call, and fails the test if one is given a
    non-finite matrix (which would otherwise crash the process, not fail the test)."""
    calls = {"eigvals": 0, "svdvals": 0, "matrix_norm": 0}

    def counted(name):
        original = getattr(torch.linalg, name)

        def call(matrix, *args, **kwargs):
            assert torch.isfinite(matrix).all(), f"torch.linalg.{name} was given a non-finite matrix"
            calls[name] += 1
            return original(matrix, *args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(torch.linalg, name, counted(name))
    return calls


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_spectra_equal_torch_linalg_on_every_block_of_every_w_hh(case):
    model = built(hidden_size=5, **case)
    spectra = engine.weight_spectra(model)["rnn"]
    G = len(spectra.blocks)
    for layer in range(model.cfg.num_layers):
        for direction in range(model.cfg.num_directions):
            name = f"weight_hh_l{layer}" + ("_reverse" if direction else "")
            blocks = getattr(model.rnn, name).detach().reshape(G, 5, 5)  # [G, H, H], PyTorch's gate order
            torch.testing.assert_close(spectra.eigenvalues[layer, direction], torch.linalg.eigvals(blocks))
            torch.testing.assert_close(spectra.singular_values[layer, direction], torch.linalg.svdvals(blocks))


def test_an_encoder_decoders_spectra_are_those_of_both_stacks_and_recorded_with_them():
    model = built("reverse", arch="gru", hidden_size=4, bidirectional=True, attention="dot")
    spectra = engine.weight_spectra(model)
    decoder_w = model.decoder.weight_hh_l0.detach().reshape(3, 8, 8)  # [G, H', H']: H' = 2H
    torch.testing.assert_close(spectra["decoder"].eigenvalues[0, 0], torch.linalg.eigvals(decoder_w))
    assert spectra["encoder"].eigenvalues.shape == (1, 2, 3, 4)
    x, y = engine.make_task("reverse", seq_len=6).batch(1)
    rec = engine.record(model, x, y, spectra=True, jacobians=False)
    for stack in ("encoder", "decoder"):
        torch.testing.assert_close(rec.stacks[stack].eigenvalues, spectra[stack].eigenvalues)


def test_record_computes_no_spectrum_unless_asked(linalg_calls):
    model = built(arch="lstm", hidden_size=4, num_layers=2, bidirectional=True)
    x, y = engine.make_task("adding", seq_len=6).batch(1)
    rec = engine.record(model, x, y)
    assert linalg_calls["eigvals"] == 0 and linalg_calls["svdvals"] == 0
    with pytest.raises(ValueError, match="spectra=True"):
        _ = rec.eigenvalues
    with pytest.raises(ValueError, match="spectra=True"):
        rec.to_frame("singular_values")
    engine.record(model, x, y, spectra=True)  # the counter is reached when spectra are asked for
    assert linalg_calls["eigvals"] == 1 and linalg_calls["svdvals"] == 1


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_w_hh_is_refused_by_name_before_any_linalg_call(bad, linalg_calls):
    model = built(arch="lstm", hidden_size=4, num_layers=2, bidirectional=True)
    with torch.no_grad():
        model.rnn.weight_hh_l1_reverse[5, 2] = bad
    x, y = engine.make_task("adding", seq_len=6).batch(1)
    with pytest.raises(ValueError, match=r"rnn\.weight_hh_l1_reverse holds NaN or inf"):
        engine.weight_spectra(model)
    with pytest.raises(ValueError, match=r"rnn\.weight_hh_l1_reverse holds NaN or inf"):
        engine.record(model, x, y, spectra=True)
    assert linalg_calls["eigvals"] == 0 and linalg_calls["svdvals"] == 0


def test_non_finite_jacobians_get_nan_norms_and_never_reach_the_svd(linalg_calls):
    model = built(arch="rnn", hidden_size=4, num_layers=2)
    with torch.no_grad():
        model.rnn.weight_hh_l1[0, 0] = float("inf")
    x, y = engine.make_task("adding", seq_len=6).batch(1)
    rec = engine.record(model, x, y)  # jacobians=True: layer 0 finite, layer 1 not
    assert torch.isnan(rec.jacobian_norm[1]).any()
    finite = torch.isfinite(rec.jacobian_norm[0]).all()
    assert finite and linalg_calls["matrix_norm"] > 0  # the finite layer's norms still come from the SVD


def test_spectra_past_the_size_limit_say_what_to_change(monkeypatch, linalg_calls):
    model = built(arch="lstm", hidden_size=8, num_layers=2, bidirectional=True)
    work = 2 * 2 * 4 * 8**3  # layers x directions x gate blocks x H^3
    monkeypatch.setattr(engine.spectra, "MAX_SPECTRA_WORK", work)
    assert engine.weight_spectra(model)["rnn"].eigenvalues.shape == (2, 2, 4, 8)
    monkeypatch.setattr(engine.spectra, "MAX_SPECTRA_WORK", work - 1)
    with pytest.raises(ValueError, match="hidden_size of about 7 or less, fewer layers, or one direction"):
        engine.weight_spectra(model)
    assert linalg_calls["eigvals"] == 1  # the refused call computed nothing


def test_a_transformer_has_no_spectra_and_says_so():
    model = built("parity", arch="transformer", hidden_size=8, num_heads=2)
    with pytest.raises(ValueError, match="no recurrent weights W_hh"):
        engine.weight_spectra(model)
