"""Tests of analyses.exported: an eager profile against its exported program's, lined up per
module path and per op as the compiled diff is, with the numeric modes compared (profiles
built by hand: no model runs)."""

import numpy as np
import pandas as pd
import pytest

from pyfxprof.analyses.diff import diff
from pyfxprof.analyses.exported import ExportedDiff, as_sources, is_exported_profile
from pyfxprof.data.profile import Profile
from pyfxprof.errors import PyfxprofError

NUMERIC = {"autocast": {}, "param_dtypes": ["float32"], "input_dtypes": ["float32"],
           "input_memory_formats": ["contiguous"], "autograd": "inference_mode"}


def profile_of(rows, medians, meta):
    """rows: (name, op, module_path); each run's samples are the medians exactly."""
    nodes = pd.DataFrame({"index": range(len(rows)), "name": [r[0] for r in rows],
                          "op": [r[1] for r in rows], "target": [r[0] for r in rows],
                          "module_path": [r[2] for r in rows], "module_type": "M",
                          "module_stack": [(r[2],) if r[2] else () for r in rows]})
    samples = np.tile(np.array(medians, dtype=np.int64), (3, 1))
    return Profile(nodes, samples, samples.sum(axis=1) + 100, {"model": "Net", **meta})


EAGER = profile_of([("fc1", "call_module", "fc1"), ("relu", "call_function", ""),
                    ("fc2", "call_module", "fc2")], [1000, 200, 800],
                   {"capture_mode": "fx", **NUMERIC})
EXPORTED = profile_of([("fc1_weight", "get_attr", "fc1"), ("_guards_fn", "call_module",
                                                           "_guards_fn"),
                       ("linear", "call_function", "fc1"), ("relu", "call_function", ""),
                       ("linear_1", "call_function", "fc2")], [10, 30, 600, 100, 500],
                      {"capture_mode": "exported", "exported": True, **NUMERIC})


def test_each_op_is_its_own_source_but_parameter_reads_and_guards():
    nodes = as_sources(EXPORTED).nodes
    assert nodes["source_nodes"].tolist() == [(), (), ("linear",), ("relu",), ("linear_1",)]
    assert nodes["source_modules"].tolist() == [(), (), ("fc1",), ("",), ("fc2",)]
    assert is_exported_profile(EXPORTED) and not is_exported_profile(EAGER)


def test_modules_and_ops_line_up():
    d = diff(EAGER, EXPORTED, labels=("eager", "exported"))
    assert isinstance(d, ExportedDiff) and d.compiled is EXPORTED
    frame = d.frame.set_index("module")
    assert frame.loc["fc1", "eager_ns"] == 1000 and frame.loc["fc1", "compiled_ns"] == 610
    assert frame.loc["fc2", "saving_ns"] == 300
    assert frame.loc["_guards_fn", "compiled_ns"] == 30
    pairs = d.ops.set_index("eager_op")
    assert pairs.loc["fc1", "source_node"] == "linear"
    assert pairs.loc["relu", "source_node"] == "relu"
    assert pairs.loc["fc2", "source_node"] == "linear_1"
    assert "numeric mode differs" not in d.table() and repr(d).startswith("<ExportedDiff 5 modules")


def test_a_different_numeric_mode_is_said():
    bf16 = profile_of([("linear", "call_function", "fc1")], [300],
                      {"capture_mode": "exported", **NUMERIC, "autocast": {"cpu": "bfloat16"},
                       "input_memory_formats": ["channels_last"]})
    lines = diff(EAGER, bf16, labels=("eager", "exported")).table().splitlines()
    assert lines[0] == ("numeric mode differs (eager vs exported): autocast off vs autocast cpu "
                        "bfloat16; inputs float32 contiguous vs inputs float32 channels_last")


def test_sides_in_the_wrong_order_are_refused():
    with pytest.raises(PyfxprofError, match="eager profile first"):
        ExportedDiff(EXPORTED, EAGER)
