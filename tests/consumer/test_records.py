"""A consumer file's bytes read as Python reads a module: UTF-8, or the encoding its coding cookie declares."""

from __future__ import annotations

from apiaudit.consumer import collect
from apiaudit.consumer.records import ConsumerOptions, declared_encoding
from apiaudit.sources.local import resolve_path

OPTIONS = ConsumerOptions(provider_packages=("prov",))


def _collected(tmp_path, raw: bytes):
    pkg = tmp_path / "cons"
    pkg.mkdir()
    (pkg / "__init__.py").write_bytes(b"")
    (pkg / "mod.py").write_bytes(raw)
    return {f.path: f for f in collect(resolve_path(str(pkg)), OPTIONS)}["cons/mod.py"]


def test_a_file_that_is_not_valid_utf8_is_a_parse_error_at_the_bad_byte(tmp_path) -> None:
    # Python refuses this module (SyntaxError: Non-UTF-8 code): nothing in it may be judged.
    found = _collected(tmp_path, b"import prov\n\nprov.run(name='caf\xe9')\n")
    assert found.error is not None and "0xe9" in found.error and "line 3" in found.error and "PEP 263" in found.error
    assert (found.error_site.line, found.error_site.column) == (3, 18)
    assert found.uses == ()


def test_a_coding_cookie_is_honoured(tmp_path) -> None:
    found = _collected(tmp_path, b"# -*- coding: latin-1 -*-\nimport prov\n\nprov.run(name='caf\xe9')\n")
    assert found.error is None
    assert "café" in found.source
    assert [u.site.line for u in found.uses] == [4]


def test_bytes_invalid_in_the_declared_encoding_are_a_parse_error(tmp_path) -> None:
    found = _collected(tmp_path, b"# coding: ascii\nimport prov\nprov.run('\xe9')\n")
    assert found.error is not None and "not valid ascii" in found.error


def test_the_declared_encoding_is_read_from_the_first_two_lines_only() -> None:
    assert declared_encoding(b"x = 1\n") == "utf-8"
    assert declared_encoding(b"#!/usr/bin/env python\n# coding: cp1252\n") == "cp1252"
    assert declared_encoding(b"a = 1\nb = 2\n# coding: latin-1\n") == "utf-8"
    assert declared_encoding(b"# coding: latin-1") == "iso-8859-1"
