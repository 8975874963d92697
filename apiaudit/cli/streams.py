"""The standard streams as other command-line tools treat them: a reader that went away, and colour.

Imports nothing beyond the standard library: `apiaudit.cli.main` uses it before click is loaded.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn, TextIO

# What a shell reports for a tool that a closed pipe ended (`cat`, `git` killed by SIGPIPE): 128 + 13.
EXIT_BROKEN_PIPE = 128 + getattr(signal, "SIGPIPE", 13)


def is_broken_pipe(exc: BaseException) -> bool:
    """True for the error a write to a closed pipe raises (`apiaudit ... | head -1`)."""
    import errno

    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


def end_on_broken_pipe() -> NoReturn:
    """The reader of stdout or stderr went away: stop at once, without a word, with exit 141.

    Nothing is left to say to anyone: both streams are pointed at the null device, so that the
    interpreter's last flush of what is still buffered fails on nothing ("Exception ignored
    ... BrokenPipeError" is not printed)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        null = None
    for stream in (sys.stdout, sys.stderr):
        try:
            if null is not None:
                os.dup2(null, stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass  # not a real file (a test's capture): nothing the interpreter will flush
    raise SystemExit(EXIT_BROKEN_PIPE)


def flush_standard_streams() -> None:
    """Flush stdout and stderr; a closed reader ends the command as `end_on_broken_pipe` does."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError as exc:
            if is_broken_pipe(exc):
                end_on_broken_pipe()
            raise
        except ValueError:
            pass  # already closed


def use_color(stream: TextIO | None = None) -> bool:
    """Colour for `stream` (default stdout): never with a non-empty NO_COLOR (no-color.org), always
    with a non-empty FORCE_COLOR (force-color.org), else only on a terminal. NO_COLOR wins."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = stream if stream is not None else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
