import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pyfxprof.views.flamegraph import WIDTH, export_flamegraph, flamegraph_svg
from pyfxprof.views.stacks import export_stacks, folded_stacks
from pyfxprof.data.profile import Profile
from tests.toy_profiles import toy_nodes

SVG = "{http://www.w3.org/2000/svg}"
# Four runs; per node:   conv1        l1.0.conv1     l1.0.relu    add
#   runs                 1000,1200,   2000,2100,     300,301,     40,41,
#                        900,1100     5000,2000      299,300      40,40
#   median               1050         2050           300          40
#   mean                 1050         2775           300          40.25 -> 40
#   total                4200         11100          1200         161
#   min / max            900 / 1200   2000 / 5000    299 / 301    40 / 41
SAMPLES = np.array([[1000, 2000, 300, 40], [1200, 2100, 301, 41],
                    [900, 5000, 299, 40], [1100, 2000, 300, 40]], dtype=np.int64)
# call_module nodes are their module's frame: no duplicated leaf (root;conv1;conv1)
STACKS = ["root;conv1", "root;layer1;layer1.0;layer1.0.conv1",
          "root;layer1;layer1.0;layer1.0.relu", "root;add"]
MODULES = ["conv1", "layer1", "layer1.0", "layer1.0.conv1", "layer1.0.relu"]
NODES = ["conv1", "layer1_0_conv1", "layer1_0_relu", "add"]


def make_profile(samples=SAMPLES, names=NODES, model="toy <net> & co"):
    nodes = toy_nodes(names)
    return Profile(nodes, samples, samples.sum(axis=1), {"model": model})


@pytest.mark.parametrize("metric, weights", [
    ("median", [1050, 2050, 300, 40]),
    ("mean", [1050, 2775, 300, 40]),
    ("total", [4200, 11100, 1200, 161]),
    ("min", [900, 2000, 299, 40]),
    ("max", [1200, 5000, 301, 41]),
])
def test_folded_lines_hand_computed(tmp_path, metric, weights):
    path = tmp_path / "stacks.txt"
    export_stacks(make_profile(), path, metric=metric)
    expected = [f"{stack} {weight}" for stack, weight in zip(STACKS, weights)]
    assert path.read_text().splitlines() == expected
    assert path.read_text().endswith("\n")


def test_profile_method_and_default_metric(tmp_path):
    make_profile().export_stacks(tmp_path / "s.txt")
    assert tmp_path.joinpath("s.txt").read_text().splitlines()[0] == "root;conv1 1050"


def test_separators_in_names_are_replaced():
    nodes = toy_nodes(["a;b", "c\nd", "e f", "g"])
    nodes["op"] = "call_function"  # names show only for nodes that are not module calls
    lines = folded_stacks(Profile(nodes, SAMPLES, SAMPLES.sum(axis=1)))
    assert lines[0] == "root;conv1;a:b 1050"
    assert lines[1].endswith(";c d 2050")
    assert lines[2].endswith(";e f 300")  # spaces are fine: the weight follows the last one


def test_a_module_frame_that_is_not_its_node_keeps_the_node_name():
    nodes = toy_nodes()
    nodes.loc[1, "module_path"] = "layer1.0"  # e.g. a function called inside layer1.0
    nodes.loc[1, "op"] = "call_function"
    nodes.at[1, "module_stack"] = ("layer1", "layer1.0")
    assert folded_stacks(make_profile().__class__(nodes, SAMPLES, SAMPLES.sum(axis=1)))[1] == (
        "root;layer1;layer1.0;layer1_0_conv1 2050")


def test_bad_metric():
    with pytest.raises(ValueError, match=r"metric must be one of \['median', 'mean'"):
        folded_stacks(make_profile(), metric="p99")


def test_no_runs_gives_zero_weights():
    empty = make_profile(samples=np.zeros((0, 4), np.int64))
    assert [line.split()[-1] for line in folded_stacks(empty)] == ["0"] * 4
    ET.fromstring(flamegraph_svg(empty))


def frame_name(title):
    """The frame path of a tooltip "path (type): time, pct" or "path: time, pct"."""
    return re.split(r" \(|: ", title)[0]


def frames(svg_text):
    """(title, rect attributes, label text or None) per frame group."""
    root = ET.fromstring(svg_text)
    out = []
    for group in root.iter(f"{SVG}g"):
        if group.get("class") != "frame":
            continue
        text = group.find(f"{SVG}text")
        out.append((group.find(f"{SVG}title").text, group.find(f"{SVG}rect").attrib,
                    None if text is None else text.text))
    return root, out


def test_svg_is_well_formed_and_holds_every_frame(tmp_path):
    path = tmp_path / "flame.svg"
    export_flamegraph(make_profile(), path)
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    _, found = frames(path.read_text())
    names = [frame_name(title) for title, _, _ in found]
    assert sorted(names) == sorted(["root"] + MODULES + ["operator.add"])  # module calls too
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "toy <net> & co" in texts


def test_svg_widths_follow_inclusive_weight():
    _, found = frames(flamegraph_svg(make_profile()))
    by_name = {frame_name(title): (title, attrib) for title, attrib, _ in found}
    width = {name: float(attrib["width"]) for name, (_, attrib) in by_name.items()}
    total = 1050 + 2050 + 300 + 40
    assert width["root"] == pytest.approx(WIDTH - 20)
    assert width["layer1"] == pytest.approx((WIDTH - 20) * 2350 / total, abs=0.01)
    assert width["layer1.0"] == width["layer1"]
    assert by_name["layer1"][0] == "layer1: 2.35 µs, 68.31%"
    assert by_name["layer1.0.conv1"][0].startswith("layer1.0.conv1 (Conv2d): ")
    x = {name: float(attrib["x"]) for name, (_, attrib) in by_name.items()}
    assert x["conv1"] < x["layer1"] < x["operator.add"]  # execution order, left to right


