"""Every lesson's claims against its shipped ensemble (app/data/ensembles/<key>.json): the runs of
benchmarks/lesson_ensembles.py over seeds and kernel paths. The default tier: no training here but
the first steps of each lesson's runs, replayed against the ensemble's start; the full tier trains
each lesson to its budget again (test_lessons.py)."""
import copy
import json

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
    assert_every_seed_on_every_path(ensemble)


def assert_every_seed_on_every_path(ensemble: ensembles.Ensemble) -> None:
    """On its primary CPU (the document's machine) every seed ran on every path; runs on other CPUs add
    members, each naming its CPU, and no run (seed, path, CPU) is there twice."""
    primary = [member for member in ensemble.members if member["cpu"] == ensemble.cpu]
    seeds = {member["seed"] for member in primary}
    paths = {member["path"] for member in primary}
    assert len(seeds) >= 3 and len(paths) >= 2, (seeds, paths)  # "at least 3 seeds, each under the kernel paths"
    assert sorted((m["seed"], m["path"]) for m in primary) == sorted((s, p) for s in seeds for p in paths)
    runs = [(member["seed"], member["path"], member["cpu"]) for member in ensemble.members]
    assert len(set(runs)) == len(runs), runs  # a run is one member, however often it was merged
    assert {member["path"] for member in ensemble.members} <= set(kernels.PATHS)
    assert all(member["cpu"] for member in ensemble.members)


def primary_only(document: dict) -> dict:
    """The ensemble as its primary CPU measured it: the shipped file holds other CPUs' runs too."""
    primary = document["machine"]["cpu"]
    return {**document, "members": [m for m in document["members"] if m.get("cpu", primary) == primary]}


def test_runs_of_another_cpu_merge_into_an_ensemble_beside_its_runs(tmp_path):
    """benchmarks/lesson_ensembles.py --from-cache: runs kept by --one on another machine (naming no CPU,
    as they did before members named theirs) are added as that CPU's members; merged twice, still
    one member each; a lesson whose settings changed is refused."""
    from benchmarks import lesson_ensembles as tool

    key = "why-sqrt-dk"
    document = primary_only(json.loads((ensembles.FOLDER / f"{key}.json").read_text()))
    for seed in (0, 1):
        shipped = next(m for m in document["members"] if m["seed"] == seed)
        kept = {key: {name: shipped[name] for name in ("seconds", "values", "links", "curves")}}
        (tmp_path / f"{key}-{seed}-default.json").write_text(json.dumps(kept))
    (tmp_path / "rnn-forgets-0-default.json").write_text("{}")  # another lesson's: not read
    runs = tool.from_cache(tmp_path, [key])
    assert [job for job, _ in runs] == [([key], 0, "default"), ([key], 1, "default")]
    amd = [tool.member(key, seed, path, result, "AMD EPYC 9B14") for (_, seed, path), result in runs]
    once = tool.merged(document, amd, key)
    twice = tool.merged(once, amd, key)
    assert once == twice and len(twice["members"]) == len(document["members"]) + 2
    assert twice["machine"] == document["machine"] and "default" in twice["paths"]
    assert [m["cpu"] for m in twice["members"]] == [document["machine"]["cpu"]] * 6 + ["AMD EPYC 9B14"] * 2
    merged = ensembles.read(key, twice)
    assert merged.cpus() == [document["machine"]["cpu"], "AMD EPYC 9B14"]
    assert_every_seed_on_every_path(merged)
    changed = {**document, "settings": {**document["settings"], "steps": 1}}
    with pytest.raises(ValueError, match="settings changed"):
        tool.merged(changed, amd, key)


