"""Columns in one unit: characters, converted once, where the consumer is read.

`ast` reports columns as UTF-8 byte offsets; editors, SARIF (`columnKind:
unicodeCodePoints`), GitHub annotations and LibCST count characters. Every `Site` a
consumer file yields is converted here, so no later stage sees a byte offset.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from apiaudit.consumer.records import Site

T = TypeVar("T")


def char_column(line: str, byte_offset: int) -> int:
    """The character column of a UTF-8 byte offset into `line`."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


def to_characters(value: T, lines: tuple[str, ...]) -> T:
    """`value` (a ConsumerFile, or anything holding Sites) with every Site's columns in characters.

    Files whose every line is ASCII come back as they are: bytes and characters agree there.
    """
    non_ascii = {i + 1 for i, line in enumerate(lines) if not line.isascii()}
    if not non_ascii:
        return value
    return _convert(value, lines, non_ascii)


def _site(site: Site, lines: tuple[str, ...], non_ascii: set[int]) -> Site:
    if site.line not in non_ascii and (site.end_line or site.line) not in non_ascii:
        return site
    column = char_column(lines[site.line - 1], site.column) if 0 < site.line <= len(lines) else site.column
    end_column = site.end_column
    if end_column is not None and site.end_line is not None and 0 < site.end_line <= len(lines):
        end_column = char_column(lines[site.end_line - 1], end_column)
    return dataclasses.replace(site, column=column, end_column=end_column)


def _convert(value: Any, lines: tuple[str, ...], non_ascii: set[int]) -> Any:
    if isinstance(value, Site):
        return _site(value, lines, non_ascii)
    if isinstance(value, tuple):
        converted = tuple(_convert(v, lines, non_ascii) for v in value)
        return converted if any(a is not b for a, b in zip(converted, value)) else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.name == "source":
                continue
            old = getattr(value, f.name)
            new = _convert(old, lines, non_ascii)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value
