"""Tests for pyfxprof.views.replay_text: a ReplayResult's text names each figure and verdict."""

from pyfxprof.data.replay_result import ReplayResult, VariantRow
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
    assert replay_html(result).startswith("<pre>") and "&#x27;Half&#x27;" in replay_html(result)


def test_the_match_is_said_only_within_the_band():
    near = ReplayResult("bn1", "call_module", "bn1", "", warm_ns=20.0, cold_ns=40.0,
                        in_graph_ns=44.0)
    far = ReplayResult("bn1", "call_module", "bn1", "", warm_ns=20.0, cold_ns=40.0,
                       in_graph_ns=80.0)
    assert "matches cold: in the graph this node costs what it costs cold" in replay_table(near)
    assert "nearest cold, yet in the graph it costs 2.00x that" in replay_table(far)
