import re

import numpy as np
import pandas as pd

from pyfxprof.views import report, report_render
from pyfxprof.data.profile import Profile

# conv1 [2.0, 2.1, 1.9, 2.0] ms: median 2.00 ms, IQR 2.025 - 1.975 = 50 µs, total 8 ms
# relu  [400, 600, 500, 900] µs: median 550 µs, mean 600 µs, IQR 675 - 475 = 200 µs (36%)
# add   1 µs every run. Grand total 10.404 ms -> 76.9%, 23.1%, 0.0%.
# Run totals (+1 µs unattributed): 2.402, 2.702, 2.402, 2.902 ms -> median 2.552, IQR 0.35 ms.
SAMPLES = np.array([[2_000_000, 400_000, 1000], [2_100_000, 600_000, 1000],
                    [1_900_000, 500_000, 1000], [2_000_000, 900_000, 1000]], dtype=np.int64)
META = {"model": "toynet", "device": "cpu", "runs": 4, "warmup": 2, "mode": "codegen",
        "capture_mode": "fx", "overhead_ns": 52.4, "coverage": 0.9912, "dropped_records": 0,
        "clock": {"name": "tsc", "resolution_ns": 1, "read_cost_ns": 18, "tsc_hz": 2.0e9},
        "versions": {"torch": "2.5.1", "python": "3.12.3"}, "cpu": "Xeon", "threads": 2,
        "timestamp": "2025-01-02T03:04:05"}


def make_nodes():
    return pd.DataFrame({
        "index": [0, 1, 2],
        "name": ["conv1", "relu", "add_residual_connection_of_the_final_bottleneck_block"],
        "op": ["call_module", "call_function", "call_function"],
        "target": ["conv1", "torch.nn.functional.relu", "<built-in function add>"],
        "module_path": ["conv1", "", "layer4.1.downsample.0.inner_residual_projection"],
        "module_type": ["Conv2d", "Net", "Bottleneck"],
        "module_stack": [("conv1",), (), ("layer4", "layer4.1")],
    })


def make_profile(meta=META, device_samples=None):
    return Profile(make_nodes(), SAMPLES, SAMPLES.sum(axis=1) + 1000, meta, device_samples)


def table_rows(text):
    """Cells of each table row (after the dashes line, up to the next blank line)."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line and set(line) <= {"-", " "}) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return [re.split(r" {2,}", line.strip()) for line in lines[start:end]]


HEADER = """\
pyfxprof — toynet on cpu · 4 runs (2 warmup) · mode codegen · capture fx · model ?, ?
total: 2.55 ms median ± 350 µs IQR · 3 nodes · coverage 99.1%
overhead: 52 ns/node, subtracted · clock tsc (resolution 1 ns) · dropped records: 0
cpu Xeon · threads 2 · versions torch 2.5.1, python 3.12.3 · at 2025-01-02T03:04:05
a row: the node's call where it runs in the model · its Python call, dispatch and kernel · its output's allocation and page faults · the cache misses the nodes before it left
a row is not the node alone: after a large node · a small one can cost several times less alone · removing it can save less than its row · prof.replay(node) or `pyfxprof replay` times it alone beside its row · docs/accuracy.md
latency: p50 2.55 ms · p90 2.84 ms · p99 2.90 ms [2.70 ms–unbounded] · max 2.90 ms
rows: by median per run, descending
"""

GOLDEN_NODES = HEADER + """
#  Node                              Op type        Op                        Module                             Median     Mean      IQR  Total %   Cum %
-  --------------------------------  -------------  ------------------------  --------------------------------  -------  -------  -------  -------  ------
0  conv1                             call_module    Conv2d                    conv1                             2.00 ms  2.00 ms  50.0 µs    76.9%   76.9%
1  relu                              call_function  torch.nn.functional.relu  (root)                             550 µs   600 µs   200 µs    23.1%  100.0%
2  add_residual_connection_of_the_…  call_function  <built-in function add>   …ple.0.inner_residual_projection  1.00 µs  1.00 µs     0 ns     0.0%  100.0%

noisy (IQR/median > 10%): 1 of 3 nodes shown — relu 36% — consider more runs or pinning threads"""

GOLDEN_GROUPS = HEADER + """
Module type  Nodes   Median     Mean      IQR  Total %   Cum %
-----------  -----  -------  -------  -------  -------  ------
Conv2d           1  2.00 ms  2.00 ms  50.0 µs    76.9%   76.9%
Net              1   550 µs   600 µs   200 µs    23.1%  100.0%
Bottleneck       1  1.00 µs  1.00 µs     0 ns     0.0%  100.0%

