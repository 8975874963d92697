"""apiaudit: find every call-site mismatch between a consumer and a provider's internal API, statically.

Public API (everything else is internal and may change):

    scan(consumers, provider, ...) -> Report      the audit itself
    preflight(consumers, provider, ...) -> Report  the gate: raises PreflightFailed on blocking findings
    Report, Finding, Severity                     the results
    InputError                                    raised for bad input
"""

# This module runs before `apiaudit/__main__.py` can drop the working directory from sys.path
# (`python -m apiaudit`), so it imports nothing a file in that directory could shadow: no
# `from __future__`, no stdlib or third-party module, only apiaudit's own import-free errors.

__version__ = "0.1.0"

from apiaudit.errors import InputError

TYPE_CHECKING = False  # the typing-spec spelling that needs no `import typing`
if TYPE_CHECKING:
    from apiaudit.findings import Finding, Report, Severity
    from apiaudit.gate import PreflightFailed

# Loaded on first use, so importing the package runs nothing from outside it.
_LAZY = {
    "Finding": ("apiaudit.findings", "Finding"),
    "Report": ("apiaudit.findings", "Report"),
    "Severity": ("apiaudit.findings", "Severity"),
    # The exception class lives with the gate, which loads the scan engine.
    "PreflightFailed": ("apiaudit.gate", "PreflightFailed"),
}


def scan(*args, **kwargs):
    """Audit consumers against a provider (see `apiaudit.audit.scan`); returns a `Report`."""
    from apiaudit.audit import scan as _scan

    return _scan(*args, **kwargs)


def preflight(*args, **kwargs):
    """The gate: the report when nothing blocks, `PreflightFailed` otherwise (see `apiaudit.gate.preflight`)."""
    from apiaudit.gate import preflight as _preflight

    return _preflight(*args, **kwargs)


def __getattr__(name):
    if name in _LAZY:
        module_name, attribute = _LAZY[name]
        module = __import__(module_name, fromlist=[attribute])
        value = getattr(module, attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'apiaudit' has no attribute {name!r}")


__all__ = ["__version__", "scan", "preflight", "PreflightFailed", "Report", "Finding", "Severity", "InputError"]
