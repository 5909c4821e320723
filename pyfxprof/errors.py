"""User-facing errors: each carries a one-line message that says what went wrong and what to do."""

from __future__ import annotations

from typing import Any, Literal, overload


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


@overload
def whole_number(name: str, value: Any, minimum: int = 0, none: Literal[False] = False) -> int:
    ...


@overload
def whole_number(name: str, value: Any, minimum: int = 0, *, none: bool) -> int | None:
    ...


def whole_number(name: str, value: Any, minimum: int = 0, none: bool = False) -> int | None:
    """`value` as an int of at least `minimum` (None too when `none`), or an ArgumentError
    naming `name`: a bool, a float (even 2.0), a string or NaN is not a count.

    Example:
        >>> whole_number("top", 3, minimum=1), whole_number("top", None, none=True)
        (3, None)
        >>> whole_number("top", 2.5, minimum=1, none=True)
        Traceback (most recent call last):
        ...
        pyfxprof.errors.ArgumentError: top must be None or a positive int, got 2.5
    """
    if value is None and none:
        return None
    index = None if isinstance(value, bool) else getattr(value, "__index__", None)
    if index is None or index() < minimum:
        what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        what = f"None or {what}" if none else what
        raise ArgumentError(f"{name} must be {what}, got {value!r}")
    return int(index())


def _real(value: Any) -> float | None:
    """`value` as a float when it is a real number (a bool, string or complex is not)."""
    if isinstance(value, (bool, str, bytes, complex)) or not hasattr(value, "__float__"):
        return None
    return float(value.__float__())


def fraction(name: str, value: Any) -> float:
    """`value` as a float strictly between 0 and 1, or an ArgumentError naming `name`.

    Example:
        >>> fraction("quantile", 0.99)
        0.99
        >>> fraction("quantile", float("nan"))
        Traceback (most recent call last):
        ...
        pyfxprof.errors.ArgumentError: quantile must be a number strictly between 0 and 1, got nan
    """
    number = _real(value)
    if number is None or not 0.0 < number < 1.0:
        raise ArgumentError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return number


def margin(name: str, value: Any) -> float:
    """`value` as a finite fraction >= 0 (0.05 = 5%), or an ArgumentError naming `name`.

    Example:
        >>> margin("min_change", 0.05)
        0.05
    """
    number = _real(value)
    if number is None or not 0.0 <= number < float("inf"):
        raise ArgumentError(f"{name} must be a fraction >= 0 (0.05 = 5%), got {value!r}")
    return number
