"""The home page: what Unrolled is, and a button for every lesson."""
import pytest
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.session.lessons import LESSONS

from .conftest import MAIN


def test_home_page_offers_every_lesson_with_what_to_do():
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Unrolled"
    text = "\n".join(m.value for m in at.markdown) + "\n".join(c.value for c in at.caption)
    for lesson in LESSONS:
        assert f"**{lesson.title}**" in text and lesson.what_to_do in text
        assert at.button(key=f"lesson.{lesson.key}").label == "Open this lesson"


def texts_in_order(node) -> list[str]:
    """Every text on the page, top to bottom (headings, markdown, captions, alerts)."""
    value = getattr(node, "value", None)
    found = [value] if isinstance(value, str) else []
    for child in getattr(node, "children", {}).values():
        found += texts_in_order(child)
    return found


def test_no_page_calls_a_page_that_exists_on_its_way():
    """Home listed Unroll and Compare cells under "Pages on the way", and Build & Train called
    Gradients "on its way", after they had shipped: every page is opened, and what follows a
    promise (the rest of its text, and the next text on the page) names no page there is."""
    from app import pages

    titles = [title.lower() for entries in pages.SECTIONS.values() for _, title, _, _ in entries]
    for path in pages.PATHS.values():
        at = AppTest.from_file(MAIN, default_timeout=60).run()
        at.switch_page(path).run()
        assert not at.exception, path
        texts = [t.lower() for t in texts_in_order(at.main)]
        for k, text in enumerate(texts):
            for promise in ("on the way", "on its way", "coming soon"):
                if promise in text:
                    before, after = text.split(promise, 1)
                    near = before[-40:] + after + " ".join(texts[k + 1 : k + 2])
                    assert not [t for t in titles if t in near], (path, text)


def test_home_groups_every_lesson_once_under_the_courses_objectives():
    from app.session.lessons import LESSONS, by_objective

    groups = by_objective()
    keys = [lesson.key for _, group in groups for lesson in group]
    assert sorted(keys) == sorted(lesson.key for lesson in LESSONS)  # each lesson once, none left out
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    shown = [m.value.removeprefix("#### ") for m in at.markdown if m.value.startswith("#### ")]
    assert shown == [objective for objective, _ in groups]  # a section each, in the files' order
    for lesson in LESSONS:  # each card's claim readable without opening anything
        assert any(m.value == lesson.what_to_do for m in at.markdown), lesson.key
        assert at.button(key=f"lesson.{lesson.key}")


def test_a_card_asks_its_lessons_question_and_keeps_the_answer_folded():
    """A card's claim answers the question its lesson asks before Play: a student reading Home first
    sees the question, and the claim only by opening the card's fold."""
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    asked = [lesson for lesson in LESSONS if lesson.question is not None]
    assert asked, "no lesson asks a question"
    for lesson in asked:
        assert any(m.value == f":material/quiz: {lesson.question.text}" for m in at.markdown), lesson.key
    answers = [m.value for e in at.expander if e.label == "The measured answer" for m in e.markdown]
    assert sorted(answers) == sorted(lesson.what_to_do for lesson in asked)
    for lesson in asked:  # in its fold, and nowhere else on the page
        assert sum(m.value == lesson.what_to_do for m in at.markdown) == 1, lesson.key


