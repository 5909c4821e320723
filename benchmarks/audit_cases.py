"""Cases for benchmarks/audit_inputs.py: the profile they start from, mutations of its saved
JSON, bad arguments for the command line and the API, and the cases of issue 37 (training,
compiled models, key_averages, exports, diff)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
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


# ---- issue 37: training, compiled models, key_averages, exports, diff -------------------------

class ParameterFree(torch.nn.Module):
    """No parameter: nothing for backward=True to differentiate."""

    def forward(self, x):
        return torch.relu(x)


@dataclasses.dataclass
class Out:
    """A plain dataclass output (not a registered pytree)."""

    loss: torch.Tensor
    logits: torch.Tensor


class DataclassOutput(torch.nn.Module):
    """A model returning :class:`Out`."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        return Out(y.pow(2).mean(), y)


class Dropping(torch.nn.Module):
    """Dropout after a linear layer: draws from the global RNG in training mode."""

    def __init__(self) -> None:
        super().__init__()
        self.linear, self.drop = torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.linear(x))


class GraphBreak(torch.nn.Module):
    """Two linear layers with a graph break between them."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        x = self.a(x)
        torch._dynamo.graph_break()
        return self.b(x)


def _quick(model, **options) -> pyfxprof.Profile:
    return pyfxprof.profile(model, (torch.randn(2, 4),), runs=3, warmup=1, progress=False,
                            **options)


def _raise(output):
    raise RuntimeError("boom in loss_fn")


def round4_api_cases(folder) -> dict:
    """The bad calls of issue 37: description -> call (each must work or raise one line)."""
    memory = _quick(torch.nn.Linear(4, 4), profile_memory=True)
    return {
        "export_memory_timeline(directory)": lambda: memory.export_memory_timeline(folder),
        "export_memory_timeline(missing/m.json)": lambda: memory.export_memory_timeline(
            folder / "missing" / "m.json"),
        "export_memory_timeline(missing/m.html)": lambda: memory.export_memory_timeline(
            folder / "missing" / "m.html"),
        "key_averages().table(row_limit=2.5)": lambda: memory.key_averages().table(row_limit=2.5),
        "key_averages().table(row_limit='3')": lambda: memory.key_averages().table(row_limit="3"),
        "key_averages(group_by_stack_n='3')": lambda: memory.key_averages(group_by_stack_n="3"),
        "export('x.json', metric='median')": lambda: memory.export(folder / "x.json",
                                                                   metric="median"),
        "export('x.csv', bogus=1)": lambda: memory.export(folder / "x.csv", bogus=1),
        "profile(backward=True, loss_fn=5)": lambda: _quick(torch.nn.Linear(4, 4), backward=True,
                                                             loss_fn=5),
        "profile(backward=True, loss_fn raising)": lambda: _quick(
            torch.nn.Linear(4, 4), backward=True, loss_fn=_raise),
        "profile(backward=True, loss_fn -> unrelated leaf)": lambda: _quick(
            torch.nn.Linear(4, 4), backward=True,
            loss_fn=lambda out: torch.ones((), requires_grad=True)),
        "profile(capture='whole', backward=True)": lambda: _quick(
            torch.nn.Linear(4, 4), backward=True, capture="whole"),
        "profile(parameter-free, backward=True)": lambda: _quick(ParameterFree(), backward=True),
        "diff(backward profile, forward profile)": lambda: pyfxprof.diff(
            _quick(torch.nn.Linear(4, 4), backward=True), _quick(torch.nn.Linear(4, 4))),
        "profile(torch.compile(graph break, fullgraph=True))": lambda: _quick(
            torch.compile(GraphBreak(), fullgraph=True)),
        "profile(compile={'backend': 'eager'})": lambda: _quick(GraphBreak(),
                                                                compile={"backend": "eager"}),
    }


#: The messages issue 37 found misleading: call -> words its one-line refusal must hold, and
#: words it must not.
MESSAGES = {
    "profile(backward=True, loss_fn -> unrelated leaf)": ("not computed from the model's output",
                                                          "buffer cap"),
    "profile(capture='whole', backward=True)": ("capture='whole'", "module hooks"),
    "profile(parameter-free, backward=True)": ("no parameter", "loss_fn"),
    "profile(backward=True, loss_fn raising)": ("loss_fn raised RuntimeError", "model raised"),
    "diff(backward profile, forward profile)": ("forward and backward", "faster"),
    "profile(torch.compile(graph break, fullgraph=True))": ("torch.compile failed", "graph(s)"),
}


def _rng_kept(**options) -> str | None:
    model, x = Dropping().train(), torch.randn(2, 4)  # drawn before the seed
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    pyfxprof.profile(model, (x,), runs=3, warmup=1, progress=False, **options)
    return None if torch.equal(torch.rand(3), expected) else f"RNG advanced by {options}"


def _dataclass_backward(capture: str) -> str | None:
    prof = _quick(DataclassOutput(), backward=True, capture=capture)
    if prof.backward_samples is None or prof.meta["capture_mode"] != capture:
        return f"no backward columns on {capture}"
    return None


def _profiler_dataclass_backward() -> str | None:
    model = DataclassOutput()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with pyfxprof.Profiler(model, backward=True) as p:
        for _ in range(6):
            optimizer.zero_grad()
            p.model(torch.randn(2, 4)).loss.backward()
            optimizer.step()
            p.step()
    note = p.profiles[-1].meta.get("backward_note")
    return None if p.profiles[-1].backward_samples is not None else f"no backward: {note}"


def _compiled_diffs(folder) -> str | None:
    from pyfxprof.analyses.compiled_diff import CompiledDiff
    from pyfxprof.cli.main import main
    eager, compiled = _quick(torch.nn.Linear(4, 4)), _quick(torch.compile(torch.nn.Linear(4, 4)))
    if not all(isinstance(d, CompiledDiff) for d in (pyfxprof.diff(eager, compiled),
                                                     pyfxprof.diff(compiled, eager))):
        return "an eager-vs-compiled diff that is not a CompiledDiff"
    eager.save(folder / "e.json")
    compiled.save(folder / "c.json")
    with contextlib.redirect_stdout(io.StringIO()):
        codes = [main(["diff", str(folder / a), str(folder / b)]) for a, b in
                 (("e.json", "c.json"), ("c.json", "e.json"))]
    return None if codes == [0, 0] else f"CLI diff exit codes {codes}"


def _fullgraph_listed() -> str | None:
    prof = _quick(torch.compile(torch.nn.Linear(4, 4), fullgraph=True, dynamic=False))
    notes = " ".join(prof.meta["capture_notes"])
    return None if "dynamic=False, fullgraph=True" in notes else f"options not listed: {notes}"


def _trace_runs(folder) -> str | None:
    model, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            model(x)
    prof.export_chrome_trace(str(folder / "three_calls.json"))
    runs = pyfxprof.diff(folder / "three_calls.json", folder / "three_calls.json").control.n_runs
    return None if runs == 3 else f"a trace of 3 calls read as {runs} run(s)"


def round4_behaviour(folder) -> dict:
    """What issue 37 found wrong: description -> check (None when right, else what is wrong)."""
    checks = {f"RNG kept ({name})": (lambda o=options: _rng_kept(**o)) for name, options in (
        ("forward", {}), ("backward fx", dict(backward=True)),
        ("backward dynamo", dict(backward=True, capture="dynamo")),
        ("hooks", dict(capture="hooks")))}
    checks.update({f"dataclass output, backward on {c}": (lambda c=c: _dataclass_backward(c))
                   for c in ("fx", "dynamo")})
    checks["dataclass output, Profiler(backward=True)"] = _profiler_dataclass_backward
    checks["eager vs compiled diff, both orders, API and CLI"] = lambda: _compiled_diffs(folder)
    checks["torch.compile options listed"] = _fullgraph_listed
    checks["torch.profiler trace of 3 calls"] = lambda: _trace_runs(folder)
    return checks
