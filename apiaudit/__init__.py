"""apiaudit: find every call-site mismatch between a consumer and a provider's internal API, statically.

Public API (everything else is internal and may change):

    scan(consumers, provider, ...) -> Report      the audit itself
    preflight(consumers, provider, ...) -> Report  the gate: raises PreflightFailed on blocking findings
    Report, Finding, Severity                     the results
    InputError                                    raised for bad input
"""

from __future__ import annotations

__version__ = "0.1.0"

from apiaudit.errors import InputError
from apiaudit.findings import Finding, Report, Severity


def scan(*args, **kwargs) -> Report:
    """Audit consumers against a provider (see `apiaudit.audit.scan`)."""
    from apiaudit.audit import scan as _scan

    return _scan(*args, **kwargs)


def preflight(*args, **kwargs) -> Report:
    """The gate: the report when nothing blocks, `PreflightFailed` otherwise (see `apiaudit.gate.preflight`)."""
    from apiaudit.gate import preflight as _preflight

    return _preflight(*args, **kwargs)


def __getattr__(name: str):
    # The exception class lives with the gate, which loads the scan engine: import on first use.
    if name == "PreflightFailed":
        from apiaudit.gate import PreflightFailed

        return PreflightFailed
    raise AttributeError(f"module 'apiaudit' has no attribute {name!r}")


__all__ = ["__version__", "scan", "preflight", "PreflightFailed", "Report", "Finding", "Severity", "InputError"]
