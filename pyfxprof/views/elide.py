"""Text cut to a width, "…" standing for what was cut: the one truncation of the views."""

from __future__ import annotations


def elide(text: str, width: int, keep_tail: bool = False) -> str:
    """``text`` as it is when it fits ``width`` characters, else cut to ``width`` with "…"
    last, or first when ``keep_tail`` (a name or path, whose end tells most).

    Example:
        >>> elide("abcdef", 4), elide("abcdef", 4, keep_tail=True), elide("abc", 4)
        ('abc…', '…def', 'abc')
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    return "…" + text[len(text) - width + 1:] if keep_tail else text[:width - 1] + "…"
