"""apiaudit: find every call-site mismatch between a consumer and a provider's internal API, statically.

Public API (docs/api.md; everything else is internal and may change):

    scan(consumers, provider, ...) -> Report       the audit itself
    preflight(consumers, provider, ...) -> Report  the gate: raises PreflightFailed on blocking findings
    PreflightFailed                                raised by preflight()
    Report, Finding, Severity, CodeOrigin          the results
    InputError                                     raised for bad input

`scan`, `preflight` and `PreflightFailed` are the engine's own objects (their signatures are
real), loaded on first use so that `import apiaudit` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from apiaudit.errors import InputError
from apiaudit.findings import CodeOrigin, Finding, Report, Severity

if TYPE_CHECKING:
    from apiaudit.audit import scan
    from apiaudit.gate import PreflightFailed, preflight

# name -> module that defines it; imported when first asked for.
_LAZY = {"scan": "apiaudit.audit", "preflight": "apiaudit.gate", "PreflightFailed": "apiaudit.gate"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'apiaudit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["__version__", "scan", "preflight", "PreflightFailed", "Report", "Finding", "Severity", "CodeOrigin", "InputError"]
