"""Shape plug-ins on small providers written in the test (the fixtures cover the rest)."""

from __future__ import annotations

import textwrap

from apiaudit.audit import scan


def _scan(tmp_path, provider_src: str, consumer_src: str):
    prov = tmp_path / "prov" / "shapeprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text(textwrap.dedent(provider_src))
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(consumer_src))
    report = scan([str(job)], str(prov), cache_dir=tmp_path / "cache")
    return sorted((f.line, f.rule, f.param) for f in report.findings)


def test_msgspec_struct_fields_bind_and_a_plain_mixin_adds_none(tmp_path):
    got = _scan(
        tmp_path,
        """
        import msgspec
        class Mixin:
            note: str
        class Params(Mixin, msgspec.Struct, omit_defaults=True):
            n: int = 1
            temperature: float = 1.0
        class Strict(msgspec.Struct, kw_only=True):
            a: int
        """,
        """
        from shapeprov import Params, Strict
        Params(n=2, temperature=0.0)
        Params(2, 0.5)
        Params(best_of=3)
        Strict(a=1)
        Strict(1)
        """,
    )
    assert got == [(5, "unexpected-keyword", "best_of"), (7, "missing-required", "a"), (7, "too-many-positional", None)]


def test_dataclass_transform_base_with_class_keyword_kw_only(tmp_path):
    got = _scan(
        tmp_path,
        """
        from typing import dataclass_transform
        @dataclass_transform()
        class ModelBase:
            def __init_subclass__(cls, *, kw_only: bool = False) -> None: ...
        class Point(ModelBase, kw_only=True):
            x: int
            y: int = 0
        """,
        """
        from shapeprov import Point
        Point(x=1)
        Point(1)
        """,
    )
    assert got == [(4, "missing-required", "x"), (4, "too-many-positional", None)]
