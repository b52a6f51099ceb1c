"""Every lesson's claims against its shipped ensemble (app/data/ensembles/<key>.json): the runs of
benchmarks/lesson_ensembles.py over seeds and kernel paths. The default tier: no training here but
the first steps of each lesson's runs, replayed against the ensemble's start; the full tier trains
each lesson to its budget again (test_lessons.py)."""
import pytest

from app.session import ensembles, lesson_runs
from app.session.lesson_runs import replay
from app.session.lessons import BY_KEY, LESSONS, QUOTE, read
from app.session.link import parse_query
from pretrained import kernels

KEYS = [lesson.key for lesson in LESSONS]


def test_every_lesson_has_a_measurement_and_an_ensemble():
    assert set(lesson_runs.MEASURES) == set(KEYS)
    assert all(ensembles.shipped(key) is not None for key in KEYS), [k for k in KEYS if ensembles.shipped(k) is None]


@pytest.mark.parametrize("key", KEYS)
def test_the_ensemble_measured_the_lesson_as_it_is_now(key):
    """Its settings are the lesson file's: a lesson changed since is measured again before it ships."""
    lesson, ensemble = BY_KEY[key], ensembles.shipped(key)
    settings = dict(ensemble.document["settings"])
    assert parse_query(settings.pop("link")) == lesson.setup  # as setups: a link's wording may change
    assert settings == {"steps": lesson.steps, "page": lesson.page, "compare_kind": lesson.compare_kind}
    seeds = {member["seed"] for member in ensemble.members}
    paths = {member["path"] for member in ensemble.members}
    assert len(seeds) >= 3 and len(paths) >= 2, (seeds, paths)  # "at least 3 seeds, each under the kernel paths"
    assert len(ensemble.members) == len(seeds) * len(paths)  # every seed on every path
    assert paths <= set(kernels.PATHS)


@pytest.mark.parametrize("key", KEYS)
def test_every_claim_holds_on_every_run_of_the_ensemble(key):
    lesson, ensemble = BY_KEY[key], ensembles.shipped(key)
    assert lesson.claims, f"{key} claims nothing"
    broken = [f"{claim.name} = {member['values'].get(claim.name, 'missing')} (seed {member['seed']}, "
              f"{member['path']}) outside {claim.quote()}"
              for claim in lesson.claims.values() for member in ensemble.members
              if claim.name not in member["values"] or not claim.holds(member["values"][claim.name])]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("key", KEYS)
def test_the_card_quotes_its_claims_and_no_figure_of_one_run(key):
    """Every {{claim}} in the card is a claim of the lesson, and written in as its range."""
    lesson = BY_KEY[key]
    quoted = [(name, end or None) for name, end in QUOTE.findall(lesson.card) if name != "memory_spans"]
    assert quoted, f"{key}'s card quotes no measured range"
    assert {name for name, _ in quoted} <= set(lesson.claims)
    assert "{{" not in lesson.what_to_do and "}}" not in lesson.what_to_do
    for name, end in quoted:
        written = lesson.claims[name].quote(end)
        assert written and written in lesson.what_to_do, (name, end)


def test_a_card_quoting_what_it_does_not_claim_is_refused(tmp_path):
    source = sorted(lesson_path for lesson_path in ensembles.FOLDER.parent.joinpath("lessons").glob("*.toml"))[0]
    broken = tmp_path / source.name
    broken.write_text(source.read_text().replace('card = """', 'card = """ {{no.such.value}}', 1))
    with pytest.raises(ValueError, match="no.such.value"):
        read(broken)


@pytest.mark.parametrize("key", KEYS)
def test_the_first_steps_replay_inside_the_ensemble(key):
    """Each lesson's runs from seed 0 trained REPLAY_STEPS steps on this machine: at step 0 every curve
    point falls in seed 0's band across the kernel paths, after it in every seed's band (replay.seeds_at),
    each widened by replay.TOLERANCE."""
    ensemble = ensembles.shipped(key)
    measured = replay.first_steps(key, seed=0)
    if not measured.curves:  # a lesson that trains nothing (the spectral sweep): its values, measured whole
        assert measured.values, f"{key}: nothing replayed"
        for name, value in measured.values.items():
            values = [member["values"][name] for member in ensemble.members if member["seed"] == 0]
            assert replay.close(value, min(values), max(values)), (key, name, value, values)
        return
    for run, series in measured.curves.items():
        for name, curve in series.items():
            bands = {seeds: ensemble.band(run, name, seeds=seeds).set_index("step") for seeds in ((0,), None)}
            shared = [(step, value) for step, value in curve if step in bands[None].index]
            assert len(shared) >= 2, (key, run, name)  # the start and REPLAY_STEPS
            for step, value in shared:
                band = bands[replay.seeds_at(step, 0)]
                low, high = band.loc[step, "low"], band.loc[step, "high"]
                assert replay.close(value, low, high), (key, run, name, step, value, low, high)


def test_a_claim_holds_in_its_range_and_the_card_writes_it_as_a_reader_would():
    from app.session.lessons import Claim, written

    step = Claim("lstm.below_0.01", 875, 1250, ",.0f", or_never=True)
    assert step.holds(875) and step.holds(1250) and step.holds(None) and not step.holds(1275)
    assert step.quote() == "875 to 1,250" and step.quote("high") == "1,250"
    never = Claim("clipped.diverged_at", None, None, never=True)
    assert never.holds(None) and not never.holds(2) and never.quote() == "never"
    share = Claim("rnn.ratio_start", None, 6e-11, ".0e")
    assert share.holds(0.0) and not share.holds(1e-10) and share.quote() == "below 6e-11"
    assert [written(v, s) for v, s in ((5e-6, ".0e"), (8e3, ".0e"), (2.0, ".0e"), (20, ".1g"), (0.97, ".0%"))] == [
        "5e-6", "8e3", "2", "20", "97%"]
