"""Tests of data.roofline: Profile.roofline from hand-built profiles and peaks (hand-computed
bytes, roofs, bounds, efficiencies with their intervals, headroom, module groups), its
header, and that a saved profile renders it."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyfxprof
from pyfxprof.stats.order_statistics import median_interval
from pyfxprof.data.roofline import COLUMNS, roofline
from pyfxprof.views.roofline_text import profile_roofline, table_columns
from pyfxprof.errors import PyfxprofError

PEAKS = {"flops": {"float32": 1e11, "bfloat16": 4e11}, "bandwidth": 1e10,
         "fixed_ns": {"matmul": 2000.0, "elementwise": 1000.0, "copy": 500.0, "conv": 3000.0},
         "threads": 2, "measured_at": "2026-12-07T06:00:00+00:00"}


def toy_profile(rows: list[dict], samples: np.ndarray, peaks: dict | None = PEAKS):
    """A Profile of `rows` (name, op, target, module_path, flops, vector_flops, in_bytes,
    param_bytes, out_bytes, dtype) timed `samples` (runs, nodes), with `peaks` in its meta."""
    nodes = pd.DataFrame([{"index": i, "module_type": "Net", "module_stack": (),
                           "aliases_input": False, **row} for i, row in enumerate(rows)])
    meta = {"model": "Net"} | ({"machine_peaks": peaks} if peaks else {})
    return pyfxprof.Profile(nodes, samples, samples.sum(axis=1), meta)


def node(name, target, flops=0, vector=0, read=0, params=0, written=0, dtype="float32",
         op="call_function", path=""):
    return {"name": name, "op": op, "target": target, "module_path": path,
            "flops": int(flops), "vector_flops": int(vector), "in_bytes": int(read),
            "param_bytes": int(params), "out_bytes": int(written), "dtype": dtype}


# Three nodes, hand-computed against PEAKS:
# mm: 2e8 FLOP at 1e11 FLOP/s = 2 ms; 3e6 bytes at 1e10 B/s = 0.3 ms -> compute, roof 2 ms.
# add: 1e6 FLOP (vector); 1.2e7 bytes -> 1.2 ms at the memory roof -> memory.
# tiny: 8 FLOP, 96 bytes -> 9.6 ns at the roof, below the 1000 ns fixed cost -> overhead.
ROWS = [node("mm", "torch.mm", flops=2e8, read=2e6, written=1e6),
        node("add", "torch.add", vector=1e6, read=8e6, written=4e6),
        node("tiny", "torch.add", vector=8, read=64, written=32)]
SAMPLES = np.array([[4_000_000, 1_500_000, 2_000], [4_000_000, 2_400_000, 2_000],
                    [5_000_000, 2_400_000, 3_000]] * 3)


def test_rows_match_hand_computed_roofs_bounds_and_efficiencies():
    frame = roofline(toy_profile(ROWS, SAMPLES))
    assert tuple(frame.columns) == COLUMNS
    by_name = frame.set_index("name")
    assert by_name["bound"].tolist() == ["compute", "memory", "overhead"]
    assert by_name["bytes"].tolist() == [3e6, 1.2e7, 96]
    assert by_name.loc["mm", "roof_ns"] == pytest.approx(2e6)
    assert by_name.loc["add", "roof_ns"] == pytest.approx(1.2e6)
    assert by_name.loc["mm", "intensity"] == pytest.approx(2e8 / 3e6)
    assert by_name.loc["mm", "attainable_flops_per_s"] == pytest.approx(1e11)
    assert by_name.loc["add", "attainable_flops_per_s"] == pytest.approx(1e6 / 1.2e7 * 1e10)
    medians = np.median(SAMPLES, axis=0)
    assert by_name["median_ns"].tolist() == medians.tolist()
    assert by_name.loc["mm", "efficiency"] == pytest.approx(2e6 / 4e6)
    assert by_name.loc["add", "efficiency"] == pytest.approx(1.2e6 / 2.4e6)
    assert by_name.loc["mm", "flops_per_s"] == pytest.approx(2e8 / 4e-3)
    assert by_name.loc["add", "bytes_per_s"] == pytest.approx(1.2e7 / 2.4e-3)
    assert by_name.loc["mm", "headroom"] == pytest.approx(2e6)
    assert by_name.loc["tiny", "fixed_ns"] == 1000.0
    assert frame.attrs["total_headroom_ns"] == pytest.approx(frame["headroom"].sum())
    assert frame.attrs["total_roof_ns"] == pytest.approx(frame["roof_ns"].sum())


def test_efficiency_interval_is_the_roof_over_the_median_interval():
    frame = roofline(toy_profile(ROWS, SAMPLES)).set_index("name")
    for column, name in enumerate(["mm", "add"]):
        low, high = median_interval(SAMPLES[:, column])
        roof = frame.loc[name, "roof_ns"]
        assert frame.loc[name, "efficiency_low"] == pytest.approx(roof / high)
        assert frame.loc[name, "efficiency_high"] == pytest.approx(roof / low)
        assert frame.loc[name, "efficiency_low"] <= frame.loc[name, "efficiency"] <= \
            frame.loc[name, "efficiency_high"]


def test_the_peak_of_a_node_is_its_dtypes_and_float32_without_one():
    rows = [node("half", "torch.mm", flops=4e8, dtype="bfloat16"),
            node("int", "torch.mm", flops=4e8, dtype="int64")]
    frame = roofline(toy_profile(rows, np.full((3, 2), 10_000_000))).set_index("name")
    assert frame.loc["half", "roof_ns"] == pytest.approx(1e6)   # 4e8 at 4e11 FLOP/s
    assert frame.loc["int", "roof_ns"] == pytest.approx(4e6)    # at float32's 1e11


def test_vector_flops_are_bounded_by_the_fastest_peak_not_their_dtypes_gemm():
    """A CPU without 16-bit matrix instructions multiplies bfloat16 matrices slowly and adds
    bfloat16 tensors at its vector rate: a bfloat16 add is memory-bound, a product not."""
    peaks = {**PEAKS, "flops": {"float32": 1e11, "bfloat16": 1e9}}
    rows = [node("add", "torch.add", vector=2e6, read=8e6, written=4e6, dtype="bfloat16"),
            node("mm", "torch.mm", flops=2e8, vector=1e6, read=2e6, written=1e6,
                 dtype="bfloat16")]
    frame = roofline(toy_profile(rows, np.full((3, 2), 1_000_000)), peaks=peaks)
    add, mm = frame.set_index("name").loc[["add", "mm"]].to_dict("records")
    assert add["bound"] == "memory" and add["roof_ns"] == pytest.approx(1.2e6)
    assert add["attainable_flops_per_s"] == pytest.approx(2e6 / 1.2e-3)
    assert mm["bound"] == "compute"
    assert mm["roof_ns"] == pytest.approx((2e8 / 1e9 + 1e6 / 1e11) * 1e9)


@pytest.mark.parametrize("share, waited", [(None, False), (0.0, False), (0.24, False),
                                           (0.25, True), (1.4, True)])
def test_rows_say_when_the_runs_waited_for_cores(share, waited):
    """A quarter of a median run or more spent by the threads runnable, not running: every
    row is marked, per node and per module, and the header says why."""
    profile = toy_profile(ROWS, SAMPLES)
    median = float(np.median(SAMPLES.sum(axis=1)))
    if share is not None:
        profile.meta["core_wait_ns_per_run"] = share * median
    frame = profile_roofline(profile)
    assert frame.attrs["core_wait_share"] == pytest.approx(share)
    assert frame["waited"].tolist() == [waited] * len(ROWS)
    assert ("waited for a core" in frame.attrs["header"]) == waited
    assert profile.roofline(group_by="module")["waited"].eq(waited).all()


def test_the_header_says_when_the_peaks_are_of_another_thread_count():
    profile = toy_profile(ROWS, SAMPLES)
    profile.meta["threads"] = 1
    assert "measured at 2 threads, the profile ran at 1" in profile_roofline(
        profile).attrs["header"]
    profile.meta["threads"] = 2
    assert "threads, the profile ran" not in profile_roofline(profile).attrs["header"]


def test_views_and_get_attrs_move_no_bytes():
    rows = [node("w", "weight", op="get_attr", written=4096),
            node("v", "view", read=4096, written=4096), node("r", "relu", vector=1024,
                                                               read=4096, written=4096)]
    nodes = toy_profile(rows, np.full((3, 3), 5000)).nodes
    nodes["aliases_input"] = [False, True, True]  # a view, and relu_ in place
    profile = pyfxprof.Profile(nodes, np.full((3, 3), 5000), np.full(3, 15000),
                               {"machine_peaks": PEAKS})
    assert roofline(profile)["bytes"].tolist() == [0, 0, 8192]


def test_modules_sum_their_nodes_and_per_run_times():
    rows = [node("a", "torch.mm", flops=2e8, read=2e6, written=1e6, path="block.fc"),
            node("b", "torch.relu", vector=1e6, read=4e6, written=4e6, path="block.act"),
            node("c", "torch.mm", flops=1e8, read=1e6, written=1e6, path="head")]
    samples = np.array([[3e6, 1e6, 2e6], [5e6, 2e6, 2e6], [4e6, 3e6, 2e6]], dtype=np.int64)
    frame = roofline(toy_profile(rows, samples), group_by="module").set_index("name")
    assert frame.index.tolist() == ["block", "head"]
    assert frame.loc["block", "flops"] == 2e8 + 1e6
    assert frame.loc["block", "bytes"] == 3e6 + 8e6
    assert frame.loc["block", "median_ns"] == np.median(samples[:, 0] + samples[:, 1])
    assert frame.loc["block", "roof_ns"] == pytest.approx(2e6 + 8e5)
    assert frame.loc["block", "bound"] == "compute"  # 2 ms of compute vs 1.1 ms of memory
    assert frame.loc["head", "kind"] == "module"


def test_header_names_the_peaks_and_total_headroom():
    header = profile_roofline(toy_profile(ROWS, SAMPLES)).attrs["header"]
    assert "GEMM float32 100 GFLOP/s" in header and "GEMM bfloat16 400 GFLOP/s" in header
    assert "triad 10.0 GB/s" in header and "2026-12-07T06:00:00" in header
    assert "headroom" in header and "lower bound" in header


def test_unknown_ops_are_carried_and_counted_in_the_header():
    rows = [dict(node("nms", "torchvision.ops.nms", read=400, written=80),
                 unknown_ops="torchvision.nms"), dict(node("mm", "torch.mm", flops=10),
                                                      unknown_ops="")]
    frame = profile_roofline(toy_profile(rows, np.full((3, 2), 1000)))
    assert frame["unknown_ops"].tolist() == ["torchvision.nms", ""]
    assert "1 rows ran ops without a FLOP formula" in frame.attrs["header"]


def test_without_peaks_it_says_how_to_get_them_and_given_peaks_win():
    profile = toy_profile(ROWS, SAMPLES, peaks=None)
    with pytest.raises(PyfxprofError, match="pyfxprof.machine_peaks()"):
        profile.roofline()
    faster = {**PEAKS, "flops": {"float32": 2e11}}
    assert profile.roofline(peaks=faster).set_index("name").loc["mm", "roof_ns"] == \
        pytest.approx(1e6)


@pytest.mark.parametrize("kwargs, message", [({"group_by": "op"}, "group_by"),
                                             ({"depth": 0}, "depth")])
def test_bad_arguments_are_refused_in_one_line(kwargs, message):
    with pytest.raises(PyfxprofError, match=message):
        roofline(toy_profile(ROWS, SAMPLES), **kwargs)


def test_a_saved_profile_renders_its_roofline(tmp_path):
    profile = toy_profile(ROWS, SAMPLES)
    profile.save(tmp_path / "p.json")
    loaded = pyfxprof.load(tmp_path / "p.json")
    pd.testing.assert_frame_equal(loaded.roofline(), profile.roofline())


def test_table_columns_format_every_row():
    text = table_columns(roofline(toy_profile(ROWS, SAMPLES)))
    assert text["bound"].tolist() == ["compute", "memory", "overhead"]
    assert text["efficiency"][0] == "0.50 [0.40, 0.50]"  # 2 ms over the interval 4-5 ms


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 10**10), st.integers(1, 10**9), st.integers(1, 10_000_000),
       st.floats(0.0, 1e5))
def test_bound_and_efficiency_follow_the_roofs(flops, moved, median, fixed):
    peaks = {**PEAKS, "fixed_ns": {"matmul": fixed}}
    rows = [node("mm", "torch.mm", flops=flops, read=moved)]
    row = roofline(toy_profile(rows, np.full((3, 1), median)), peaks=peaks).iloc[0]
    compute, memory = flops / 1e11 * 1e9, moved / 1e10 * 1e9
    roof = max(compute, memory)
    assert row["roof_ns"] == pytest.approx(roof)
    expected = "overhead" if fixed >= roof else "compute" if compute >= memory else "memory"
    assert row["bound"] == expected
    assert row["efficiency"] == pytest.approx(roof / median)
    assert row["headroom"] == pytest.approx(max(median - roof, 0.0))
    assert math.isclose(row["attainable_flops_per_s"],
                        min(1e11, flops / moved * 1e10), rel_tol=1e-9)


def test_a_training_step_has_backward_rows_by_the_convention():
    rows = ROWS[:2] + [dict(node("(loss)", "loss_fn"), op="loss")]
    nodes = toy_profile(rows, np.full((3, 3), 1000)).nodes
    backward = np.array([[8_000_000, 0, 50]] * 3)
    profile = pyfxprof.Profile(nodes, np.full((3, 3), 1000), np.full(3, 3000),
                               {"machine_peaks": PEAKS}, backward_samples=backward)
    frame = roofline(profile).set_index("name")
    assert frame.index.tolist() == ["mm", "add", "mm (backward)"]  # add's backward never ran
    assert frame.loc["mm (backward)", "flops"] == 4e8  # dX and dW: twice the forward's
    assert frame.loc["mm (backward)", "bytes"] == 2 * 2e6 + 1e6  # X read, dX written, dY read
    assert frame.loc["mm (backward)", "efficiency"] == pytest.approx(4e6 / 8e6)
    modules = roofline(profile, group_by="module")
    assert modules["name"].tolist() == ["(root)", "(root) (backward)"]


def test_too_few_runs_leave_the_efficiency_interval_open():
    frame = roofline(toy_profile(ROWS, SAMPLES[:3]))  # 3 runs cannot bound a median at 95%
    assert (frame["efficiency_low"] == 0).all() and np.isinf(frame["efficiency_high"]).all()
    assert frame["efficiency"].notna().all()


TOUCH = {**PEAKS, "first_touch_bytes": 32 << 20, "first_touch_ns_per_byte": 0.5}


@pytest.mark.parametrize("fresh, largest, charged", [
    (32 << 20, 32 << 20, True),      # at the threshold: mapped anew
    (48 << 20, 40 << 20, True),      # two outputs, the largest above: both charged
    ((32 << 20) - 64, (32 << 20) - 64, False),  # just below: reused by the allocator
    (0, 0, False),                   # into a buffer, in place, a view
])
def test_fresh_outputs_the_machine_maps_anew_are_charged_their_first_touch(fresh, largest,
                                                                          charged):
    rows = [dict(node("add", "torch.add", vector=8e6, read=64e6, written=32e6),
                 fresh_out_bytes=fresh, fresh_out_largest=largest)]
    samples = np.full((9, 1), 40_000_000)
    row = roofline(toy_profile(rows, samples, peaks=TOUCH)).iloc[0]
    touch = fresh * 0.5 if charged else 0.0
    assert row["first_touch_ns"] == pytest.approx(touch)
    assert row["roof_ns"] == pytest.approx(96e6 / 1e10 * 1e9 + touch)
    assert row["bound"] == "memory" and row["bytes"] == 96e6  # bytes stay a lower bound
    assert row["efficiency"] == pytest.approx(row["roof_ns"] / 40e6)
    assert row["attainable_flops_per_s"] == pytest.approx(8e6 / row["roof_ns"] * 1e9)
    without = roofline(toy_profile(rows, samples, peaks=PEAKS)).iloc[0]  # older peaks
    assert without["first_touch_ns"] == 0 and without["roof_ns"] == pytest.approx(9.6e6)


@given(faults=st.integers(0, 40_000), per_page=st.sampled_from([1.0, 2.0]),
       fresh=st.lists(st.integers(0, 64 << 20), min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_a_profile_with_a_fault_count_is_charged_the_pages_its_runs_faulted(faults, per_page,
                                                                            fresh):
    """Whatever the sizes (below glibc's threshold too): the faults per run, over the faults
    a first touch takes per page, in pages, shared by fresh bytes, each node at most its
    fresh outputs, at the measured ns per byte."""
    rows = [dict(node(f"n{i}", "torch.add", vector=8, read=64, written=max(size, 1)),
                 fresh_out_bytes=size, fresh_out_largest=size) for i, size in enumerate(fresh)]
    samples = np.full((9, len(rows)), 40_000_000)
    profile = toy_profile(rows, samples, peaks={**TOUCH, "first_touch_faults_per_page":
                                                per_page})
    profile.meta.update(faults_per_run=faults, page_bytes=4096)
    frame = roofline(profile)
    total = sum(fresh)
    for size, touch in zip(fresh, frame["first_touch_ns"]):
        share = faults / per_page * 4096 * size / total if total else 0.0
        assert touch == pytest.approx(min(share, size) * 0.5)
    del profile.meta["faults_per_run"]  # an older profile: the threshold rule
    assert roofline(profile)["first_touch_ns"].tolist() == pytest.approx(
        [size * 0.5 if size >= 32 << 20 else 0.0 for size in fresh])


def test_first_touch_sums_per_module_and_is_named_in_the_header():
    rows = [dict(node("a", "torch.add", vector=8e6, read=64e6, written=32e6, path="m"),
                 fresh_out_bytes=32 << 20, fresh_out_largest=32 << 20),
            dict(node("b", "torch.relu", vector=8e6, read=32e6, written=32e6, path="m"),
                 fresh_out_bytes=0, fresh_out_largest=0)]
    profile = toy_profile(rows, np.full((9, 2), 40_000_000), peaks=TOUCH)
    nodes, modules = profile_roofline(profile), profile_roofline(profile, group_by="module")
    assert modules["first_touch_ns"].tolist() == [pytest.approx(nodes["first_touch_ns"].sum())]
    assert modules["roof_ns"].tolist() == [pytest.approx(nodes["roof_ns"].sum())]
    assert ("first touch of fresh outputs 0.5 ns/byte (every call from 33.6 MB)"
            in nodes.attrs["header"])


def test_backward_rows_are_not_charged_a_first_touch():
    rows = [dict(node("add", "torch.add", vector=8e6, read=64e6, written=32e6),
                 fresh_out_bytes=32 << 20, fresh_out_largest=32 << 20)]
    nodes = toy_profile(rows, np.full((3, 1), 1000), peaks=TOUCH).nodes
    profile = pyfxprof.Profile(nodes, np.full((3, 1), 1000), np.full(3, 1000),
                               {"machine_peaks": TOUCH}, backward_samples=np.full((3, 1), 10))
    frame = roofline(profile).set_index("name")
    assert frame.loc["add", "first_touch_ns"] > 0
    assert frame.loc["add (backward)", "first_touch_ns"] == 0