noisy (IQR/median > 10%): 1 of 3 groups shown — Net 36% — consider more runs or pinning threads"""


def test_golden_node_table():
    assert make_profile().table() == GOLDEN_NODES


def test_golden_group_table():
    assert make_profile().table(group_by="module_type") == GOLDEN_GROUPS


def test_output_is_deterministic():
    assert make_profile().table(sort_by="name") == make_profile().table(sort_by="name")


def test_no_trailing_whitespace():
    text = make_profile().table(columns=["name", "module_path"])
    assert all(line == line.rstrip() for line in text.splitlines())


def test_long_cells_truncated_with_ellipsis():
    text = make_profile().table()
    assert "add_residual_connection_of_the_…" in text  # names keep their head
    assert "…ple.0.inner_residual_projection" in text  # module paths keep their tail
    assert "bottleneck_block" not in text


def test_a_glue_rows_label_keeps_its_head():
    from tests.outside_profiles import outside_profile
    text = outside_profile().table(columns=["name", "target"])
    assert "Python outside the graph (modul…" in text  # prose reads from its start
    long_path = "transformers/integrations/heterogeneity/configuration_utils.py:291"
    prof = outside_profile()
    functions = [dict(function) for function in prof.meta["call"]["functions"]]  # not the
    functions[0]["file_line"] = long_path  # shared test data's dicts
    prof.meta["call"]["functions"] = functions
    assert "…y/configuration_utils.py:291 ×1 " in prof.table()  # a path keeps its tail


def test_noisy_warning_only_for_shown_rows():
    text = make_profile().table(sort_by="total", top=1)
    assert "noisy" not in text
    assert text.endswith("… 2 more nodes not shown (top=1)")


def test_module_stack_and_count_columns():
    text = make_profile().table(sort_by="order", columns=["name", "module_stack", "count"])
    assert table_rows(text) == [["conv1", "conv1", "4"], ["relu", "(root)", "4"],
                                ["add_residual_connection_of_the_…", "layer4 > layer4.1", "4"]]
    assert "Module stack" in text and "Runs" in text


def test_device_columns_have_device_titles():
    prof = make_profile(device_samples=SAMPLES // 2)
    text = prof.table(sort_by="order", columns=["name", "device_median", "device_pct_total"])
    assert "Device median  Device total %" in text
    assert table_rows(text)[0] == ["conv1", "1.00 ms", "76.9%"]


def test_empty_profile_renders_titles_only():
    nodes = make_nodes().iloc[:0]
    prof = Profile(nodes, np.zeros((2, 0), np.int64), np.array([5, 7]), {})
    lines = prof.table().splitlines()
    assert lines[1] == "total: 6 ns median ± 1 ns IQR · 0 nodes · coverage ?"
    assert lines[-2].startswith("#  Node  Op type  Op  Module  Median")
    assert set(lines[-1]) == {"-", " "}


def test_profile_without_runs_shows_dashes():
    prof = Profile(make_nodes(), np.zeros((0, 3), np.int64), np.zeros(0, np.int64), {})
    text = prof.table(sort_by="order", columns=["name", "median", "pct_total"])
    assert table_rows(text) == [["conv1", "-", "0.0%"], ["relu", "-", "0.0%"],
                                ["add_residual_connection_of_the_…", "-", "0.0%"]]
    assert "total: - median ± - IQR" in text


def test_html_has_table_escaped_cells_and_notes():
    page = make_profile()._repr_html_()
    assert "<table>" in page and "</table>" in page
    assert page.count("<th ") == len(report.NODE_DEFAULT_COLUMNS)
    assert page.count("<tr>") == 1 + 3
    assert "&lt;built-in function add&gt;" in page
    assert "<built-in" not in page
    assert "52 ns/node, subtracted" in page
    assert "1 of 3 nodes shown — relu 36%" in page
    style = page[page.index("<style>"):page.index("</style>")]  # self-contained CSS
    assert ".pyfxprof th,.pyfxprof td{padding:" in style


def test_html_and_text_show_the_same_cells():
    view = report.build_view(make_profile(), sort_by="order", columns=["name", "median"])
    text = report_render.render_text(view)
    page = report_render.render_html(view)
    assert table_rows(text) == view.rows
    for name, median in view.rows:
        assert (f'<td style="text-align:left">{name}</td>'
                f'<td style="text-align:right">{median}</td>') in page
    assert view.titles == ["Node", "Median"]
    assert view.right_aligned == [False, True]


def test_extra_columns_formatting():
    nodes = make_nodes()
    nodes["gflops"] = [1.5, float("nan"), 0.25]
    nodes["input_shapes"] = [[(1, 3, 8, 8)], [(1, 8, 8, 8)], None]
    prof = Profile(nodes, SAMPLES, SAMPLES.sum(axis=1), {})
    text = prof.table(sort_by="order", columns=["index", "gflops", "input_shapes"])
    assert table_rows(text) == [["0", "1.5", "[(1, 3, 8, 8)]"], ["1", "-", "[(1, 8, 8, 8)]"],
                                ["2", "0.25", "-"]]


def test_html_repr_is_cut_to_html_top_rows():
    n = report.HTML_TOP + 10
    nodes = pd.DataFrame({
        "index": range(n), "name": [f"n{i}" for i in range(n)], "op": ["call_function"] * n,
        "target": ["add"] * n, "module_path": [""] * n, "module_type": ["M"] * n,
        "module_stack": [()] * n,
    })
    samples = np.arange(1, n + 1, dtype=np.int64)[None, :]
    page = Profile(nodes, samples, samples.sum(axis=1), {})._repr_html_()
    assert page.count("<tr>") == 1 + report.HTML_TOP
    assert f"… 10 more nodes not shown (top={report.HTML_TOP})" in page


def noisy_profile(n=30):
    rng = np.random.default_rng(0)
    samples = rng.integers(1000, 3000, size=(6, n))
    nodes = pd.DataFrame({
        "index": range(n), "name": [f"n{i}" for i in range(n)], "op": "call_function",
        "target": "f", "module_path": "", "module_type": "M", "module_stack": [()] * n})
    return Profile(nodes, samples, samples.sum(axis=1), {})


def test_noisy_rows_collapse_to_one_line_naming_the_noisiest():
    text = noisy_profile().table(width=None)
    notes = [line for line in text.splitlines() if "noisy" in line]
    assert len(notes) == 1
    assert notes[0].startswith("noisy (IQR/median > 10%): 30 of 30 nodes shown — ")
    assert notes[0].count("%,") == report.NOISY_NAMES and "+26 more" in notes[0]


def test_call_module_rows_show_their_module_type_as_op():
    rows = table_rows(make_profile().table(sort_by="order", columns=["name", "target",
                                                                     "module_path"]))
    assert rows[0] == ["conv1", "Conv2d", "conv1"]  # not "conv1" twice
    assert rows[1] == ["relu", "torch.nn.functional.relu", "(root)"]


def test_table_fits_the_width_dropping_least_useful_columns_first():
    full = make_profile().table(width=None)
    assert max(map(len, full.splitlines())) > 140
    text = make_profile().table(width=80)
    assert max(map(len, text.splitlines())) <= 80
    titles = text.splitlines()[text.splitlines().index("") + 1]
    assert "Op type" not in titles and "Module" not in titles  # dropped first
    assert titles.split()[:3] == ["#", "Node", "Op"] and "Total %" in titles
    assert "columns not shown to fit 80 characters: Op type, Module" in " ".join(
        text.splitlines())
    narrow = make_profile().table(width=40)
    assert max(len(line) for line in narrow.splitlines()
               if not line.startswith(("  versions", "cpu"))) <= 40


def test_width_auto_is_the_terminal_only_when_printing_to_one(monkeypatch):
    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr("shutil.get_terminal_size", lambda: __import__("os").terminal_size(
        (72, 24)))
    assert report_render.terminal_width(Terminal()) == 72
    monkeypatch.setattr("sys.stdout", Terminal())
    assert max(map(len, make_profile().table().splitlines())) <= 72


def preempted_profile():
    """Ten runs of logits (100 µs) and layer_norm (10 µs); in run 3 the thread was preempted
    and layer_norm took 2 ms, so its total (2.09 ms) beats logits' (1 ms)."""
    nodes = pd.DataFrame({
        "index": [0, 1], "name": ["layer_norm", "logits"], "op": ["call_module"] * 2,
        "target": ["ln", "lm_head"], "module_path": ["ln", "lm_head"],
        "module_type": ["LayerNorm", "Linear"], "module_stack": [("ln",), ("lm_head",)]})
    samples = np.array([[10_000, 100_000]] * 10, dtype=np.int64)
    samples[3, 0] = 2_000_000
    noise = np.array([[0, 0, 110_000, 110_000]] * 10, dtype=np.int64)
    noise[3] = [5, 0, 110_000, 2_110_000]  # 2 ms off the CPU: preempted
    return Profile(nodes, samples, samples.sum(axis=1), {"model": "gpt2"}, run_noise=noise)


