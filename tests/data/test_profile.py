import numpy as np
import pandas as pd
import pytest

from pyfxprof.data.profile import NODE_COLUMNS, Profile
from pyfxprof.stats.node_statistics import STAT_COLUMNS

# Per-run ns of four nodes chosen so that every sort key gives a different order:
#   alpha [10, 10, 100]  total 120  median 10  mean 40  max 100
#   delta [30, 30, 30]   total  90  median 30  mean 30  max  30
#   bravo [20, 20, 20]   total  60  median 20  mean 20  max  20
#   charlie [5, 5, 50]   total  60  median  5  mean 20  max  50  (ties bravo on total, mean)
SAMPLES = np.array([[10, 30, 20, 5], [10, 30, 20, 5], [100, 30, 20, 50]], dtype=np.int64)
NAMES = ["alpha", "delta", "bravo", "charlie"]


def make_nodes(**extra):
    nodes = pd.DataFrame({
        "index": [0, 1, 2, 3],
        "name": NAMES,
        "op": ["call_module", "call_function", "call_function", "call_method"],
        "target": ["alpha", "torch.relu", "operator.add", "view"],
        "module_path": ["alpha", "", "block", "block"],
        "module_type": ["Conv2d", "Net", "Block", "Block"],
        "module_stack": [("alpha",), (), ("block",), ("block",)],
    })
    for name, values in extra.items():
        nodes[name] = values
    return nodes


def make_profile(nodes=None, samples=SAMPLES, run_totals=None, meta=None, device_samples=None):
    nodes = make_nodes() if nodes is None else nodes
    run_totals = samples.sum(axis=1) + 7 if run_totals is None else run_totals
    meta = {"model": "toy", "device": "cpu"} if meta is None else meta
    return Profile(nodes, samples, run_totals, meta, device_samples)


