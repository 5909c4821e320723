"""Tests of the export registry (pyfxprof.views.exporters): the formats are the classes of
views/export_formats/, one per file; Profile.export picks one from the suffix or by name, the
per-format methods, the CLI flags, the help and docs/outputs.md's table are the registry, and a
format added as one file appears in all of them."""

import argparse
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pyfxprof
from pyfxprof.cli.commands import report
from pyfxprof.data.profile import Profile
from pyfxprof.errors import ArgumentError, PyfxprofError
from pyfxprof.views import exporters
from pyfxprof.views.export_formats import ExportFormat, format_problem
from tests.docs_tables import table_after
from tests.toy_profiles import toy_nodes

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = np.array([[400, 300, 20, 10], [500, 310, 25, 12], [450, 290, 30, 11]])
#: Profile methods named export_* that write no format of the registry, and why.
NOT_FORMATS = {
    "export": "the registry itself",
    "export_memory_timeline": "the analysis run's memory; its suffix picks JSON, HTML or an "
                              "image, suffixes the registry gives to other formats",
}


def toy_profile() -> Profile:
    return Profile(toy_nodes(), SAMPLES, SAMPLES.sum(axis=1) + 5, {"model": "toy"})


SUFFIXES = [(f.name, suffix) for f in exporters.FORMATS for suffix in f.suffixes]


@pytest.mark.parametrize("stem", ["a", "run.v2", "Mixed Case"])
@pytest.mark.parametrize("name, suffix", SUFFIXES)
def test_each_suffix_picks_its_format_in_any_case(stem, name, suffix):
    """Every suffix of every format chooses that format, upper case too, whatever the stem
    (a stem's own dots never make a longer suffix of another format here)."""
    assert exporters.format_for_path(f"dir/{stem}{suffix}").name == name
    assert exporters.format_for_path(f"{stem}{suffix}".upper()).name == name


def test_the_longest_suffix_wins():
    assert exporters.format_for_path("a/run.speedscope.json").name == "speedscope"
    assert exporters.format_for_path("TRACE.JSON.GZ").name == "chrome_trace"
    assert exporters.format_for_path("flame.svg").name == "flamegraph"


def test_unknown_suffix_or_name_is_one_line_listing_the_formats(tmp_path):
    prof = toy_profile()
    for call in (lambda: prof.export(tmp_path / "x.bin"),
                 lambda: prof.export(tmp_path / "x.json", "chrome")):
        with pytest.raises(PyfxprofError) as error:
            call()
        message = str(error.value)
        assert "\n" not in message
        assert all(f"{f.name} ({' '.join(f.suffixes)})" in message for f in exporters.FORMATS)


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


def test_an_option_the_format_does_not_take_is_refused_before_writing(tmp_path):
    with pytest.raises(ArgumentError, match="^top= is not an option of the stacks format; it "
                                            "takes metric, by$"):
        toy_profile().export(tmp_path / "s.folded", top=3)
    assert not (tmp_path / "s.folded").exists()


EXPORT_METHODS = sorted(key.split(".", 1)[1] for key in pyfxprof._METHODS
                        if key.startswith("Profile.export"))


@pytest.mark.parametrize("method", EXPORT_METHODS)
def test_each_per_format_method_is_a_format_and_writes_what_export_writes(tmp_path, method):
    """``Profile.export_<name>`` (a _METHODS row kept as public API) exists only for a format
    ``<name>`` of the registry, and writes byte for byte what ``export(path, "<name>")``
    writes; NOT_FORMATS says why the others are not formats."""
    if method in NOT_FORMATS:
        assert method.removeprefix("export_") not in exporters.BY_NAME
        return
    name = method.removeprefix("export_")
    assert name in exporters.BY_NAME, f"Profile.{method} is served but no format is {name!r}"
    suffix = exporters.BY_NAME[name].suffixes[0]
    prof = toy_profile()
    getattr(prof, method)(tmp_path / f"method{suffix}")
    prof.export(tmp_path / f"export{suffix}", name)
    written = [(tmp_path / f"{which}{suffix}").read_bytes() for which in ("method", "export")]
    assert written[0] and written[0] == written[1]


def test_the_per_format_methods_are_the_formats_with_a_method_row():
    """The check above runs for every row: rows and formats meet only by name."""
    named = {m.removeprefix("export_") for m in EXPORT_METHODS if m not in NOT_FORMATS}
    assert named == {"chrome_trace", "stacks", "flamegraph", "speedscope", "html"}
    assert named <= set(exporters.BY_NAME)


