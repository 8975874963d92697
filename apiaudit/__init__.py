"""apiaudit: find every call-site mismatch between a consumer and a provider's internal API, statically.

Public API (docs/api.md; everything else is internal and may change):

    scan(consumers, provider, ...) -> Report       the audit itself
    preflight(consumers, provider, ...) -> Report  the gate: raises PreflightFailed on blocking findings
    audit_launch(argv, provider, ...) -> findings   the launch audit of one server command line
    PreflightFailed                                raised by preflight()
    Report, Finding, Severity, CodeOrigin          the results
    Error, InputError and its kinds                raised for bad input: ArgumentError, NotFoundError,
                                                   NotInstalledError, NetworkError, ConfigError,
                                                   RulesError, CacheError, ProviderUnusedError

Every name but the errors is the engine's own object (`scan`'s signature is real), loaded on
first use so that `import apiaudit` stays cheap.
"""

# This module runs before `apiaudit/__main__.py` can drop the working directory from sys.path
# (`python -m apiaudit`), so it imports nothing a file in that directory could shadow: no
# `from __future__`, no stdlib or third-party module, only apiaudit's own import-free errors.

__version__ = "0.1.0"

from apiaudit.errors import (
    ArgumentError,
    CacheError,
    ConfigError,
    Error,
    InputError,
    NetworkError,
    NotFoundError,
    NotInstalledError,
    ProviderUnusedError,
    RulesError,
)

TYPE_CHECKING = False  # the typing-spec spelling that needs no `import typing`
if TYPE_CHECKING:
    from apiaudit.audit import audit_launch, scan
    from apiaudit.findings import CodeOrigin, Finding, Report, Severity
    from apiaudit.gate import PreflightFailed, preflight

# name -> the module that defines it; imported when first asked for.
_LAZY = {
    "scan": "apiaudit.audit",
    "audit_launch": "apiaudit.audit",
    "preflight": "apiaudit.gate",
    "PreflightFailed": "apiaudit.gate",
    "Finding": "apiaudit.findings",
    "Report": "apiaudit.findings",
    "Severity": "apiaudit.findings",
    "CodeOrigin": "apiaudit.findings",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'apiaudit' has no attribute {name!r}")
    imported = __import__(module, fromlist=[name])
    value = getattr(imported, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(__all__)


__all__ = [
    "__version__", "scan", "preflight", "audit_launch", "PreflightFailed", "Report", "Finding", "Severity", "CodeOrigin",
    "Error", "InputError", "ArgumentError", "NotFoundError", "NotInstalledError", "NetworkError", "ConfigError",
    "RulesError", "CacheError", "ProviderUnusedError",
]  # fmt: skip
