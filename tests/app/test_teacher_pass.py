"""The teacher link's one-time code and the teacher's pass (app/session/teacher_pass.py): each made with the
class's key and checked with it alone; a code of another key, changed in any character, older than CODE_HOURS
or made before the class started is none; a pass holds until its expiry and no longer; neither holds the key,
and both are signed with keys derived from the stretched key (key_stretch.py)."""
import pytest

from app.session import key_stretch
from app.session.teacher_pass import CODE_HOURS, PASS_HOURS, code_nonce, new_code, new_pass, pass_holds

KEY = "class-A-teacher-key-22"
NOW = 1_800_000_000.0


def changed(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:]


def test_a_code_is_checked_with_the_key_alone_and_any_change_breaks_it():
    code = new_code(KEY, NOW)
    nonce = code_nonce(code, KEY, NOW)
    assert nonce is not None and f".{nonce}." in code and KEY not in code
    assert new_code(KEY, NOW) != code  # a new nonce each time
    assert code_nonce(code, "class-B-teacher-key-22", NOW) is None
    for at in (0, code.index(".") + 1, len(code) - 1):
        assert code_nonce(changed(code, at), KEY, NOW) is None, at
    for shape in (None, 5, "", code + "x", code.replace(".", ":"), KEY):
        assert code_nonce(shape, KEY, NOW) is None


def test_a_code_lives_a_school_day_and_never_opens_a_later_class():
    """A spent code in a browser's history: the store remembers its use for as long as it lives (the review
    found it accepted again 3 h + 1 s later, when the record had expired), and a code of a class before a
    restart with the same key opens nothing (class.db, and its records, go with the class)."""
    code = new_code(KEY, NOW)
    assert code_nonce(code, KEY, NOW + CODE_HOURS * 3600 - 1) is not None
    assert code_nonce(code, KEY, NOW + CODE_HOURS * 3600) is None
    assert code_nonce(code, KEY, NOW - 60) is None  # made in the future: not by a clock of this class
    assert code_nonce(code, KEY, NOW + 10, since=NOW) is not None
    assert code_nonce(code, KEY, NOW + 10, since=NOW + 1) is None  # the class started again after it was made


def test_a_pass_holds_until_its_expiry_and_only_for_its_key():
    given = new_pass(KEY, NOW)
    assert KEY not in given
    assert pass_holds(given, KEY, NOW) and pass_holds(given, KEY, NOW + PASS_HOURS * 3600 - 1)
    assert not pass_holds(given, KEY, NOW + PASS_HOURS * 3600 + 1)
    assert not pass_holds(given, "class-B-teacher-key-22", NOW)
    assert not pass_holds(changed(given, len(given) - 1), KEY, NOW)
    expiry, rest = given.split(".", 1)
    assert not pass_holds(f"{int(expiry) + 3600}.{rest}", KEY, NOW)  # a later expiry is not signed


ARABIC_DIGITS = "\u0661\u0662\u0663"  # digits to \\d, not to [0-9]


@pytest.mark.parametrize("shape", [None, "", "12.abc.def", "x" * 5000, 7, f"{ARABIC_DIGITS}.{'a' * 16}.{'b' * 22}"])
def test_anything_else_is_no_pass(shape):
    assert not pass_holds(shape, KEY, NOW)


def test_a_code_is_no_pass_and_a_pass_no_code():
    assert not pass_holds(new_code(KEY, NOW), KEY, NOW)
    assert code_nonce(new_pass(KEY, NOW), KEY, NOW) is None


def test_codes_and_passes_are_signed_with_the_stretched_key(monkeypatch):
    """A spent code (a browser's history) or a pass (its cookies) must not test a guessed key in two HMACs:
    the signing keys come from the PBKDF2-stretched key, as the class store's do."""
    asked = []
    stretched = key_stretch.stretched
    monkeypatch.setattr(key_stretch, "stretched", lambda key: asked.append(key) or stretched(key))
    new_code(KEY, NOW)
    new_pass(KEY, NOW)
    assert asked == [KEY, KEY]
