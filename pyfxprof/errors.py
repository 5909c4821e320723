"""User-facing errors: each carries a one-line message that says what went wrong and what to do."""


class PyfxprofError(Exception):
    """A problem with the user's input or environment, reported as one line (CLI exit code 2).

    Example:
        >>> raise PyfxprofError("cannot import 'foo.bar:Net': no module named 'foo'")
        Traceback (most recent call last):
        ...
        pyfxprof.errors.PyfxprofError: cannot import 'foo.bar:Net': no module named 'foo'
    """
