"""capture/unguarded_stores.py: a Dynamo frame's stores on the caller's objects with no guard
on them are found whatever Python form made them; guarded or new-object stores are not."""

import pytest
import torch

from pyfxprof.capture.unguarded_stores import unguarded_stores


class _Box:
    """An object a forward creates (its attributes are no caller's state)."""


def _stores_seen(forward) -> list:
    """unguarded_stores() of each frame torch.compile compiles of a module with `forward`."""
    seen: list = []

    def backend(gm, _example_inputs):
        seen.append(unguarded_stores())
        return gm.forward

    module = type("M", (torch.nn.Module,), {"forward": forward})()
    module.lin = torch.nn.Linear(2, 2)
    torch._dynamo.reset()
    torch.compile(module, backend=backend)(torch.randn(1, 2))
    return seen


UNGUARDED = {
    "dict_item_get": lambda s, x: (s.__dict__.__setitem__("n", s.__dict__.get("n", 0) + 1),
                                   s.lin(x) * s.n)[1],
    "vars_update": lambda s, x: (vars(s).update(n=vars(s).get("n", 0) + 1), s.lin(x) * s.n)[1],
    "object_setattr": lambda s, x: (object.__setattr__(s, "n", s.__dict__.get("n", 0) + 1),
                                    s.lin(x) * s.n)[1],
}
GUARDED = {
    "setattr_of_a_read_attribute": lambda s, x: (setattr(s, "n", getattr(s, "n", 0) + 1),
                                                 s.lin(x) * s.n)[1],
    "no_store": lambda s, x: s.lin(x) * 2,
    "store_on_a_new_object": lambda s, x: (lambda box: (setattr(box, "n", 1), s.lin(x))[1])(
        _Box()),
}


@pytest.mark.parametrize("form", UNGUARDED)
def test_a_store_past_setattr_is_unguarded(form):
    seen = _stores_seen(UNGUARDED[form])
    assert seen and seen[0] and all(store.endswith(".n") for store in seen[0])


@pytest.mark.parametrize("form", GUARDED)
def test_a_guarded_or_new_object_store_is_not(form):
    seen = _stores_seen(GUARDED[form])
    assert seen and seen[0] == []


def test_outside_a_compilation_the_record_is_unreadable():
    assert unguarded_stores() == ["?"]
