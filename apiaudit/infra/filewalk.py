"""One walk of a folder's files, on strings (no pathlib per file): for the checks every scan
makes, a release entry's listing and the engine's own modules, so it has to cost little."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # no `import typing` at run time: a replayed scan walks the engine with this
if TYPE_CHECKING:
    from typing import Callable, Iterator


def files_under(root: str, skip_folder: Callable[[str], bool] = lambda name: False) -> Iterator[tuple[str, os.DirEntry]]:
    """(relative posix path, directory entry) of every file under `root`, in no promised order.

    One scandir per folder; a folder that is a link is not entered, nor one `skip_folder` names."""
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir():
                    if not entry.is_symlink() and not skip_folder(entry.name):
                        stack.append((f"{prefix}{entry.name}/", entry.path))
                    continue
                yield prefix + entry.name, entry