def test_home_suggests_a_first_class_and_an_nlp_class_with_the_time_each_lesson_trains():
    from app.session import ensembles
    from app.session.lessons import first_class, nlp_class

    first, nlp = first_class(), nlp_class()
    assert 4 <= len(first) <= 10 and 4 <= len(nlp) <= 10 and not {a.key for a in first} & {b.key for b in nlp}
    assert [lesson.key for lesson in nlp] == ["pretrained-embeddings", "transfer", "length", "contextual-embeddings",
                                              "generation"]  # embeddings, transfer, NMT, GPT and BERT, decoding
    assert all(lesson.question is not None for lesson in nlp)  # each asks before it runs
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert [h.value for h in at.subheader][:2] == ["Start here: a first 90-minute class",
                                                   "The NLP half: a 90-minute class"]
    listed = [m.value for m in at.markdown if m.value.startswith("**") and " · " in m.value]
    assert len(listed) == len(first) + len(nlp)
    for number, (text, lesson) in [*enumerate(zip(listed, first), 1), *enumerate(zip(listed[len(first):], nlp), 1)]:
        assert text.startswith(f"**{number}. {lesson.title}**")
        if lesson.shipped is not None:
            assert "a shipped model, nothing to train" in text
        else:
            assert f"about {ensembles.shipped(lesson.key).minutes():.0f} min" in text or "under a minute" in text
    for path in (first, nlp):
        at.button(key=f"path.{path[0].key}").click().run()
        assert not at.exception and at.session_state["lesson"] == path[0].key
        at.switch_page(nav.PATHS["home"]).run()


def test_the_app_caps_torchs_kernels_before_torch_computes():
    """A server started with none of pretrained/kernels.py's variables set computes with the capped
    kernels, as the tests do: app/main.py, run in a fresh process as Streamlit runs it (here in bare
    mode), sets them before it imports torch."""
    import os
    import platform
    import subprocess
    import sys

    from pretrained import kernels

    env = {name: value for name, value in os.environ.items() if name not in (*kernels.KERNELS, kernels.CHOICE)}
    script = ("import os, runpy\ntry:\n    runpy.run_path('app/main.py')\nexcept Exception:\n    pass\n"
              "import torch\nprint(os.environ['ONEDNN_MAX_CPU_ISA'], torch.backends.cpu.get_cpu_capability())")
    out = subprocess.run([sys.executable, "-c", script], cwd=MAIN.rsplit("/app/", 1)[0], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out[0] == "AVX2"
    if platform.machine() in ("x86_64", "AMD64"):
        assert out[1] == "AVX2"


def test_main_finds_the_repositorys_packages_when_run_as_a_script_from_anywhere():
    """`streamlit run app/main.py` runs the file as a script, with app/ (not the repository's root)
    on the import path: main.py must find app, engine and pretrained itself. Run here isolated
    (python -I: no working directory, no PYTHONPATH on the path) from another directory; the browser
    tests start the server with the README's command word for word."""
    import subprocess
    import sys
    import tempfile

    script = ("import runpy, sys\ntry:\n    runpy.run_path(sys.argv[1])\nexcept ModuleNotFoundError as err:\n"
              "    print('missing', err.name)\nexcept Exception:\n    pass\n"
              "print(all(m in sys.modules for m in ('pretrained.kernels', 'app.pages', 'engine')))")
    with tempfile.TemporaryDirectory() as elsewhere:
        out = subprocess.run([sys.executable, "-I", "-c", script, MAIN], cwd=elsewhere, capture_output=True,
                             text=True, timeout=120, check=True).stdout.split()
    assert out == ["True"], out


OWN_RUNS = {"compare": "Compare cells", "architectures": "Compare architectures", "scaling": "Why √d_k",
            "transfer": "Transfer learning", "word-vectors": "Pretrained embeddings", "bert-gpt": "BERT and GPT",
            "embeddings": "Embeddings"}


@pytest.mark.parametrize("page", OWN_RUNS)
def test_a_page_that_trains_runs_of_its_own_says_the_sidebars_model_does_not_train_there(page):
    """Issue 44, finding 3: the sidebar's "steps trained: 0" beside a page's runs at step 1,000."""
    from app import pages

    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.switch_page(pages.PATHS[page]).run()
    assert not at.exception, [e.message for e in at.exception]
    said = [c.value for c in at.sidebar.caption]
    assert f"{OWN_RUNS[page]} trains" in " ".join(said) and any("does not train here" in c for c in said)
