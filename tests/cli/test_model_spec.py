"""Tests of pyfxprof.cli.model_spec: import specs and input shapes."""

import sys

import pytest
import torch

from pyfxprof.errors import PyfxprofError
from pyfxprof.cli.model_spec import load_model, parse_input


def test_class_factory_and_instance_specs():
    assert isinstance(load_model("torch.nn:ReLU"), torch.nn.ReLU)
    assert type(load_model("tests.fixtures_models:conv_bn_relu")).__name__ == "Sequential"


@pytest.mark.parametrize("spec, message", [
    ("resnet18", "must look like 'package.module:callable'"),
    ("no_such_pkg.mod:Net", "cannot import 'no_such_pkg.mod'"),
    ("torch.nn:NoSuchThing", "has no attribute 'NoSuchThing'"),
    ("tests.fixtures_models:broken_factory", "calling factory .* failed: RuntimeError"),
    ("torch:float32", "not a Module class or factory"),
    ("torch:get_num_threads", "returned a int, not a torch.nn.Module"),
])
def test_bad_specs_give_one_line_errors(spec, message):
    with pytest.raises(PyfxprofError, match=message) as info:
        load_model(spec)
    assert "\n" not in str(info.value)


def test_parse_input_shapes_and_dtypes():
    x = parse_input("5x3x7")
    assert x.shape == (5, 3, 7) and x.dtype == torch.float32
    ids = parse_input("2x4:int64")
    assert ids.dtype == torch.int64 and ids.min() >= 0 and ids.max() < 100
    torch.testing.assert_close(parse_input("3x3"), parse_input("3x3"))  # seeded


def test_an_empty_input_is_run_with_a_warning():
    with pytest.warns(UserWarning, match="'0x3x8' is empty .* per-op overhead only"):
        assert parse_input("0x3x8").shape == (0, 3, 8)


@pytest.mark.parametrize("text, message", [("5x", "not a shape"), ("a", "not a shape"),
                                           ("2x2:complex7", "dtype 'complex7' is not one of")])
def test_parse_input_refuses_bad_text(text, message):
    with pytest.raises(PyfxprofError, match=message):
        parse_input(text)


def test_keyword_inputs():
    from pyfxprof.cli.model_spec import parse_input_argument
    name, ids = parse_input_argument("input_ids=1x16:int64")
    assert name == "input_ids" and ids.shape == (1, 16) and ids.dtype == torch.int64
    assert parse_input_argument("1x3")[0] is None


@pytest.mark.parametrize("text, message", [
    ("1ids=1x4", "'1ids' is not a keyword argument name"),
    ("ids=1x", "not a shape like"), ("ids=1x4:int3", "dtype 'int3' is not one of")])
def test_bad_keyword_inputs_give_one_line_errors(text, message):
    from pyfxprof.cli.model_spec import parse_input_argument
    with pytest.raises(PyfxprofError, match=message) as info:
        parse_input_argument(text)
    assert "\n" not in str(info.value)


USER_FILES = {
    "h14_syntax.py": "def f(:\n",
    "h14_raises.py": "raise RuntimeError('boom at import')\n",
    "h14_attrs.py": (
        "import torch\n"
        "def __getattr__(name):\n    raise RuntimeError(f'no {name} here')\n"
        "class Holder:\n    @property\n    def net(self):\n        raise ValueError('getter fails')\n"
        "holder = Holder()\n"
        "def exits():\n    raise SystemExit(3)\n"
        "def net():\n    return torch.nn.Sequential(torch.nn.Linear(4, 4))\n"),
}


@pytest.fixture
def user_files(tmp_path, monkeypatch):
    for name, text in USER_FILES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in USER_FILES:
        sys.modules.pop(name[:-3], None)


@pytest.mark.parametrize("argv, expected", [
    (["profile", "h14_syntax:Net"], "cannot import 'h14_syntax' for model 'h14_syntax:Net': "
                                    "SyntaxError in "),
    (["profile", "h14_raises:Net"], "cannot import 'h14_raises' for model 'h14_raises:Net': "
                                    "RuntimeError: boom at import"),
    (["profile", ".mod:Net"], "model spec '.mod:Net' is relative"),
    (["profile", "h14_attrs:Missing"], "reading 'Missing' of model 'h14_attrs:Missing' failed: "
                                       "RuntimeError: no Missing here"),
    (["profile", "h14_attrs:holder.net"], "reading 'net' of model 'h14_attrs:holder.net' "
                                          "failed: ValueError: getter fails"),
    (["profile", "h14_attrs:exits"], "calling factory 'h14_attrs:exits'() failed: it called "
                                     "SystemExit(3)"),
    (["profile", "h14_attrs:net", "--input", "100000x100000x100000"],
     "input '100000x100000x100000' has 1e+15 elements, more than 1e+12"),
    (["profile", "h14_attrs:net", "--input", "2x4", "--runs", "2", "--depth", "2"],
     "--depth applies to --group-by module only"),
    (["profile", "h14_attrs:net", "--input", "2x4", "--runs", "2", "--group-by", "input_shape"],
     None),
])
def test_cli_model_spec_failures_are_one_line_exit_2(user_files, capsys, argv, expected):
    from pyfxprof.cli import main as cli
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip()
    if expected is None:  # a profile with shapes groups fine
        assert rc == 0, err
        return
    assert rc == 2 and "\n" not in err, err
    assert err.startswith("pyfxprof: error: " + expected), err


@pytest.mark.parametrize("argv", [["overhead", "torch.nn:ReLU", "--runs", "0"],
                                  ["overhead", "torch.nn:ReLU", "--rounds", "-1"],
                                  ["profile", "torch.nn:ReLU", "--device", "foo"]])
def test_cli_refuses_bad_numbers_and_devices_as_usage_errors(capsys, argv):
    from pyfxprof.cli import main as cli
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("pyfxprof ")


def test_report_group_by_input_shape_without_shapes_is_one_line(tmp_path, capsys):
    from pyfxprof.cli import main as cli
    from tests.data.test_persist import make_profile
    make_profile(extra=False).save(tmp_path / "p.json")
    rc = cli.main(["report", str(tmp_path / "p.json"), "--group-by", "input_shape"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err and err.startswith("pyfxprof: error: cannot show"), err


def test_ctrl_c_while_importing_is_exit_130_with_one_line(monkeypatch, capsys):
    from pyfxprof.cli import main as cli

    def interrupted(command=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["profile"]) == 130
    assert capsys.readouterr().err.strip() == "pyfxprof: interrupted"


def test_a_program_from_torch_export_is_returned_as_it_is(tmp_path, monkeypatch):
    (tmp_path / "exported_net.py").write_text(
        "import torch\n"
        "PROGRAM = torch.export.export(torch.nn.ReLU(), (torch.zeros(2),))\n"
        "def build():\n    return PROGRAM\n"
        "def number():\n    return 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import exported_net
        assert load_model("exported_net:build") is exported_net.PROGRAM
        assert load_model("exported_net:PROGRAM") is exported_net.PROGRAM
        with pytest.raises(PyfxprofError, match="returned a int, not a torch.nn.Module or "
                                                "torch.export.ExportedProgram"):
            load_model("exported_net:number")
    finally:
        sys.modules.pop("exported_net", None)