def in_module(path, target, samples=SAMPLES):
    """The toy profile with its last node (a function) moved into module ``path``."""
    nodes = toy_nodes()
    nodes.loc[3, ["module_path", "target"]] = [path, target]
    nodes.at[3, "module_stack"] = (path,)
    return Profile(nodes, samples, samples.sum(axis=1), {"model": "toy"})


def test_labels_cut_to_fit():
    long = "a_very_long_module_name_that_cannot_fit_in_a_narrow_frame"
    _, found = frames(flamegraph_svg(in_module(long, "torch.addmm")))
    title, attrib, label = next(f for f in found if f[0].startswith(f"{long} · "))
    assert float(attrib["width"]) < 20 and label is None
    _, found = frames(flamegraph_svg(in_module(long, "torch.addmm",
                                               np.array([[1000, 1000, 1000, 1000]]))))
    label = next(f[2] for f in found if f[0].startswith(f"{long} · "))
    assert label.endswith("..") and long.startswith(label[:-2]) and len(label) < len(long)


def test_leaf_frames_name_module_and_op_and_search_reads_both():
    wide = np.array([[1000, 1000, 1000, 100_000]], dtype=np.int64)
    root, found = frames(flamegraph_svg(in_module("h.0.mlp.c_fc", "torch.addmm", wide)))
    leaf = next(f for f in found if f[0].startswith("h.0.mlp.c_fc · "))
    assert leaf[2] == "c_fc · addmm"                               # not the FX variable
    assert leaf[0].startswith("h.0.mlp.c_fc · torch.addmm (node add): ")
    search = {g.get("data-name"): g.get("data-search") for g in root.iter(f"{SVG}g")
              if g.get("class") == "frame"}
    assert search["add"] == "h.0.mlp.c_fc torch.addmm"
    assert search["layer1.0.conv1"] == "layer1.0.conv1 Conv2d"    # "conv" finds module calls
    script = root.find(f"{SVG}script").text
    assert 'new RegExp(term, "i")' in script and "Invalid regular expression" in script


def test_custom_title_and_method(tmp_path):
    make_profile().export_flamegraph(tmp_path / "f.svg", metric="total", title="ResNet-18")
    root = ET.parse(tmp_path / "f.svg").getroot()
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts[0] == "ResNet-18" and texts[1].startswith("total per node")


def test_height_fits_the_tree_and_the_top_row_is_not_a_copy_of_its_parents():
    root, found = frames(flamegraph_svg(make_profile()))
    rows = sorted({float(attrib["y"]) for _, attrib, _ in found})
    assert len(rows) == 4  # root, layer1, layer1.0, its convs: no row of repeated node names
    top = [frame_name(title) for title, attrib, _ in found if float(attrib["y"]) == rows[0]]
    assert sorted(top) == ["layer1.0.conv1", "layer1.0.relu"]
    assert float(root.get("height")) == 56 + 4 * 18 + 22


def test_svg_carries_zoom_and_search():
    root, found = frames(flamegraph_svg(make_profile()))
    script = root.find(f"{SVG}script").text
    assert "function zoom" in script and "function search" in script
    parts = {element.get("data-part") for element in root.iter() if element.get("data-part")}
    assert parts == {"reset", "search", "details", "matched"}  # no ids: several fit in a page
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "frame"]
    layer1 = next(g for g in groups if g.get("data-name") == "layer1")
    assert (layer1.get("data-x"), layer1.get("data-w"), layer1.get("data-d")) == (
        "1050", "2350", "1")


def test_frames_show_the_last_part_of_module_paths_and_tooltips_the_whole_path():
    wide = np.array([[1000, 100_000, 100_000, 40]], dtype=np.int64)
    _, found = frames(flamegraph_svg(make_profile(samples=wide)))
    labels = {frame_name(title): label for title, _, label in found}
    assert labels["layer1.0.conv1"] == "conv1"
    assert labels["layer1.0.relu"] == "relu"
    assert labels["layer1.0"] == "layer1.0"


def test_container_children_are_labelled_with_their_type():
    nodes = toy_nodes()
    nodes["module_path"] = ["0", "1.0", "1.1", ""]
    nodes["module_stack"] = [("0",), ("1", "1.0"), ("1", "1.1"), ()]
    _, found = frames(flamegraph_svg(Profile(nodes, SAMPLES * 100, SAMPLES.sum(axis=1) * 100)))
    labels = {frame_name(title): label for title, _, label in found}
    assert labels["0"] == "0 Conv2d" and labels["1.0"] == "1.0"


def test_the_outside_row_has_a_frame_per_python_function_summing_to_it():
    from tests.outside_profiles import outside_profile
    lines = folded_stacks(outside_profile())
    outside = [line for line in lines if line.startswith("root;(Python outside the graph)")]
    assert outside == ["root;(Python outside the graph);Net.forward [model] ×1 1800",
                       "root;(Python outside the graph);Module._call_impl [torch] ×4 900",
                       "root;(Python outside the graph);torch._C._get_tracing_state "
                       "[torch (C)] ×4 300"]
    assert "Module._call_impl [torch] ×4" in flamegraph_svg(outside_profile())
