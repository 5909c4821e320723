"""Attributes a Dynamo frame stores on the model's modules without a guard on them.

Dynamo's code replays an attribute store with the value the trace computed. That is right on a
later call only while what the value was computed from is unchanged, which Dynamo checks by a
guard on the attribute (the counter ``self.n = self.n + 1`` gets one: the next call recompiles).
A value read through the instance's dict (``self.__dict__.get(k, 0)``, ``vars(self)[k]``, with
``object.__setattr__`` or ``self.__dict__[k] = v`` to write it) gets none, so every later call
would write, and return, the first call's value: ``torch.compile`` returns the same stale
outputs. Any stored attribute of a pre-existing object without a guard on it is such a store,
whatever Python form made it; a frame with one is not run again from Dynamo's code.
"""

from __future__ import annotations

import torch


def unguarded_stores() -> list[str]:
    """The ``module.attribute`` sources of the frame Dynamo is compiling now (call it from a
    backend) that it stores without a guard on them, sorted; ``["?"]`` when Dynamo's record
    cannot be read (counted as unguarded)."""
    from torch._dynamo.symbolic_convert import InstructionTranslator

    try:
        output = InstructionTranslator.current_tx().output
        guarded = {guard.name for guard in output.guards}
        # a guard on an attribute's absence names its owner alone (hasattr(owner, name))
        guarded |= {f"{guard.name}.*" for guard in output.guards
                    if guard.inner_create_fn().__name__ == "HASATTR"}
        found: set[str] = set()
        for variable, attributes in output.side_effects.store_attr_mutations.items():
            owner = source_name(getattr(variable, "source", None))
            if owner is None or not isinstance(getattr(variable, "value", None), torch.nn.Module):
                continue  # a new object, one of Dynamo's temporaries, or not a module's
            found.update(f"{owner}.{name}" for name in attributes
                         if not _guarded(owner, name, guarded))
    except Exception:  # (Dynamo's record cannot be read: say so)
        return ["?"]
    return sorted(found)


def source_name(source) -> str | None:
    """Dynamo's text of a source (a method before torch 2.10); None for no source, or one
    Dynamo gives no name (a temporary local of its own, at a graph break)."""
    if source is None:
        return None
    try:
        name = source.name
        return str(name() if callable(name) else name)
    except NotImplementedError:
        return None


def _guarded(owner: str, name: str, guarded: set[str]) -> bool:
    """Whether a guard reads ``owner.name`` (as an attribute or an instance-dict entry) or
    something under it, or whether ``owner`` has an attribute (``owner.*``).

    >>> _guarded("L['s']", "n", {"L['s'].n"}), _guarded("L['s']", "n", {"L['s'].__dict__['n']"})
    (True, True)
    >>> _guarded("L['s']", "n", {"L['s'].__dict__['_modules']", "L['s'].nn"})
    False
    """
    if f"{owner}.*" in guarded:
        return True
    places = (f"{owner}.{name}", f"{owner}.__dict__['{name}']")
    return any(guard == place or guard.startswith((place + ".", place + "["))
               for guard in guarded for place in places)