def test_an_ensemble_reads_members_of_other_cpus_beside_its_own():
    """A member naming no CPU ran on the document's machine; one of another CPU counts in the band and
    in the caption, and the time a lesson takes is the primary CPU's."""
    document = primary_only(copy.deepcopy(ensembles.shipped("why-sqrt-dk").document))
    for member in document["members"]:
        del member["cpu"]
    primary = document["machine"]["cpu"]
    other = copy.deepcopy(document["members"][0])
    other |= {"cpu": "AMD EPYC 9B14", "path": "default", "seconds": 1e6}
    other["curves"]["not divided"]["entropy"][1][1] = 0.5  # a point no Intel run reached
    document["members"].append(other)
    ensemble = ensembles.read("why-sqrt-dk", document)
    assert ensemble.cpus() == [primary, "AMD EPYC 9B14"]
    assert [m["cpu"] for m in ensemble.members] == [primary] * 6 + ["AMD EPYC 9B14"]
    assert "on AMD EPYC 9B14 also the path default" in ensemble.describe() and "7 runs" in ensemble.describe()
    assert ensemble.band("not divided", "entropy").set_index("step").loc[25, "high"] == 0.5
    assert ensemble.minutes() == ensembles.shipped("why-sqrt-dk").minutes()


def test_checking_kept_runs_finds_the_claim_one_breaks_and_writes_nothing(tmp_path, capsys):
    """benchmarks/lesson_ensembles.py --check DIR: before a merge, each claim a kept run breaks."""
    from benchmarks import lesson_ensembles as tool

    key = "why-sqrt-dk"
    shipped = ensembles.shipped(key).members[0]
    kept = {key: {name: copy.deepcopy(shipped[name]) for name in ("seconds", "values", "links", "curves")}}
    (tmp_path / f"{key}-0-default.json").write_text(json.dumps(kept))
    assert tool.check(tmp_path, [key], "AMD EPYC 9B14") == 0
    kept[key]["values"] |= {"undivided.accuracy_end": 0.999, "divided.accuracy_end": 0.99}  # undivided ahead
    (tmp_path / f"{key}-0-default.json").write_text(json.dumps(kept))
    before = (ensembles.FOLDER / f"{key}.json").read_text()
    assert tool.check(tmp_path, [key], "AMD EPYC 9B14") == 1
    assert "undivided_over_divided.accuracy_end = 1.009" in capsys.readouterr().out
    assert (ensembles.FOLDER / f"{key}.json").read_text() == before


@pytest.mark.parametrize("key", KEYS)
def test_every_claim_holds_on_every_run_of_the_ensemble(key):
    lesson, ensemble = BY_KEY[key], ensembles.shipped(key)
    assert lesson.claims, f"{key} claims nothing"
    broken = [f"{claim.name} = {member['values'].get(claim.name, 'missing')} (seed {member['seed']}, "
              f"{member['path']}, {member['cpu']}) outside {claim.quote()}"
              for claim in lesson.claims.values() for member in ensemble.members
              if claim.name not in member["values"] or not claim.holds(member["values"][claim.name])]
    assert not broken, "\n".join(broken)


