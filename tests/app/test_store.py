"""The register of labs that brings a tab's lab back after a reload: only to its owner, only
while it is fresh, and never more than the memory budget allows."""
from dataclasses import replace

from app.session.lab import Lab
from app.session.link import DEFAULT
from app.session.store import LabStore, is_token, new_token

TAB = new_token()  # the tab that finds a lab drives it; these tests use one tab (tabs: test_tabs.py)


def test_a_lab_comes_back_to_its_owner_only():
    store, lab, owner = LabStore(), Lab(DEFAULT), new_token()
    lab_id = store.add(lab, owner, TAB)
    assert store.find(lab_id, owner, TAB).lab is lab
    assert store.find(lab_id, new_token(), TAB) is None  # another browser, the same link
    assert store.find(new_token(), owner, TAB) is None and store.find(None, owner, TAB) is None
    assert store.find(lab_id, None, TAB) is None  # a browser without its token gets nothing


def test_what_the_page_needs_comes_back_with_it():
    store, owner, lab = LabStore(), new_token(), Lab(DEFAULT)
    lab_id = store.add(lab, owner, TAB)
    store.seen(lab_id, lab, owner, {"lesson": "exploding", "target_steps": 1000}, TAB)
    assert store.find(lab_id, owner, TAB).extras == {"lesson": "exploding", "target_steps": 1000}


def test_a_lab_dropped_while_its_tab_is_open_is_kept_again_when_the_tab_uses_it():
    """Its tab still shows it, so its next reload must find it, not step 0."""
    store, owner, lab = LabStore(max_labs=1), new_token(), Lab(DEFAULT)
    lab_id = store.add(lab, owner, TAB)
    store.add(Lab(DEFAULT), new_token(), TAB)  # another student's lab takes the only place
    assert store.find(lab_id, owner, TAB) is None
    store.seen(lab_id, lab, owner, {}, TAB)
    assert store.find(lab_id, owner, TAB).lab is lab


def test_an_owner_token_of_any_text_is_compared_safely():
    store, lab = LabStore(), Lab(DEFAULT)
    lab_id = store.add(lab, "owner", TAB)
    assert store.find(lab_id, "ówner", TAB) is None  # a forged non-ASCII cookie raised TypeError


def test_labs_not_seen_for_the_time_to_live_are_dropped():
    now = [0.0]
    store, owner = LabStore(time_to_live=3600, clock=lambda: now[0]), new_token()
    lab_id = store.add(Lab(DEFAULT), owner, TAB)
    now[0] = 3000.0
    assert store.find(lab_id, owner, TAB) is not None  # seen again: its hour starts again
    now[0] = 6500.0
    assert store.find(lab_id, owner, TAB) is not None
    now[0] = 10_200.0
    assert store.find(lab_id, owner, TAB) is None and not store.kept
    assert store.why_dropped(lab_id) == "expired" and store.why_dropped(new_token()) is None


def test_the_least_recently_seen_go_first_past_the_count_or_the_bytes():
    owner, labs = new_token(), [Lab(DEFAULT) for _ in range(3)]
    store = LabStore(max_labs=2)
    ids = [store.add(lab, owner, TAB) for lab in labs[:2]]
    store.find(ids[0], owner, TAB)  # seen again: the first is now the most recent
    third = store.add(labs[2], owner, TAB)
    assert store.find(ids[1], owner, TAB) is None and store.find(ids[0], owner, TAB) and store.find(third, owner, TAB)
    one = labs[0].held_bytes()
    small = LabStore(max_bytes=2 * one)
    kept = [small.add(lab, owner, TAB) for lab in labs]
    assert small.find(kept[0], owner, TAB) is None and small.find(kept[2], owner, TAB) is not None


def test_only_a_token_this_app_makes_is_taken_as_one():
    assert all(is_token(new_token()) for _ in range(50))
    for forged in ["x'+(document.title='PWNED')+'", "", "a" * 21, "a" * 23, "ówner" * 5 + "ab", None, 7,
                   new_token() + "\n"]:
        assert not is_token(forged), forged


def test_one_browser_filling_the_store_loses_its_own_labs_never_a_classmates():
    """Issue 29: one browser opened 34 tabs of a big LSTM, each a lab, and a classmate who had
    trained 1,060 steps reopened their link at step 0. Past the bytes (or the count) the owner
    holding the most loses its least recently seen lab first."""
    now = [0.0]
    classmate, greedy = new_token(), new_token()
    lab = trained_lab()  # the classmate's, trained
    one = lab.held_bytes()
    store = LabStore(max_bytes=5 * one, clock=lambda: now[0])
    theirs = store.add(lab, classmate, TAB)  # the oldest lab in the store
    mine = []
    for _ in range(12):
        now[0] += 1.0
        mine.append(store.add(Lab(DEFAULT), greedy, TAB))
    assert store.find(theirs, classmate, TAB) is not None
    assert [store.find(i, greedy, TAB) is not None for i in mine] == [False] * 8 + [True] * 4
    assert [store.why_dropped(i) for i in mine] == ["room"] * 8 + [None] * 4  # a reload says why
    counted = LabStore(max_labs=3, clock=lambda: now[0])
    theirs = counted.add(lab, classmate, TAB)
    mine = [counted.add(lab, greedy, TAB) for _ in range(5)]
    assert counted.find(theirs, classmate, TAB) is not None
    assert sum(counted.find(i, greedy, TAB) is not None for i in mine) == 2


