"""Findings and the report: the frozen values every later stage reads.

Binding checks produce `Finding`s; report formats, fixes and the preflight gate
consume them. Nothing here knows how a finding was found.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

SCHEMA_VERSION = "1.1"


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank


@dataclass(frozen=True)
class RuleInfo:
    id: str
    severity: Severity
    summary: str


# Stable rule ids produced by the engine itself. Recipe rules (rules/*.toml) add
# their own ids on load; docs/rules.md documents every one of these.
ENGINE_RULES: dict[str, RuleInfo] = {
    r.id: r
    for r in (
        RuleInfo("import-missing", Severity.ERROR, "a module or name imported from the provider does not exist"),
        RuleInfo("unexpected-keyword", Severity.ERROR, "the callee accepts no parameter of that name"),
        RuleInfo("missing-required", Severity.ERROR, "a required parameter of the callee is not passed"),
        RuleInfo("too-many-positional", Severity.ERROR, "more positional arguments than the callee accepts"),
        RuleInfo("positional-only-by-keyword", Severity.ERROR, "a positional-only parameter is passed by keyword"),
        RuleInfo("duplicate-argument", Severity.ERROR, "a parameter receives a value both positionally and by keyword"),
        RuleInfo("attribute-missing", Severity.ERROR, "an attribute used on a provider module, class or instance does not exist"),
        RuleInfo("rpc-missing", Severity.ERROR, "a string RPC names a worker method that exists nowhere it could run"),
        RuleInfo("cannot-judge", Severity.INFO, "a call into the provider that could not be resolved or bound with certainty"),
        RuleInfo("parse-error", Severity.ERROR, "a consumer file could not be parsed; nothing in it was checked"),
        RuleInfo("import-failed-use", Severity.ERROR, "a name is used after its import failed and the except handler left it unbound or None"),
        RuleInfo("version-compared-as-string", Severity.WARNING, "a version guard compares the provider's version as text, not as a version"),
    )
}


@dataclass(frozen=True)
class Finding:
    """One mismatch at one place in the consumer.

    `path` is relative to the consumer's import root (``speculators/data_generation/x.py``);
    `line`/`column` are the first line (1-based) and column (0-based) of the call,
    import or attribute use. `callee` is the dotted path where the callee is defined
    in the provider (after following re-exports), `provider_location` is
    ``relative/file.py:LINE`` in the provider, or None when the callee does not exist.
    """

    rule: str
    severity: Severity
    consumer: str
    path: str
    line: int
    column: int
    callee: str | None
    param: str | None
    message: str
    provider_location: str | None = None
    signature: str | None = None
    source: str | None = None
    advice: str | None = None
    end_line: int | None = None
    end_column: int | None = None
    # Machine-readable facts for fixes: moved-to modules for import-missing,
    # parameter names for surplus positionals, a recipe's id and change, ...
    details: tuple[tuple[str, str], ...] = ()
    # True when the finding sits behind a guard the engine could not decide on the audited
    # release (`guard` is that guard's source text): it may never run.
    conditional: bool = False
    guard: str | None = None

    def detail(self, key: str) -> str | None:
        for k, v in self.details:
            if k == key:
                return v
        return None

    @property
    def sort_key(self) -> tuple:
        return (self.consumer, self.path, self.line, self.column, self.rule, self.param or "")


@dataclass(frozen=True)
class CodeOrigin:
    """What was audited: a distribution, a fetched release, or a local path."""

    name: str
    version: str | None
    root: str
    kind: str  # "installed" | "release" | "path"


@dataclass(frozen=True)
class Report:
    consumers: tuple[CodeOrigin, ...]
    provider: CodeOrigin
    findings: tuple[Finding, ...]
    files_scanned: int = 0
    calls_checked: int = 0
    duration_s: float = 0.0
    rules_version: str | None = None
    extras: tuple[tuple[str, str], ...] = field(default=())

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)

    @property
    def cannot_judge(self) -> int:
        return sum(1 for f in self.findings if f.rule == "cannot-judge")

    def at_or_above(self, threshold: Severity) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity.at_least(threshold) and f.rule != "cannot-judge")

    def blocking(self, fail_on: Severity = Severity.ERROR, strict: bool = False) -> tuple[Finding, ...]:
        """What fails a run: findings at or above `fail_on`; conditional ones (behind an undecided
        guard) only when `strict`."""
        return tuple(f for f in self.at_or_above(fail_on) if strict or not f.conditional)

    def exit_code(self, fail_on: Severity = Severity.ERROR, strict: bool = False) -> int:
        return 1 if self.blocking(fail_on, strict) else 0
