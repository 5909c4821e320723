"""Tests of the export registry (pyfxprof.views.exporters): Profile.export picks the format
from the suffix or by name, the CLI flags and docs/outputs.md's table are the registry."""

import argparse
import json

import numpy as np
import pytest

from pyfxprof.cli.commands import report
from pyfxprof.errors import PyfxprofError
from pyfxprof.views import exporters
from tests.docs_tables import table_after
from pyfxprof.data.profile import Profile
from tests.toy_profiles import toy_nodes

SAMPLES = np.array([[400, 300, 20, 10], [500, 310, 25, 12], [450, 290, 30, 11]])


def toy_profile() -> Profile:
    return Profile(toy_nodes(), SAMPLES, SAMPLES.sum(axis=1) + 5, {"model": "toy"})


def test_suffix_picks_the_longest_match_and_each_suffix_has_one_format():
    assert exporters.format_for_path("a/run.speedscope.json").name == "speedscope"
    assert exporters.format_for_path("TRACE.JSON.GZ").name == "chrome_trace"
    assert exporters.format_for_path("flame.svg").name == "flamegraph"
    suffixes = [s for f in exporters.FORMATS for s in f.suffixes]
    assert len(suffixes) == len(set(suffixes))


def test_unknown_suffix_or_name_is_one_line_listing_the_formats(tmp_path):
    prof = toy_profile()
    for call in (lambda: prof.export(tmp_path / "x.bin"),
                 lambda: prof.export(tmp_path / "x.json", "chrome")):
        with pytest.raises(PyfxprofError) as error:
            call()
        assert "\n" not in str(error.value) and "flamegraph (.svg)" in str(error.value)


def test_export_by_suffix_and_by_name_write_the_same_as_the_wrappers(tmp_path):
    prof = toy_profile()
    prof.export(tmp_path / "a.folded", metric="max")
    prof.export_stacks(tmp_path / "b.folded", metric="max")
    prof.export(tmp_path / "c.log", "stacks", metric="max")
    text = (tmp_path / "a.folded").read_text()
    assert text == (tmp_path / "b.folded").read_text() == (tmp_path / "c.log").read_text()
    weights = [int(line.rsplit(" ", 1)[1]) for line in text.splitlines()]
    assert weights == prof.samples.max(axis=0).tolist()
    prof.export(tmp_path / "t.json", runs=[0])
    steps = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
             if str(e.get("name", "")).startswith("ProfilerStep")]
    assert [e["cat"] for e in steps] == ["user_annotation", "trace_end"]  # run 0, closing step


def test_cli_has_one_flag_per_format_and_writes_it(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    report.add_export_arguments(parser)
    flags = {a.option_strings[0] for a in parser._actions if a.option_strings}
    assert {f.flag for f in exporters.FORMATS} <= flags
    args = parser.parse_args(["--stacks", str(tmp_path / "s.txt"), "--metric", "min"])
    report.write_exports(toy_profile(), args)
    assert "wrote folded stacks to" in capsys.readouterr().err
    assert (tmp_path / "s.txt").read_text().splitlines()[0].endswith(
        f" {int(toy_profile().samples[:, 0].min())}")


def test_the_docs_table_is_the_registry():
    rows = table_after("outputs.md", "## Every format at a glance")
    expected = [[f"`{f.name}`", " ".join(f"`{s}`" for s in f.suffixes), f"`{f.flag} PATH`",
                 f.help] for f in exporters.FORMATS]
    assert rows[0] == ["Format", "Suffixes", "CLI flag", "What"] and rows[1:] == expected


def test_rank_formats_are_a_field_of_the_registry():
    """The formats a gathered ranks file is written to are the rows with a rank_writer, each
    the function a RankProfiles method is served from (one definition, no second list)."""
    from pyfxprof import _METHODS
    from pyfxprof.views.exporters import FORMATS
    served = {(f"pyfxprof.{module}", function) for key, (module, function) in _METHODS.items()
              if key.startswith("RankProfiles.")}
    rank_rows = [f for f in FORMATS if f.rank_writer is not None]
    assert [f.name for f in rank_rows] == ["chrome_trace", "html"]
    assert {(f.rank_writer.__module__, f.rank_writer.__name__) for f in rank_rows} <= served