def test_a_lab_is_priced_with_its_data_not_its_weights_alone():
    """The store counted weights only: a lab that read a 66 MB CSV held about 300 MB more. Its
    task's arrays and the upload count too."""
    from app.session.link import preset_setup

    setup = preset_setup("charlm")
    text = "the quick brown fox jumps over the lazy dog. " * 6_000  # 270,000 characters
    uploaded = Lab(setup, text)
    weights = 4 * sum(p.numel() * p.element_size() for p in uploaded.model.parameters())
    ids = uploaded.task.ids.numel() * uploaded.task.ids.element_size()  # the corpus as token ids
    assert uploaded.held_bytes() >= weights + ids + len(text)


def test_a_lab_dropped_under_two_tabs_stays_the_newest_tabs():
    """A lab two tabs had (the first left behind) was evicted: holds() said yes to both, and the
    first to run kept it again. The store remembers who held it."""
    now, owner, first, newest = [0.0], new_token(), new_token(), new_token()
    store = LabStore(time_to_live=10, clock=lambda: now[0])
    lab_id = store.add(Lab(DEFAULT), owner, first)
    store.find(lab_id, owner, newest)  # a duplicated tab takes it
    now[0] = 20.0
    store.add(Lab(DEFAULT), owner, first)  # any later visit drops the expired lab
    assert store.why_dropped(lab_id) == "expired"
    assert store.holds(lab_id, newest) and not store.holds(lab_id, first)


def trained_lab() -> Lab:
    lab = Lab(DEFAULT)
    lab.step()
    return lab


def test_a_flood_of_new_browsers_from_one_address_evicts_its_own_labs_not_a_classmates(monkeypatch):
    """Issue 43, finding 3: 250 cookie-less sessions opened in 27 s counted as 250 browsers of one lab each,
    and the store evicted a classmate's one large lab as the browser holding the most. Past
    NEW_BROWSERS_PER_ADDRESS new browsers an address's labs count against one share, and labs never
    trained go before any trained."""
    from app.session import store as stored

    monkeypatch.setattr(stored, "NEW_BROWSERS_PER_ADDRESS", 5)
    classmate = Lab(replace(DEFAULT, model=replace(DEFAULT.model, hidden_size=256)))
    classmate.step()
    assert classmate.held_bytes() > 10 * trained_lab().held_bytes()  # the largest lab in the store
    store = LabStore(max_labs=10, max_bytes=classmate.held_bytes() + 20 * trained_lab().held_bytes())
    owner = new_token()
    kept = store.add(classmate, owner, TAB, "10.0.0.1")
    flood = [store.add(trained_lab(), new_token(), TAB, "10.0.0.9") for _ in range(30)]  # trained, even
    assert store.find(kept, owner, TAB).lab is classmate
    assert sum(lab_id in store.kept for lab_id in flood) == 9  # the flood lost its own


def test_labs_never_trained_go_before_any_trained():
    store = LabStore(max_labs=3)
    trained = [store.add(trained_lab(), new_token(), TAB) for _ in range(2)]
    opened = [store.add(Lab(DEFAULT), new_token(), TAB) for _ in range(3)]  # pages opened, nothing trained
    assert all(lab_id in store.kept for lab_id in trained)
    assert [lab_id in store.kept for lab_id in opened] == [False, False, True]  # the least recently seen first


def test_browsers_trickled_in_under_the_address_limit_lose_their_labs_before_a_classmate_who_came_first():
    """From review: one cookie-less browser every 5 s from one address stays under its limit, each its own
    share with one lab a step trained; at the count, the share with the largest lab (the classmate's) lost it.
    Among shares holding as many labs, the newest loses first."""
    now = [0.0]
    store = LabStore(max_labs=10, clock=lambda: now[0])
    classmate = Lab(replace(DEFAULT, model=replace(DEFAULT.model, hidden_size=256)))
    classmate.step()
    owner = new_token()
    kept = store.add(classmate, owner, TAB, "10.0.0.1")
    for _ in range(30):
        now[0] += 5.1
        store.add(trained_lab(), new_token(), TAB, "10.0.0.9")
    assert store.find(kept, owner, TAB).lab is classmate
