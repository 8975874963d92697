"""One way to write a file: all of it or none of it, never a 0-byte or half-written file.

Every writer in apiaudit (reports, caches, journals, overlays, manifests) goes through
`atomic_write`: the bytes go to a temporary file beside the target, are flushed to disk,
and replace the target in one rename. A failure (a full disk, a read-only folder) leaves
the old file, removes the temporary one, and raises `OSError` for the caller to turn into
one clear line.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".apiaudit-tmp"


def atomic_write(path: Path, data: bytes | str, *, keep_mode: bool = True) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one rename."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = None
    if keep_mode:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = None
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