def shown_names(text):
    """Values of the single shown column, between the dashes line and the next blank line."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line and set(line) <= {"-", " "}) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return [line.strip() for line in lines[start:end]]


def test_properties_and_stored_arrays():
    prof = make_profile()
    assert (prof.n_runs, prof.n_nodes) == (3, 4)
    assert prof.samples.dtype == np.int64
    assert prof.run_totals.tolist() == [72, 72, 207]
    assert prof.device_samples is None


def test_nodes_get_a_fresh_range_index():
    nodes = make_nodes().set_axis([10, 11, 12, 13])
    prof = make_profile(nodes=nodes)
    assert prof.nodes.index.tolist() == [0, 1, 2, 3]
    assert prof.stats()["name"].tolist() == NAMES


def test_smaller_integer_dtypes_become_int64():
    prof = make_profile(samples=SAMPLES.astype(np.int32), run_totals=np.array([1, 2, 3], np.uint32))
    assert prof.samples.dtype == np.int64 and prof.run_totals.dtype == np.int64


def test_meta_is_copied():
    meta = {"model": "toy"}
    prof = make_profile(meta=meta)
    meta["model"] = "changed"
    assert prof.meta == {"model": "toy"}


@pytest.mark.parametrize("kwargs, message", [
    ({"nodes": [1, 2]}, "nodes must be a pandas DataFrame"),
    ({"nodes": make_nodes().drop(columns=["module_stack", "op"])},
     r"missing columns \['op', 'module_stack'\]"),
    ({"nodes": make_nodes().assign(index=[0, 2, 1, 3])}, "0..n-1"),
    ({"nodes": make_nodes().assign(index=[0.0, 1.0, 2.0, 3.0])}, "0..n-1"),
    ({"nodes": make_nodes(total=[1, 2, 3, 4])}, r"\['total'\] clash"),
    ({"nodes": make_nodes(device_x=[1, 2, 3, 4])}, "clash"),
    ({"nodes": make_nodes(cum_pct=[1, 2, 3, 4])}, "clash"),
    ({"samples": SAMPLES[0], "run_totals": SAMPLES[0]}, "samples must be 2-D"),
    ({"samples": SAMPLES.astype(np.float64)}, "samples must hold integer ns"),
    ({"samples": SAMPLES[:, :3]}, "samples has 3 node columns but nodes has 4 rows"),
    ({"run_totals": np.array([1, 2])}, "run_totals has 2 runs but samples has 3"),
    ({"run_totals": np.ones((3, 1), np.int64)}, "run_totals must be 1-D"),
    ({"device_samples": SAMPLES[:2]}, "device_samples shape"),
    ({"device_samples": SAMPLES * 0.5}, "device_samples must hold integer"),
    ({"meta": [("model", "x")]}, "meta must be a dict"),
])
def test_validation_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_profile(**kwargs)


def test_stats_joins_identity_and_statistics():
    stats = make_profile(nodes=make_nodes(flops=[1, 2, 3, 4])).stats()
    assert list(stats.columns) == list(NODE_COLUMNS) + list(STAT_COLUMNS)
    assert stats["median"].tolist() == [10.0, 30.0, 20.0, 5.0]
    assert stats["total"].tolist() == [120.0, 90.0, 60.0, 60.0]
    assert stats["pct_total"].tolist() == pytest.approx([1200 / 33, 900 / 33, 600 / 33, 600 / 33])


def test_to_dataframe_columns_in_documented_order():
    shapes = [[(1, 3)], [(1, 3)], [(2,)], [(2,)]]
    df = make_profile(nodes=make_nodes(input_shapes=shapes, flops=[9, 0, 4, 0])).to_dataframe()
    expected = list(NODE_COLUMNS) + list(STAT_COLUMNS) + ["input_shapes", "flops"]
    assert list(df.columns) == expected
    assert df["input_shapes"].tolist() == shapes
    assert df["flops"].dtype == np.int64
    assert df["module_stack"].tolist() == [("alpha",), (), ("block",), ("block",)]
    assert df["max"].tolist() == [100.0, 30.0, 20.0, 50.0]


def test_to_dataframe_device_columns_when_device_samples_present():
    device = SAMPLES * 2
    df = make_profile(device_samples=device).to_dataframe()
    device_columns = [c for c in df.columns if c.startswith("device_")]
    assert device_columns == ["device_" + c for c in STAT_COLUMNS]
    assert df["device_median"].tolist() == [20.0, 60.0, 40.0, 10.0]
    assert df["median"].tolist() == [10.0, 30.0, 20.0, 5.0]


def test_to_dataframe_is_a_copy():
    prof = make_profile()
    df = prof.to_dataframe()
    df.loc[0, "name"] = "mutated"
    assert prof.nodes.loc[0, "name"] == "alpha"


def test_equality_with_identical_profile():
    assert make_profile() == make_profile()
    assert make_profile(device_samples=SAMPLES) == make_profile(device_samples=SAMPLES.copy())


def test_equality_tolerates_object_vs_string_dtypes():
    nodes = make_nodes()
    as_object = nodes.astype({c: object for c in ("name", "op", "target")})
    assert make_profile(nodes=as_object) == make_profile(nodes=nodes)


def test_equality_treats_nan_in_object_columns_as_equal():
    a = make_profile(nodes=make_nodes(note=pd.Series([None, 1.5, float("nan"), "x"], dtype=object)))
    b = make_profile(nodes=make_nodes(note=pd.Series([None, 1.5, float("nan"), "x"], dtype=object)))
    assert a == b


def test_equality_handles_pd_na_in_object_columns():
    a = make_profile(nodes=make_nodes(note=pd.Series([pd.NA, "y", pd.NA, "x"], dtype=object)))
    b = make_profile(nodes=make_nodes(note=pd.Series([pd.NA, "y", pd.NA, "x"], dtype=object)))
    c = make_profile(nodes=make_nodes(note=pd.Series(["z", "y", pd.NA, "x"], dtype=object)))
    assert a == b and a != c


@pytest.mark.parametrize("change", [
    {"samples": SAMPLES + np.array([[0, 0, 0, 1], [0] * 4, [0] * 4])},
    {"run_totals": np.array([1, 2, 3])},
    {"device_samples": SAMPLES},
    {"meta": {"model": "toy", "device": "cuda"}},
    {"nodes": make_nodes().assign(name=["alpha", "delta", "bravo", "charly"])},
    {"nodes": make_nodes(flops=[1, 2, 3, 4])},
    {"nodes": make_nodes().assign(module_stack=[("alpha",), (), ("block",), ("other",)])},
])
def test_inequality(change):
    assert make_profile(**change) != make_profile()


def test_numeric_dtype_difference_is_inequality():
    ints = make_profile(nodes=make_nodes(flops=[1, 2, 3, 4]))
    floats = make_profile(nodes=make_nodes(flops=[1.0, 2.0, 3.0, 4.0]))
    assert ints != floats


def test_not_equal_to_other_types_and_unhashable():
    assert make_profile() != "profile"
    with pytest.raises(TypeError):
        hash(make_profile())


@pytest.mark.parametrize("sort_by, order", [
    ("total", ["alpha", "delta", "bravo", "charlie"]),
    ("median", ["delta", "bravo", "alpha", "charlie"]),
    ("mean", ["alpha", "delta", "bravo", "charlie"]),
    ("max", ["alpha", "charlie", "delta", "bravo"]),
    ("name", ["alpha", "bravo", "charlie", "delta"]),
    ("order", ["alpha", "delta", "bravo", "charlie"]),
    (None, ["delta", "bravo", "alpha", "charlie"]),  # the default: median
])
def test_table_sort_orders(sort_by, order):
    assert shown_names(make_profile().table(sort_by=sort_by, columns=["name"])) == order


def test_table_top_keeps_first_rows_and_notes_the_rest():
    text = make_profile().table(sort_by="median", top=2, columns=["name"])
    assert shown_names(text) == ["delta", "bravo"]
    assert text.endswith("… 2 more nodes not shown (top=2)")


def test_table_top_larger_than_nodes_shows_all_without_note():
    text = make_profile().table(top=10, columns=["name"])
    assert len(shown_names(text)) == 4
    assert "not shown" not in text


def test_table_cumulative_pct_follows_display_order():
    text = make_profile().table(sort_by="median", columns=["name", "pct_total", "cum_pct"])
    rows = [line.split() for line in shown_names(text)]
    assert rows == [["delta", "27.3%", "27.3%"], ["bravo", "18.2%", "45.5%"],
                    ["alpha", "36.4%", "81.8%"], ["charlie", "18.2%", "100.0%"]]


def test_table_extra_column_shown_on_request():
    text = make_profile(nodes=make_nodes(flops=[9, 0, 4, 1])).table(
        sort_by="order", columns=["name", "flops"])
    assert [line.split() for line in shown_names(text)] == [
        ["alpha", "9"], ["delta", "0"], ["bravo", "4"], ["charlie", "1"]]


def test_table_group_by_op():
    text = make_profile().table(group_by="op", columns=["group", "nodes", "total"])
    rows = [line.split() for line in shown_names(text)]
    assert rows == [["call_function", "2", "150", "ns"], ["call_module", "1", "120", "ns"],
                    ["call_method", "1", "60", "ns"]]


def test_table_group_by_module_type_in_first_appearance_order():
    text = make_profile().table(group_by="module_type", sort_by="order", columns=["group"])
    assert shown_names(text) == ["Conv2d", "Net", "Block"]


@pytest.mark.parametrize("kwargs, message", [
    ({"sort_by": "self"}, r"sort_by must be one of \['total', 'mean', 'median'"),
    ({"group_by": "module_path"},
     r"group_by must be one of \['op', 'target', 'module_type', 'module', 'input_shape', 'source'\]"),
    ({"top": 0}, "top must be None or a positive int"),
    ({"top": 2.5}, "top must be None or a positive int"),
    ({"top": True}, "top must be None or a positive int"),
    ({"columns": ["name", "self_time"]}, r"unknown columns \['self_time'\]"),
    ({"columns": "name"}, "non-empty list"),
    ({"columns": []}, "non-empty list"),
    ({"group_by": "op", "columns": ["name"]}, r"unknown columns \['name'\]"),
])
def test_table_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_profile().table(**kwargs)


def test_repr_is_one_short_line():
    text = repr(make_profile())
    assert text == "<Profile toy on cpu: 4 nodes x 3 runs, median total 72 ns>"


def test_repr_html_has_a_table():
    assert "<table>" in make_profile()._repr_html_()
