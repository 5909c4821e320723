"""The FX profiling tutorial's own ProfilingInterpreter, typed out from the tutorial, on
torch.fx.Interpreter and on pyfxprof.ProfilingInterpreter; and subclasses that fill only part."""

import statistics
import time
from typing import Any, Dict, List

import pytest
import tabulate
import torch
import torch.fx
import torchvision

import pyfxprof


def tutorial_class(base):
    """The tutorial's class with `base` where it has torch.fx.Interpreter (nothing else changed)."""

    class ProfilingInterpreter(base):
        def __init__(self, mod: torch.nn.Module):
            gm = torch.fx.symbolic_trace(mod)
            super().__init__(gm)
            self.total_runtime_sec: List[float] = []
            self.runtimes_sec: Dict[torch.fx.Node, List[float]] = {}

        def run(self, *args) -> Any:
            t_start = time.time()
            return_val = super().run(*args)
            t_end = time.time()
            self.total_runtime_sec.append(t_end - t_start)
            return return_val

        def run_node(self, n: torch.fx.Node) -> Any:
            t_start = time.time()
            return_val = super().run_node(n)
            t_end = time.time()
            self.runtimes_sec.setdefault(n, [])
            self.runtimes_sec[n].append(t_end - t_start)
            return return_val

        def summary(self, should_sort: bool = False) -> str:
            node_summaries: List[List[Any]] = []
            mean_total_runtime = statistics.mean(self.total_runtime_sec)
            for node, runtimes in self.runtimes_sec.items():
                mean_runtime = statistics.mean(runtimes)
                pct_total = mean_runtime / mean_total_runtime * 100
                node_summaries.append(
                    [node.op, str(node), mean_runtime, pct_total])
            if should_sort:
                node_summaries.sort(key=lambda s: s[2], reverse=True)
            headers: List[str] = [
                'Op type', 'Op', 'Average runtime (s)', 'Pct total runtime'
            ]
            return tabulate.tabulate(node_summaries, headers=headers)

    return ProfilingInterpreter


def small_resnet18():
    return torchvision.models.resnet18().eval(), torch.randn(1, 3, 64, 64)


def run_tutorial(base, runs=3):
    """The tutorial's steps: trace in the constructor, run, summary(should_sort=True)."""
    rn18, x = small_resnet18()
    interp = tutorial_class(base)(rn18)
    with torch.no_grad():
        outputs = [interp.run(x) for _ in range(runs)]
        expected = rn18(x)
    for output in outputs:
        torch.testing.assert_close(output, expected)
    return interp, interp.summary(should_sort=True)


def table_rows(text):
    """The tutorial's tabulate output as [op type, op, mean, pct] rows."""
    rows = [line.split() for line in text.splitlines()[2:]]
    return [(r[0], r[1], float(r[2]), float(r[3])) for r in rows]


@pytest.fixture(scope="module")
def tutorial_runs():
    """The tutorial's class run twice on torch.fx.Interpreter and once on pyfxprof's."""
    return {"fx": run_tutorial(torch.fx.Interpreter), "fx again": run_tutorial(torch.fx.Interpreter),
            "pyfxprof": run_tutorial(pyfxprof.ProfilingInterpreter)}


def test_the_tutorials_class_runs_unchanged_on_both_base_classes(tutorial_runs):
    _, on_fx = tutorial_runs["fx"]
    interp, on_pyfxprof = tutorial_runs["pyfxprof"]
    fx_rows, our_rows = table_rows(on_fx), table_rows(on_pyfxprof)
    assert on_fx.splitlines()[0].split() == on_pyfxprof.splitlines()[0].split()
    assert len(fx_rows) == len(our_rows) == len(interp.graph.nodes)  # every node, placeholder too
    assert sorted(r[1] for r in fx_rows) == sorted(r[1] for r in our_rows)
    means = [r[2] for r in our_rows]
    assert means == sorted(means, reverse=True)  # should_sort
    # the tutorial's numbers are time.time() around pyfxprof's natively timed node call
    assert len(interp.total_runtime_sec) == 3 and all(len(v) == 3 for v in interp.runtimes_sec.values())
    native = interp.node_seconds()
    assert native.shape == (3, len(interp.timed))
    assert native.sum(axis=1).max() <= sum(interp.total_runtime_sec) + 1e-3


def test_a_subclass_overriding_only_run_node_fills_runtimes_sec_itself():
    class NodeTimes(pyfxprof.ProfilingInterpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            t_start = time.perf_counter()
            return_val = super().run_node(n)
            self.runtimes_sec.setdefault(n, [])
            self.runtimes_sec[n].append(time.perf_counter() - t_start)
            return return_val

    rn18, x = small_resnet18()
    interp = NodeTimes(rn18)
    with torch.no_grad():
        for _ in range(3):
            interp.run(x)
    names = [row[1] for row in table_rows(interp.summary())]
    assert names == [n.name for n in interp.graph.nodes]  # its own entries: placeholder, output too
    assert all(len(v) == 3 for v in interp.runtimes_sec.values())
    assert len(interp.total_runtime_sec) == 3  # run() not overridden: pyfxprof's native totals
    assert interp.node_seconds().shape == (3, len(interp.timed))


def test_numbers_a_subclass_assigns_are_what_summary_shows():
    interp = pyfxprof.ProfilingInterpreter(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh()))
    interp.run(torch.zeros(3))
    assert [len(v) for v in interp.runtimes_sec.values()] == [1, 1]  # pyfxprof's own, natively
    relu, tanh = interp.timed
    interp.runtimes_sec = {relu: [0.001, 0.003], tanh: [0.004]}
    interp.total_runtime_sec = [0.010]
    rows = table_rows(interp.summary(should_sort=True))
    assert rows == [("call_module", "_1", 0.004, 40.0), ("call_module", "_0", 0.002, 20.0)]
    interp.run(torch.zeros(3))  # pyfxprof leaves what the subclass wrote alone
    assert interp.runtimes_sec == {relu: [0.001, 0.003], tanh: [0.004]}


def top10(names_and_seconds):
    return {name for name, _ in sorted(names_and_seconds, key=lambda p: p[1], reverse=True)[:10]}


def test_top10_nodes_agree_with_the_tutorials_as_well_as_the_tutorial_with_itself(tutorial_runs):
    (tutorial_a, _), (tutorial_b, _) = tutorial_runs["fx"], tutorial_runs["fx again"]
    ours, _ = tutorial_runs["pyfxprof"]
    mean = lambda interp: [(n.name, statistics.mean(v)) for n, v in interp.runtimes_sec.items()
                           if n.op not in ("placeholder", "output")]  # noqa: E731
    native = [(node.name, float(s)) for node, s in
              zip(ours.timed, ours.node_seconds().mean(axis=0))]
    itself = len(top10(mean(tutorial_a)) & top10(mean(tutorial_b)))
    assert len(top10(native) & top10(mean(tutorial_a))) >= itself - 3
