"""A minimal progress bar on stderr for runs that take more than a couple of seconds."""

from __future__ import annotations

import sys
import time

#: Runs expected to take less than this many seconds show no bar.
SHOW_AFTER_S = 2.0


class Progress:
    """Draws `label [#####.....] done/total` on a terminal's stderr; silent elsewhere.

    Example:
        >>> bar = Progress(10, "runs", expected_s=0.0)   # silent: too quick
        >>> bar.update(5); bar.close()
    """

    def __init__(self, total: int, label: str, expected_s: float, stream=None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = expected_s >= SHOW_AFTER_S and total > 0 and _is_terminal(self.stream)
        self.total, self.label = total, label
        self._last_draw = 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last_draw < 0.1 and done < self.total):
            return
        self._last_draw = now
        width = 30
        filled = int(width * done / self.total)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{done}/{self.total}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