def test_default_order_is_not_led_by_a_preempted_run():
    prof = preempted_profile()
    assert prof.noise()["preempted"].sum() == 1
    assert prof.to_dataframe().sort_values("total")["name"].iloc[-1] == "layer_norm"
    text = prof.table()
    assert [row[1] for row in table_rows(text)] == ["logits", "layer_norm"]
    assert "rows: by median per run, descending" in text.splitlines()
    assert [row[1] for row in table_rows(prof.table(sort_by="total"))][0] == "layer_norm"
    assert "rows: by total over all runs" in prof.table(sort_by="total")
    page = prof._repr_html_()  # the notebook view
    assert page.index(">logits<") < page.index(">layer_norm<")
    assert "rows: by median" in page


def test_header_counts_the_models_nodes_not_the_time_between_graphs():
    nodes = make_nodes()
    nodes.loc[2, ["name", "op", "target"]] = ["(between graphs)", "between_graphs", "Python"]
    prof = Profile(nodes, SAMPLES, SAMPLES.sum(axis=1) + 1000, META)
    header = prof.table().splitlines()[1]
    assert " · 2 nodes · " in header
    assert "(between graphs)" in prof.table(sort_by="order")  # still a row of the table


def test_sort_keys_default_columns_and_drop_order_come_from_the_statistics():
    """One definition: a statistic's sort words, default column and narrow-table drop are
    fields of stats/node_statistics.py's STATISTICS; the golden tables above hold the output."""
    from pyfxprof.stats.node_statistics import STATISTICS
    by_name = {s.name: s for s in STATISTICS}
    statistics = [key for key in report.SORT_KEYS if key in by_name]
    assert statistics == [s.name for s in STATISTICS if s.sort]
    assert report.SORT_KEYS[len(statistics):] == ("name", "order")
    assert all(report._sort_text(key) == by_name[key].sort for key in statistics)
    assert by_name[report.DEFAULT_SORT].shown and report.SHOWN_STATISTICS[0] == report.DEFAULT_SORT
    assert set(report.SHOWN_STATISTICS) == {s.name for s in STATISTICS if s.shown}
    for columns in (report.NODE_DEFAULT_COLUMNS, report.GROUP_DEFAULT_COLUMNS):
        assert [c for c in columns if c in by_name] == list(report.SHOWN_STATISTICS)
    dropped = [c for c in report.DROP_ORDER if c in by_name]
    assert dropped == [s.name for s in reversed(STATISTICS) if s.droppable]
    assert all(by_name[name].shown for name in dropped)


