"""Tests of views.report_header: the header block of every report."""

import pytest

from pyfxprof.data.rungs import INDUCTOR, TABLE
from pyfxprof.views.report_header import header_lines, row_lines


def test_header_shows_subtracted_overhead_per_node():
    lines = header_lines({"overhead_ns": 48.0}, n_runs=1, n_nodes=1, run_totals=[10])
    assert lines[2].startswith("overhead: 48 ns/node, subtracted · ")


def test_header_with_missing_meta_renders_question_marks():
    lines = header_lines({}, n_runs=3, n_nodes=5, run_totals=[100, 200, 300])
    assert lines == [
        "pyfxprof — ? on ? · 3 runs (? warmup) · mode ? · capture ? · model ?, ?",
        "total: 200 ns median ± 100 ns IQR · 5 nodes · coverage ?",
        "overhead: ? · clock ? · dropped records: ?",
        "cpu ? · threads ? · versions ? · at ?",
        *row_lines({}),
    ]


def test_header_clock_without_resolution():
    lines = header_lines({"clock": {"name": "steady_clock"}}, 1, 1, [1])
    assert "clock steady_clock (resolution ?)" in lines[2]


def test_numeric_mode_line_and_exported_model():
    from pyfxprof.views.report_header import numeric_mode_difference
    meta = {"exported": True, "autograd": "no_grad", "autocast": {"cuda": "float16"},
            "param_dtypes": ["bfloat16", "float32"], "input_dtypes": ["int64"],
            "input_memory_formats": ["contiguous"]}
    lines = header_lines(meta, 1, 1, [1])
    assert lines[0].endswith("capture ? · model exported, no_grad")
    assert lines[3] == ("numeric: autocast cuda float16 · parameters bfloat16, float32 · inputs "
                        "int64 contiguous · no_grad")
    assert not any(line.startswith("numeric:") for line in header_lines({}, 1, 1, [1]))
    assert numeric_mode_difference(meta, dict(meta)) is None
    assert numeric_mode_difference(meta, {}) is None  # a profile that does not state it
    changed = dict(meta, autograd="grad", param_dtypes=["float32"])
    assert numeric_mode_difference(meta, changed, ("a", "b")) == (
        "numeric mode differs (a vs b): parameters bfloat16, float32 vs parameters float32; "
        "no_grad vs grad")


def test_profile_header_adds_the_latency_line_under_the_header_block():
    import numpy as np
    from pyfxprof.data.profile import Profile
    from pyfxprof.views.report_header import profile_header
    from tests.toy_profiles import toy_nodes
    nodes = toy_nodes()
    prof = Profile(nodes, np.full((20, len(nodes)), 10, dtype=np.int64),
                   np.full(20, 50, dtype=np.int64), {"runs": 20})
    lines = profile_header(prof)
    assert lines[:-1] == header_lines(prof.meta, 20, len(nodes), prof.run_totals)
    assert lines[-1].startswith("latency: p50 50 ns")


@pytest.mark.parametrize("mode", [rung.name for rung in TABLE] + [None, "elsewhere"])
def test_every_header_says_what_a_row_includes_and_where_the_node_alone_is(mode):
    """Every report (whatever its capture) says what its rows hold; a node's row where the
    node alone may cost less (benchmarks/README.md, `bench_accuracy_context.py`), with the replay
    that times it alone beside its row; a compiled profile's, a kernel where it runs."""
    lines = header_lines({"capture_mode": mode}, 1, 1, [1])
    meaning = [line for line in lines if line.startswith("a row")]
    assert meaning == row_lines({"capture_mode": mode}) and meaning
    assert max(len(part) for line in meaning for part in line.split(" · ")) <= 70  # wraps
    if mode == INDUCTOR:
        assert "kernel where it runs" in meaning[0] and "eager profile" in meaning[0]
    else:
        text = " ".join(meaning)
        for part in ("where it runs in the model", "allocation and page faults",
                     "cache misses", "prof.replay(node)", "beside its row", "docs/accuracy.md"):
            assert part in text
