"""Cases for benchmarks/audit_inputs.py: the profile they start from, mutations of its saved
JSON, and bad arguments for the command line and the API."""

from __future__ import annotations

import json
import random

import torch

import pyfxprof


class Block(torch.nn.Module):
    """A small convolutional model with a nested module, a residual add and a functional op."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5))

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.head(y + y.mean())


def base_profile(runs: int = 6) -> pyfxprof.Profile:
    """A profile of :class:`Block` on the CPU (every column a real capture fills)."""
    return pyfxprof.profile(Block().eval(), (torch.randn(2, 3, 8, 8),), runs=runs, warmup=1,
                            progress=False)


# ---- mutated saved profiles -----------------------------------------------------------------

#: Values put anywhere in a saved document: every JSON kind, the edges of int64 and the cases
#: the audit of issue 27 found accepted then crashing.
VALUES = [None, True, 0, -1, 7, 2**53 + 1, 2**63 - 1, 2**63, -2**63 - 1, 10**30, 1.5, -0.0,
          1e308, "", "x", "a\x1b[31mRED\x07", "\ud800", [], [1, 2], ["a", "b"], [None, 5],
          {}, {"name": "tsc"}, {"$float": "nan"}, {"$float": "inf"}, {"$tuple": ["a"]},
          {"$tuple": "x"}, {"$na": None}, {"$dict": {}}, {"$array": {"dtype": "<i8"}},
          [["a", "b"]], {"a": "b"}, [[[[[]]]]], {"dtype": "<i8", "shape": [2], "data": "AA=="}]


def paths(value, prefix=()):
    """Every (container path, key) of a JSON document."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        yield prefix, key
        if isinstance(child, (dict, list)):
            yield from paths(child, prefix + (key,))


def mutate_tree(doc, rng) -> None:
    """Replace, delete or copy one value anywhere in ``doc``."""
    where = list(paths(doc))
    prefix, key = where[rng.randrange(len(where))]
    parent = doc
    for step in prefix:
        parent = parent[step]
    action = rng.choice(["replace", "replace", "delete", "copy"])
    if action == "delete":
        del parent[key]
    elif action == "copy" and len(parent) > 1:
        keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
        parent[key] = json.loads(json.dumps(parent[rng.choice(keys)]))
    else:
        parent[key] = json.loads(json.dumps(rng.choice(VALUES)))


def mutate_text(text: str, rng) -> str:
    """Flip, cut or insert characters; duplicate a key; or pad meta."""
    at = rng.randrange(len(text))
    kind = rng.choice(["flip", "cut", "insert", "duplicate", "pad"])
    if kind == "duplicate":
        key = rng.choice(['"samples"', '"meta"', '"n_nodes"', '"runs"', '"format"'])
        start = text.find(key)
        if start > 0:
            end = text.find(",", text.find(":", start))
            return text[:1] + text[start:end] + "," + text[1:] if end > 0 else text
    if kind == "pad":
        pad = rng.choice(["{}", "[]", "0", '""'])
        return text.replace('"meta": {', '"meta": {"pad": [' + ",".join(
            [pad] * rng.choice([10, 1000, 200_000])) + "], ", 1)
    piece = rng.choice(list('0123456789-.eE[]{}",:tfn \\') + ["Infinity", "NaN", "9" * 30])
    if kind == "cut":
        return text[:at] + text[at + rng.randint(1, 50):]
    return text[:at] + piece + text[at + (kind == "flip"):]


def mutated_texts(base: str, count: int, seed: int = 0):
    """``count`` mutated versions of the saved document ``base`` (JSON text)."""
    rng = random.Random(seed)
    document = json.loads(base)
    for _ in range(count):
        if rng.random() < 0.6:
            doc = json.loads(base)
            for _ in range(rng.randint(1, 3)):
                mutate_tree(doc, rng)
            yield json.dumps(doc)
        else:
            text = json.dumps(document)
            for _ in range(rng.randint(1, 3)):
                text = mutate_text(text, rng)
            yield text


#: A module name carrying terminal escape sequences and a bell.
HOSTILE_NAME = "a\x1b[31mRED\x07\x1b]0;title\x07"


class Hostile(torch.nn.Module):
    """A model whose submodule's name holds control characters."""

    def __init__(self) -> None:
        super().__init__()
        self.add_module(HOSTILE_NAME, torch.nn.Linear(4, 4))

    def forward(self, x):
        return torch.relu(getattr(self, HOSTILE_NAME)(x))