def test_cli_has_one_flag_per_format_and_writes_it(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    report.add_export_arguments(parser)
    helps = {a.option_strings[0]: a.help for a in parser._actions if a.option_strings}
    assert all(helps[f.flag] == f"write {f.help}" for f in exporters.FORMATS)
    assert all(f.title in helps["--metric"] for f in exporters.FORMATS if "metric" in f.options)
    args = parser.parse_args(["--stacks", str(tmp_path / "s.txt"), "--metric", "min"])
    report.write_exports(toy_profile(), args)
    assert "wrote folded stacks to" in capsys.readouterr().err
    assert (tmp_path / "s.txt").read_text().splitlines()[0].endswith(
        f" {int(toy_profile().samples[:, 0].min())}")


def test_the_help_of_export_lists_every_format():
    for doc in (exporters.export.__doc__, Profile.export.__doc__):
        assert all(f"{f.name} ({' '.join(f.suffixes)}): {f.help}" in (doc or "")
                   for f in exporters.FORMATS)


def test_the_docs_table_is_the_registry():
    rows = table_after("outputs.md", "## Every format at a glance")
    expected = [[f"`{f.name}`", " ".join(f"`{s}`" for s in f.suffixes), f"`{f.flag} PATH`",
                 f.help] for f in exporters.FORMATS]
    assert rows[0] == ["Format", "Suffixes", "CLI flag", "What"]
    assert rows[1:] == expected, "docs/outputs.md's table should read:\n" + "\n".join(
        "| " + " | ".join(row) + " |" for row in expected)


def test_rank_formats_are_a_field_of_the_registry():
    """The formats a gathered ranks file is written to are the rows with a rank_writer, each
    the function a RankProfiles method is served from (one definition, no second list)."""
    served = {(f"pyfxprof.{module}", function) for key, (module, function)
              in pyfxprof._METHODS.items() if key.startswith("RankProfiles.")}
    rank_rows = [f for f in exporters.FORMATS if f.rank_writer is not None]
    assert [f.name for f in rank_rows] == ["chrome_trace", "html"]
    assert {(f.rank_writer.__module__, f.rank_writer.__name__) for f in rank_rows} <= served


def test_no_format_module_imports_the_registry():
    """The registry imports the format modules by scanning their package, an edge the
    architecture test's import graph does not see: no format may reach back to the registry
    through what it imports, or that hidden edge would close a cycle."""
    from tests.test_architecture import import_graph
    graph = import_graph()
    for export_format in exporters.FORMATS:
        seen, todo = set(), [export_format.__module__]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo += graph.get(module, ())
        assert exporters.__name__ not in seen, export_format.__module__


NAMES_FORMAT = '''
    """A test's format: the node names, one a line."""

    from pathlib import Path

    from pyfxprof.views.export_formats import ExportFormat


    class Names(ExportFormat):
        """The node names (a format added as one file)."""

        name = "node_names"
        title = "node names"
        suffixes = (".names",)
        help = "the node names, one a line"

        @staticmethod
        def writer(profile, path, prefix: str = "") -> None:
            Path(path).write_text("".join(f"{prefix}{n}\\n" for n in profile.nodes["name"]))
'''

#: Run in a fresh process: the package of formats gets a directory holding one more format
#: file before anything reads the registry, as if the file were added to the package.
ADDED_FORMAT = '''
    import argparse, contextlib, io, json, sys
    from pathlib import Path
    import pyfxprof.views.export_formats as formats
    formats.__path__.append(sys.argv[1])
    import pyfxprof
    from pyfxprof.cli import parser_writer
    from pyfxprof.cli.commands import report
    from pyfxprof.cli.parser_table import COMMANDS
    from tests.views.test_exporters import toy_profile
    out, prof = Path(sys.argv[1]), toy_profile()
    prof.export(out / "a.names")
    prof.export(out / "b.txt", "node_names", prefix="> ")
    try:
        prof.export(out / "c.names", top=3)
    except pyfxprof.PyfxprofError as error:
        refused = str(error)
    spec = parser_writer.command_specs(("report",))["report"]
    flags = [a["options"] for a in spec["arguments"]]
    parser = argparse.ArgumentParser(prog="pyfxprof")
    report.add_parser(parser.add_subparsers())
    args = parser.parse_args(["report", "p.json", "--node-names", str(out / "d.names")])
    with contextlib.redirect_stderr(io.StringIO()) as said:
        report.write_exports(prof, args)
    print(json.dumps({"doc": pyfxprof.Profile.export.__doc__, "refused": refused,
                      "help": parser._subparsers._group_actions[0].choices["report"].format_help(),
                      "said": said.getvalue(), "flags": flags,
                      "committed": [a["options"] for a in COMMANDS["report"]["arguments"]]}))
'''


def test_a_format_added_as_one_file_gets_its_method_flag_and_help(tmp_path):
    """One file defining one ExportFormat subclass, put where the package scan looks, and
    nothing else: Profile.export writes it by suffix and by name (its options checked), its
    help lists it, `pyfxprof report` (and `profile`) take ``--node-names PATH`` with its help,
    and the parser table differs from the committed one by that flag alone, so
    tests/cli/test_parsers.py asks for its regeneration."""
    (tmp_path / "node_names.py").write_text(textwrap.dedent(NAMES_FORMAT))
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(ADDED_FORMAT), str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    names = toy_profile().nodes["name"].tolist()
    assert (tmp_path / "a.names").read_text().splitlines() == names
    assert (tmp_path / "b.txt").read_text().splitlines() == [f"> {n}" for n in names]
    assert (tmp_path / "d.names").read_text().splitlines() == names
    assert found["refused"] == "top= is not an option of the node_names format; it takes prefix"
    assert "node_names (.names): the node names, one a line" in found["doc"]
    assert "--node-names PATH" in found["help"] and "the node names, one a line" in found["help"]
    assert "wrote node names to" in found["said"]
    assert [f for f in found["flags"] if f not in found["committed"]] == [["--node-names"]]
    assert [f for f in found["committed"] if f not in found["flags"]] == []


def _package(tmp_path, monkeypatch, modules: dict[str, str]) -> str:
    """A package of format modules under tmp_path (a name of its own), importable."""
    package = f"formats_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    for module, body in modules.items():
        (tmp_path / package / f"{module}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def _format_source(cls: str, name: str, suffix: str) -> str:
    return (f"from pyfxprof.views.export_formats import ExportFormat\n"
            f"class {cls}(ExportFormat):\n"
            f"    name, title, suffixes, help = {name!r}, 't', ({suffix!r},), 'h'\n"
            f"    writer = staticmethod(lambda profile, path: None)\n")


@pytest.mark.parametrize("modules, message", [
    ({"a": _format_source("A", "a", ".a"), "b": _format_source("B", "b", ".b")}, None),
    ({"a": _format_source("A", "a", ".x"), "b": _format_source("B", "b", ".x")},
     r"\.a and .*\.b both claim '\.x'"),
    ({"a": _format_source("A", "same", ".a"), "b": _format_source("B", "same", ".b")},
     r"both claim 'same'"),
    ({"a": _format_source("A", "a", ".a") + _format_source("B", "b", ".b")},
     r"\.a defines 2 export formats: a module of .* is one format"),
    ({"a": "VALUE = 1\n"}, r"\.a defines 0 export formats"),
])
def test_the_scan_finds_one_format_per_module_and_refuses_clashes(tmp_path, monkeypatch,
                                                                   modules, message):
    package = _package(tmp_path, monkeypatch, modules)
    if message is None:
        assert [f.name for f in exporters.discover(package)] == sorted(modules)
        return
    with pytest.raises(TypeError, match=message):
        exporters.discover(package)


@pytest.mark.parametrize("fields, problem", [
    ({"name": "Bad-Name"}, "name must be a lower-case identifier, got 'Bad-Name'"),
    ({"name": "ok"}, "set title, suffixes, help, writer (see ExportFormat)"),
    ({"name": "ok", "title": "t", "suffixes": (".OK",), "help": "h", "writer": print},
     "suffixes must be a tuple of lower-case suffixes like '.svg', got ('.OK',)"),
    ({"name": "ok", "title": "t", "suffixes": ".ok", "help": "h", "writer": print},
     "suffixes must be a tuple of lower-case suffixes like '.svg', got '.ok'"),
    ({"name": "ok", "title": "t", "suffixes": (".ok",), "help": "two\nlines", "writer": print},
     "help must be one line"),
    ({"name": "ok", "title": "t", "suffixes": (".ok",), "help": "h", "writer": 3},
     "writer must be staticmethod(f), f(profile, path, **options)"),
])
def test_a_malformed_format_class_is_refused_in_one_line(fields, problem):
    assert format_problem(type("X", (), fields)) == problem
    with pytest.raises(TypeError, match=f"^export format .*X: {re.escape(problem)}$"):
        type("X", (ExportFormat,), fields)
    good = {"name": "ok", "title": "t", "suffixes": (".ok",), "help": "h", "writer": print}
    assert format_problem(type("X", (), good)) is None
