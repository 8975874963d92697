"""No error without proof (issue 27): each cause of a false error, or of a miss, reproduced by a
small fixture provider and a consumer of exactly the shape met in real code, findings asserted
exactly. fixtures/README.md lists the fixtures; docs/rules.md states the rule."""

from __future__ import annotations

import functools
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMERS = FIXTURES / "consumers"


@functools.lru_cache(maxsize=None)
def _scan(consumer: str, provider: str, **options):
    from apiaudit.audit import scan

    return scan([str(CONSUMERS / consumer)], str(PROVIDERS / provider), use_index_cache=False, **options)


def _found(report) -> set[tuple]:
    return {(f.rule, f.severity.value, f.path, f.line, f.callee, f.param) for f in report.findings}


# --- cause 9: placeholders for a missing optional dependency -------------------------------


def test_the_real_class_not_the_placeholder_of_a_missing_optional_dependency():
    """modelkit (transformers' shape): `Trainer` is a dummy when torch is missing; a consumer that
    uses it runs with torch. On 1.0 nothing is wrong (the dummy has no `args`: that was 6 false
    errors); on 2.0 the real breaks are found (they were missed)."""
    assert _found(_scan("finetune/finetune", "modelkit_v1/modelkit")) == set()
    assert _found(_scan("finetune/finetune", "modelkit_v2/modelkit")) == {
        ("unexpected-keyword", "error", "finetune/train.py", 10, "modelkit.trainer.Trainer", "tokenizer"),
        ("attribute-missing", "error", "finetune/train.py", 14, "modelkit.trainer.Trainer.tokenizer", None),
    }


# --- cause 11: the provider's `__version__` read on a release that has none -------------------


def test_reading_a_version_the_release_no_longer_defines_is_reported():
    """verlib 2.0 has no `__version__`: the reads raise, in a user agent and in a version guard
    alike (folding the guard on the release's version must not hide the read)."""
    assert _found(_scan("useragent/useragent", "verlib_v1/verlib")) == set()
    assert _found(_scan("useragent/useragent", "verlib_v2/verlib")) == {
        ("attribute-missing", "error", "useragent/__init__.py", 8, "verlib.__version__", None),
        ("attribute-missing", "error", "useragent/__init__.py", 13, "verlib.__version__", None),
        ("import-missing", "error", "useragent/__init__.py", 19, "verlib.__version__", None),
    }
