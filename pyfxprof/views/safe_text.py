"""Names made safe to show: control characters escaped for terminals, characters XML 1.0 forbids replaced.

Names, paths and metadata come from the user's model or from loaded files, so they may hold
escape sequences (a terminal would set its title or clear the screen) or characters an SVG or
HTML page cannot hold (the page would not parse). Every text, SVG and HTML output goes through
these functions where names are rendered.
"""

from __future__ import annotations

import re

#: DEL, C1 controls, bidirectional overrides and lone surrogates (unencodable in UTF-8)...
_UNSAFE = "\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
#: ... and every C0 control in a line; in text, all but tab, newline and carriage return.
_UNSAFE_IN_LINE = re.compile(f"[\x00-\x1f{_UNSAFE}]")
_UNSAFE_IN_TEXT = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_UNSAFE}]")
#: Characters outside XML 1.0's Char production (plus lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_terminal_safe(text: str) -> bool:
    """Whether :func:`terminal_line` would leave ``text`` as it is (one search, no copy).

    >>> is_terminal_safe("relu 1.2 µs"), is_terminal_safe("bell" + chr(7))
    (True, False)
    """
    return _UNSAFE_IN_LINE.search(text) is None


def terminal_line(text) -> str:
    """``text`` as one line safe on a terminal: every control character (newlines too),
    bidirectional override and lone surrogate shown as its escape.

    >>> terminal_line("a\\x1b[31mRED\\x07\\nb")
    'a\\\\x1b[31mRED\\\\x07\\\\x0ab'
    """
    return _UNSAFE_IN_LINE.sub(_escaped, str(text))


def terminal_text(text) -> str:
    """``text`` safe on a terminal, its line breaks and tabs kept.

    >>> terminal_text("ok\\n\\x1b]0;title\\x07")
    'ok\\n\\\\x1b]0;title\\\\x07'
    """
    return _UNSAFE_IN_TEXT.sub(_escaped, str(text))


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold replaced by U+FFFD (an SVG or XHTML
    page that holds them does not parse).

    >>> xml_text("a\\x1bb\\x00c\\ud800")
    'a\\ufffdb\\ufffdc\\ufffd'
    """
    return _NOT_XML.sub("\ufffd", text)


def figure_text(text) -> str:
    """``text`` for a matplotlib label: :func:`terminal_line`, with ``$`` taken literally
    (matplotlib would parse ``$...$`` as math and fail on some names).

    >>> print(figure_text("cost $x$ \x1b"))
    cost \\$x\\$ \\x1b
    """
    return terminal_line(text).replace("$", "\\$")


class TerminalStream:
    """A text stream writing through to ``stream`` with :func:`terminal_text` applied: what
    the command line prints cannot drive the terminal.

    >>> import io
    >>> out = io.StringIO()
    >>> print("name \\x1b[2J", file=TerminalStream(out)); out.getvalue()
    'name \\\\x1b[2J\\n'
    """

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)
