import io

from pyfxprof.run import progress
from pyfxprof.run.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bar_draws_with_tqdm_on_a_terminal_and_goes_away():
    stream = Terminal()
    bar = Progress(10, "profiling", expected_s=5.0, stream=stream)
    bar.update(3)
    bar.update(10)
    bar.close()
    text = stream.getvalue()
    assert text.startswith("\rprofiling:") and "/10" in text and "run/s" in text
    assert text.endswith("\r") and text.split("\r")[-2].strip() == ""  # removed on close
    bar.close()  # closing twice is harmless


def test_the_total_grows_when_runs_are_added():
    stream = Terminal()
    bar = Progress(10, "comparing", expected_s=5.0, stream=stream)
    bar.update(10)
    bar.grow(16)
    bar.grow(12)  # never shrinks
    bar.update(16)
    assert "10/16" in stream.getvalue()  # redrawn with the new total
    bar.close()
    bar.grow(20)  # closed: nothing to draw


def test_silent_when_quick_or_when_nobody_sees_it():
    for stream, expected in ((Terminal(), 0.5), (io.StringIO(), 60.0)):
        bar = Progress(10, "profiling", expected_s=expected, stream=stream)
        bar.update(10)
        bar.close()
        assert not bar.enabled and stream.getvalue() == ""


def test_shows_in_a_notebook_even_without_a_terminal(monkeypatch):
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    stream = io.StringIO()
    bar = Progress(4, "profiling", expected_s=5.0, stream=stream)
    assert bar.enabled
    bar.update(4)
    bar.close()
    assert "4/4" in stream.getvalue().split("\r")[-1]  # the finished bar stays


def test_notebook_without_ipywidgets_writes_text_to_stdout_not_stderr(monkeypatch, capsys):
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(progress, "has_widgets", lambda: False)
    bar = Progress(4, "profiling", expected_s=5.0)
    bar.update(4)
    bar.close()
    out, err = capsys.readouterr()
    assert err == "" and "4/4" in out.split("\r")[-1]  # Jupyter shows stderr in red
