"""User-facing errors: each carries a one-line message that says what went wrong and what to do."""

from __future__ import annotations


class PyfxprofError(Exception):
    """A problem with the user's input or environment, reported as one line (CLI exit code 2).

    Example:
        >>> raise PyfxprofError("cannot import 'foo.bar:Net': no module named 'foo'")
        Traceback (most recent call last):
        ...
        pyfxprof.errors.PyfxprofError: cannot import 'foo.bar:Net': no module named 'foo'
    """


class ArgumentError(PyfxprofError, ValueError, TypeError):
    """A caller's mistake in an argument: one line naming the argument and what it accepts.
    Also a ValueError and a TypeError, so code catching those keeps working.

    Example:
        >>> raise ArgumentError("sort_by must be one of ['total', 'median'], got 'zz'")
        Traceback (most recent call last):
        ...
        pyfxprof.errors.ArgumentError: sort_by must be one of ['total', 'median'], got 'zz'
    """


def first_line(error: BaseException | str, empty: str | None = None) -> str:
    """The first line of an exception's message (or of a message); `empty` (default: the
    exception's type name) when it has none.

    Example:
        >>> first_line(ValueError("bad shape" + chr(10) + "more detail"))
        'bad shape'
        >>> first_line(KeyError(), empty="no message")
        'no message'
    """
    text = str(error).strip()
    if text:
        return text.splitlines()[0]
    return type(error).__name__ if empty is None else empty
