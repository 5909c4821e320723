"""Tests for pyfxprof.views.replay_text: a ReplayResult's text and HTML name each figure, verdict,
recorded shape and the in-place note."""

from pyfxprof.data.replay_result import ReplayResult, ShapeRow, VariantRow
from pyfxprof.views.replay_text import replay_html, replay_table


def test_variant_rows_show_change_interval_verdict_error_and_failures():
    rows = (VariantRow("bf16", 500.0, -0.5, -0.55, -0.45, 0.001, "-", 0.2, 0.07, True),
            VariantRow("channels_last", 990.0, -0.01, -0.015, 0.012, 0.4, "=", 1e-7, 1e-8),
            VariantRow("fp16", error="RuntimeError: not implemented for 'Half'"))
    result = ReplayResult("conv", "call_module", "conv", "([1, 3, 8, 8] float32)",
                          warm_ns=1000.0, in_graph_ns=1500.0, variants=rows)
    text = replay_table(result)
    assert "in graph / warm 1.50x" in text and "matches" not in text
    bf16, channels_last, fp16 = text.splitlines()[-3:]
    assert "-50.0% [-55.0%, -45.0%]" in bf16 and "faster" in bf16 and "BEYOND" in bf16
    assert "same" in channels_last and "BEYOND" not in channels_last
    assert "could not run: RuntimeError: not implemented for 'Half'" in fp16
    page = replay_html(result)
    assert "&#x27;Half&#x27;" in page and 'colspan="6"' in page  # the failure spans the figures
    assert page.count("<tr>") == (1 + 2) + (1 + 3)  # times: head, in graph, warm; variants
    assert '<span class="faster">faster</span>' in page and "beyond tolerance" in page


def test_the_match_is_said_only_within_the_band():
    near = ReplayResult("bn1", "call_module", "bn1", "", warm_ns=20.0, cold_ns=40.0,
                        in_graph_ns=44.0)
    far = ReplayResult("bn1", "call_module", "bn1", "", warm_ns=20.0, cold_ns=40.0,
                       in_graph_ns=80.0)
    assert "matches cold: in the graph this node costs what it costs cold" in replay_table(near)
    assert "nearest cold, yet in the graph it costs 2.00x that" in replay_table(far)


def test_shapes_and_the_in_place_note_are_shown_in_text_and_html():
    shapes = (ShapeRow("([2, 16] float32)", ("fc",), 900.0, in_graph_ns=1000.0),
              ShapeRow("([4, 16] float32)", ("fc_1", "fc_2"), 1800.0, in_graph_ns=1800.0))
    result = ReplayResult("fc", "call_module", "fc", "([2, 16] float32)", warm_ns=900.0,
                          in_graph_ns=1000.0, shapes=shapes, fresh_inputs=True,
                          variants=(VariantRow("bf16", 500.0, -0.5, -0.55, -0.45, 0.001, "-"),))
    text = replay_table(result)
    assert "2 recorded shapes (a replay each):" in text and "in place:" in text
    assert "[fc_1, fc_2]  in graph 1.80 µs, warm 1.80 µs  in graph / alone 1.00x" in text
    assert "as-is replay of the first shape" in text
    page = replay_html(result)
    assert "<td>fc_1, fc_2</td>" in page and "in place:" in page and "first shape" in page
    plain = replay_table(ReplayResult("fc", "call_module", "fc", "", warm_ns=1.0))
    assert "recorded shapes" not in plain and "in place" not in plain
