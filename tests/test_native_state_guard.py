"""_C.state_guard (csrc/state_guard.cpp): dict entries checked by identity, a key expected
absent, an unchanged dict skipped, rebase() taking the current objects; bad arguments refused."""

import pytest

from pyfxprof import _C

ABSENT = object()


def test_a_guard_holds_while_each_entry_is_the_object_expected():
    value, space = object(), {"a": 1.5, "b": None}
    space["c"] = value
    guard = _C.state_guard([(space, (("a", space["a"]), ("c", value), ("d", ABSENT)))], ABSENT)
    assert guard.holds()
    space["b"] = 2  # an entry not watched
    assert guard.holds()
    space["d"] = 0  # a key expected absent
    assert not guard.holds()
    del space["d"]
    assert guard.holds()
    space["a"] = float("1.5")  # an equal value, another object: the Python side judges
    assert not guard.holds()
    guard.rebase()
    assert guard.holds()
    del space["c"]
    assert not guard.holds()


def test_a_guard_sees_changes_in_any_of_its_dicts():
    first, second = {"x": 1}, {"y": 2}
    guard = _C.state_guard([(first, (("x", 1),)), (second, (("y", 2),))], ABSENT)
    assert guard.holds()
    second["y"] = 3
    assert not guard.holds()
    second["y"] = 2
    assert guard.holds()


@pytest.mark.parametrize("items", [[1], [({}, 1)], [({}, ((1,),))], [([], ())]])
def test_bad_arguments_are_refused(items):
    with pytest.raises(TypeError):
        _C.state_guard(items, ABSENT)
    with pytest.raises(TypeError):
        _C.state_guard((), ABSENT)