def test_a_ratio_claim_is_worked_out_from_two_values_of_the_same_run():
    """An ordering of two runs as a claim: their values' ratio, read from the values measured."""
    lesson = BY_KEY["layer-norm"]
    [ratio] = [c for c in lesson.claims.values() if c.ratio == ("norm.ratio_start", "zoneout.ratio_start")]
    values = {"norm.ratio_start": 6e-6, "zoneout.ratio_start": 3e-7}
    assert ratio.value(values) == pytest.approx(20) and lesson.derived(values)[ratio.name] == pytest.approx(20)
    assert ratio.value({**values, "zoneout.ratio_start": 0.0}) == float("inf")
    assert ratio.value({**values, "norm.ratio_start": None}) is None and not ratio.holds(None)
    assert not ratio.holds(ratio.value({**values, "norm.ratio_start": 3e-7}))  # no more than zoneout's: broken
    with pytest.raises(KeyError):
        ratio.value({"norm.ratio_start": 6e-6})


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
    each widened by replay.TOLERANCE. A run its lesson marks chaotic is held after its start to what
    holds across runs: its band there is the range every run took at any step after the start
    (Ensemble.band), widened by replay.ENVELOPE, and it lies below the runs its lesson names
    (Chaotic.below)."""
    lesson, ensemble = BY_KEY[key], ensembles.shipped(key)
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
                widen = replay.ENVELOPE if step > 0 and lesson.is_chaotic(run, name) else 0.0
                assert replay.close(value, low, high, widen), (key, run, name, step, value, low, high)
    assert replay.out_of_order(lesson, measured.curves) == []


CHAOTIC = [lesson.key for lesson in LESSONS if lesson.chaotic]


def test_why_sqrt_dk_marks_its_undivided_run_chaotic():
    """The undivided softmax is chaotic by design (DESIGN.md, the fourth look)."""
    assert "why-sqrt-dk" in CHAOTIC and "not divided" in BY_KEY["why-sqrt-dk"].chaotic


@pytest.mark.parametrize("key", CHAOTIC)
def test_a_chaotic_run_is_said_on_its_card_and_lies_below_what_its_lesson_names_on_every_run(key):
    lesson, ensemble = BY_KEY[key], ensembles.shipped(key)
    for chaotic in lesson.chaotic.values():
        assert chaotic.run in ensemble.runs(), (chaotic.run, ensemble.runs())
        assert set(chaotic.series) <= set(ensemble.series(chaotic.run))
        assert chaotic.below and all(run in ensemble.runs() for run in chaotic.below.values())
        assert chaotic.says in lesson.what_to_do and "chaotic" in chaotic.says
    for member in ensemble.members:
        assert replay.out_of_order(lesson, member["curves"]) == [], (member["seed"], member["path"], member["cpu"])


def test_a_chaotic_runs_band_is_the_range_its_runs_took_after_the_start():
    """Not where a run is at each step: the range at the start, then the range over every later step."""
    ensemble = ensembles.shipped("why-sqrt-dk")
    band = ensemble.band("not divided", "metric").set_index("step")
    later = [value for member in ensemble.members for step, value in member["curves"]["not divided"]["metric"]
             if step > 0]
    starts = [member["curves"]["not divided"]["metric"][0][1] for member in ensemble.members]
    assert (band.loc[0, "low"], band.loc[0, "high"]) == (min(starts), max(starts))
    assert set(band.loc[25:, "low"]) == {min(later)} and set(band.loc[25:, "high"]) == {max(later)}
    divided = ensemble.band("divided by √d_k", "metric").set_index("step")  # not chaotic: step by step
    assert divided.loc[25, "high"] < divided.loc[150, "low"]


def test_a_chaotic_run_out_of_order_is_found():
    lesson = BY_KEY["why-sqrt-dk"]
    curves = copy.deepcopy(ensembles.shipped("why-sqrt-dk").members[0]["curves"])
    curves["not divided"]["entropy"][2][1] = 5.0  # step 50: above the divided run's entropy
    divided = curves["divided by √d_k"]["entropy"][2][1]
    assert replay.out_of_order(lesson, curves) == [
        f"not divided entropy at step 50: 5, not below divided by √d_k's {divided:.4g}"]


def test_a_run_marked_chaotic_that_its_card_does_not_call_chaotic_is_refused(tmp_path):
    source = ensembles.FOLDER.parent / "lessons" / "09-why-sqrt-dk.toml"
    broken = tmp_path / source.name
    broken.write_text(source.read_text().replace("The run that does not\ndivide is chaotic", "The run that does not\n"
                                                 "divide wanders", 1))
    with pytest.raises(ValueError, match="does not say 'The run that does not divide is chaotic'"):
        read(broken)
    unsaid = tmp_path / "unsaid.toml"
    unsaid.write_text(source.read_text().replace('says = "The run that does not divide is chaotic"',
                                                 'says = "The run that does not divide"', 1))
    with pytest.raises(ValueError, match="which say chaotic"):
        read(unsaid)


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