def _with_alone(profile: Profile, alone_ns: dict, notes: dict | None = None) -> Profile:
    """`profile` with the nodes timed alone (run/alone.py's columns and meta) as given."""
    nodes = profile.nodes.copy()
    names = nodes["name"].tolist()
    nodes["alone_ns"] = [alone_ns.get(n, np.nan) for n in names]
    nodes["alone_low_ns"] = nodes["alone_ns"] * 0.9
    nodes["alone_high_ns"] = nodes["alone_ns"] * 1.1
    nodes["alone_note"] = [(notes or {}).get(n, "warm replay, 9 blocks of 5 calls"
                                             if n in alone_ns else "") for n in names]
    meta = dict(profile.meta, alone={"rows": "top", "cache": "warm", "timed": len(alone_ns),
                                     "chosen": len(alone_ns), "budget_s": 0.1, "spent_s": 0.05})
    return Profile(nodes, profile.samples, profile.run_totals, meta)


def test_alone_sits_beside_the_median_with_the_ratio_and_blank_rows_say_why():
    from tests.outside_profiles import outside_profile
    prof = _with_alone(outside_profile(), {"mm": 200.0},
                       {"relu": "not timed: the alone step's budget (1 ms) left too little"})
    view = report.build_view(prof)
    titles = view.titles
    assert titles[titles.index("Median") + 1:titles.index("Median") + 3] == ["Alone",
                                                                             "Row/alone"]
    cells = {row[titles.index("Node")]: row for row in view.rows}
    median = prof.to_dataframe().set_index("name").loc["mm", "median"]
    assert cells["mm"][titles.index("Alone")] == "200 ns"
    assert cells["mm"][titles.index("Row/alone")] == f"{median / 200:.2f}x"
    assert cells["relu"][titles.index("Alone")] == "-"
    note = next(n for n in view.notes if n.startswith("Alone blank"))
    assert note.startswith("Alone blank for 2 of 3 rows: 1 not a node's call, 1 over the "
                           "alone step's budget"), note
    assert any(line.startswith("Alone: the node replayed alone") for line in view.header)
    assert not [n for n in view.notes if n.startswith("Alone unresolved")]
    unresolved = prof.nodes.assign(alone_high_ns=np.where(prof.nodes["name"] == "mm", np.inf,
                                                          prof.nodes["alone_high_ns"]))
    notes = report.build_view(Profile(unresolved, prof.samples, prof.run_totals,
                                      prof.meta)).notes
    assert any(n.startswith("Alone unresolved for mm: too few blocks") for n in notes), notes


def test_without_alone_figures_the_table_has_no_alone_columns():
    from tests.outside_profiles import outside_profile
    for prof in (outside_profile(), _with_alone(outside_profile(), {})):
        view = report.build_view(prof)
        assert "Alone" not in view.titles and not [n for n in view.notes if "Alone" in n]
    header = report.build_view(_with_alone(outside_profile(), {})).header
    assert any(line.startswith("no node timed alone") for line in header)
