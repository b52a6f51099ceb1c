"""The teacher link's one-time code and the teacher's pass (app/session/teacher_pass.py): each made with the
class's key and checked with it alone; a code of another key, or changed in any character, is none; a pass
holds until its expiry and no longer; neither holds the key."""
import pytest

from app.session.teacher_pass import PASS_HOURS, code_nonce, new_code, new_pass, pass_holds

KEY = "class-A-teacher-key-22"
NOW = 1_800_000_000.0


def changed(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:]


def test_a_code_is_checked_with_the_key_alone_and_any_change_breaks_it():
    code = new_code(KEY)
    nonce = code_nonce(code, KEY)
    assert nonce is not None and code.startswith(nonce + ".") and KEY not in code
    assert new_code(KEY) != code  # a new nonce each time
    assert code_nonce(code, "class-B-teacher-key-22") is None
    for at in (0, len(nonce) - 1, len(nonce) + 1, len(code) - 1):
        assert code_nonce(changed(code, at), KEY) is None, at
    for shape in (None, 5, "", code + "x", code.replace(".", ":"), KEY):
        assert code_nonce(shape, KEY) is None


def test_a_pass_holds_until_its_expiry_and_only_for_its_key():
    given = new_pass(KEY, NOW)
    assert KEY not in given
    assert pass_holds(given, KEY, NOW) and pass_holds(given, KEY, NOW + PASS_HOURS * 3600 - 1)
    assert not pass_holds(given, KEY, NOW + PASS_HOURS * 3600 + 1)
    assert not pass_holds(given, "class-B-teacher-key-22", NOW)
    assert not pass_holds(changed(given, len(given) - 1), KEY, NOW)
    expiry, rest = given.split(".", 1)
    assert not pass_holds(f"{int(expiry) + 3600}.{rest}", KEY, NOW)  # a later expiry is not signed


@pytest.mark.parametrize("shape", [None, "", "12.abc.def", "x" * 5000, 7])
def test_anything_else_is_no_pass(shape):
    assert not pass_holds(shape, KEY, NOW)


def test_a_code_is_no_pass_and_a_pass_no_code():
    assert not pass_holds(new_code(KEY), KEY, NOW)
    assert code_nonce(new_pass(KEY, NOW), KEY) is None
