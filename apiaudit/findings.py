"""Findings and the report: the frozen values every later stage reads.

Binding checks produce `Finding`s; report formats, fixes and the preflight gate
consume them. Nothing here knows how a finding was found.
"""

from __future__ import annotations

import enum
from dataclasses import field
from pathlib import Path, PurePosixPath
from typing import Literal

from apiaudit.evidence import Facts, RecipeFacts
from apiaudit.infra.frozen import record

SCHEMA_VERSION = "2.0"
# Older layouts `report_from_dict` still reads (1.x: details as strings, paths from the import root).
READABLE_MAJORS = ("1", "2")

# Where audited code came from: an installed distribution, a fetched release wheel, a path.
SourceKind = Literal["installed", "release", "path"]


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank


class FixKind(str, enum.Enum):
    """What `apiaudit fix` does for a rule's findings (docs/fix.md)."""

    REMOVE_KEYWORD = "remove-keyword"
    RENAME_KEYWORD = "rename-keyword"
    ADD_KEYWORD = "add-keyword"
    POSITIONAL_TO_KEYWORD = "positional-to-keyword"
    RENAME_ATTRIBUTE = "rename-attribute"
    REWRITE_IMPORT = "rewrite-import"
    INSERT_CALL_AFTER = "insert-call-after"  # pattern recipes: R.then(ARGS) after the statement holding R.method(...)
    DROP_SUBSCRIPT = "drop-subscript"  # pattern recipes: a result that is one value now, not a list of them
    ADD_PARAMETER = "add-parameter"  # a consumer def the provider calls: accept what it now passes (`name=None`)
    NONE = "none"


# Where each rule is documented: the section of docs/rules.md named by the rule id.
RULES_DOC = "docs/rules.md"


@record
class RuleInfo:
    """Everything a rule id means, in one place: reports, advice, SARIF descriptors and fix read it."""

    id: str
    severity: Severity
    summary: str
    advice: str | None = None  # a template; `{param}` is the finding's parameter
    fix: FixKind = FixKind.NONE

    @property
    def help_uri(self) -> str:
        return f"{RULES_DOC}#{self.id}"

    def advice_for(self, param: str | None) -> str | None:
        return self.advice.format(param=param or "...") if self.advice else None


# Stable rule ids produced by the engine itself. Recipe rules (rules/*.toml) add
# their own ids on load; docs/rules.md documents every one of these.
ENGINE_RULES: dict[str, RuleInfo] = {
    r.id: r
    for r in (
        RuleInfo("import-missing", Severity.ERROR, "a module or name imported from the provider does not exist",
                 "Remove the import, or pin the provider to a release that has it.", FixKind.REWRITE_IMPORT),
        RuleInfo("unexpected-keyword", Severity.ERROR, "the callee accepts no parameter of that name",
                 "Remove `{param}=` from the call, or pass it under the name the callee now uses.", FixKind.REMOVE_KEYWORD),
        RuleInfo("missing-required", Severity.ERROR, "a required parameter of the callee is not passed",
                 "Pass `{param}=...`: the callee now requires it.", FixKind.ADD_KEYWORD),
        RuleInfo("too-many-positional", Severity.ERROR, "more positional arguments than the callee accepts",
                 "Pass the surplus arguments by keyword, or drop the ones the callee no longer takes.",
                 FixKind.POSITIONAL_TO_KEYWORD),
        RuleInfo("positional-only-by-keyword", Severity.ERROR, "a positional-only parameter is passed by keyword",
                 "Pass `{param}` positionally."),
        RuleInfo("duplicate-argument", Severity.ERROR, "a parameter receives a value both positionally and by keyword",
                 "Pass `{param}` once, either positionally or by keyword."),
        RuleInfo("attribute-missing", Severity.ERROR, "an attribute used on a provider module, class or instance does not exist",
                 "Use the attribute's current name in the provider, or guard the access.", FixKind.RENAME_ATTRIBUTE),
        RuleInfo("rpc-missing", Severity.ERROR, "a string RPC names a worker method that exists nowhere it could run",
                 "Define the method on the worker extension class, or call one the provider's worker has."),
        RuleInfo("override-incompatible", Severity.ERROR, "the provider calls a method the consumer overrides with arguments the override cannot take",
                 "Accept what the provider passes there (add `{param}`, or `*args, **kwargs`), or pin the provider.", FixKind.ADD_PARAMETER),
        RuleInfo("constructor-incompatible", Severity.ERROR, "the provider's factory builds a consumer class with arguments its __init__ cannot take",
                 "Accept what the factory passes (`{param}`), or pin the provider.", FixKind.ADD_PARAMETER),
        RuleInfo("entry-point-incompatible", Severity.ERROR, "the provider calls a function the consumer declares as an entry point with arguments it cannot take",
                 "Accept what the provider passes (`{param}`), or pin the provider.", FixKind.ADD_PARAMETER),
        RuleInfo("abstract-unimplemented", Severity.ERROR, "a consumer class leaves undefined a member its provider base declares abstract",
                 "Define `{param}` on the class (the provider now requires it)."),
        RuleInfo("base-not-a-class", Severity.ERROR, "a consumer class derives from a provider name that is a function on the release",
                 "Derive from the class the function builds (or wrap its result), or pin the provider."),
        RuleInfo("replacement-incompatible", Severity.ERROR, "a consumer function put over a provider method cannot take what the provider's calls of it pass",
                 "Accept what the provider passes there (add `{param}`, or `**kwargs`), or pin the provider."),
        RuleInfo("patch-target-missing", Severity.WARNING, "a consumer patches a provider attribute the release does not have: nothing calls the patch",
                 "Patch the method that replaced it, or drop the patch for this release."),
        RuleInfo("hook-not-called", Severity.WARNING, "a consumer method overrides a provider hook that the release neither declares nor calls: it never runs",
                 "Do the work where this release calls the plugin, or require a release that calls `{param}`."),
        RuleInfo("probe-fails", Severity.WARNING, "a consumer's probe of the provider (names it imports or tests) fails on the release: what it guards never runs",
                 "Use what this release offers instead of `{param}`, or require a release that has it."),
        RuleInfo("cannot-judge", Severity.INFO, "a call into the provider that could not be resolved or bound with certainty",
                 "Check this call by hand, or make it statically visible (no splats, no dynamic names)."),
        RuleInfo("parse-error", Severity.ERROR, "a consumer file could not be parsed; nothing in it was checked"),
        RuleInfo("unused-suppression", Severity.WARNING, "an `# apiaudit: ignore[...]` comment that matches no finding"),
        RuleInfo("deprecated-use", Severity.WARNING, "a call uses a provider callable or keyword the provider marks as deprecated"),
        RuleInfo("import-failed-use", Severity.ERROR, "a name is used after its import failed and the except handler left it unbound or None",
                 "Guard the use (`if {param} is not None:`), or give the except handler a working fallback import."),
        RuleInfo("guard-fails", Severity.ERROR, "a narrowing guard followed by raise/return fails for the model object's class on this release: the job stops there",
                 "Run a release where the model's class passes the guard (see `apiaudit matrix --model`), or pick a model whose class does."),
        RuleInfo("model-attribute-missing", Severity.WARNING, "an attribute exists on some of the classes a model object can be, not on others (no --model given)",
                 "Pass `--model PATH` (or `--architecture NAME`) to audit the model you load; guard the access for the others."),
        RuleInfo("version-compared-as-string", Severity.WARNING, "a version guard compares the provider's version as text, not as a version",
                 "Compare parsed versions: `packaging.version.Version(x) >= Version(\"0.9\")`."),
        RuleInfo("launch-flag-unknown", Severity.ERROR, "a job's provider command line passes a flag the release's parser does not define",
                 "Remove `{param}`, or run a release that has it."),
        RuleInfo("launch-config-key-unknown", Severity.ERROR, "a JSON-valued flag sets a key its config class does not have on the release",
                 "Remove `{param}` from the flag's JSON, or spell it as the config class does."),
        RuleInfo("launch-config-value-unknown", Severity.ERROR, "a JSON-valued flag sets a value its field does not allow, or a name the release does not register",
                 "Use a value the release allows for `{param}`."),
        RuleInfo("launch-entry-unknown", Severity.ERROR, "a job's provider command line runs a module the release does not have",
                 "Start the server the way the release does (its console script), or run a release that has `{param}`."),
    )
}


# The rules whose finding's `callee` names what the provider does not have (a module, a name,
# an attribute, a worker method): a report may say "not found" of the callee for these only.
MISSING_CALLEE_RULES = frozenset(
    {"import-missing", "import-failed-use", "attribute-missing", "model-attribute-missing", "rpc-missing"}
)


@record
class Replacement:
    """One exact edit of a consumer file: the text from (`start_line`, `start_column`) up to, not
    including, (`end_line`, `end_column`) becomes `text` (an insertion where the two are one place).
    Lines 1-based, columns 0-based in characters, as a finding's own position."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    text: str


@record
class ExactFix:
    """What `apiaudit fix` would change for one finding alone, as edits of the finding's file
    against the bytes scanned (an import it adds is one more replacement)."""

    description: str  # "removed keyword legacy"
    replacements: tuple[Replacement, ...]


@record
class Finding:
    """One mismatch at one place in the consumer.

    `path` is relative to the consumer's import root (``speculators/data_generation/x.py``): what
    suppressions, baselines and fixes key on. Reports print it from the project root
    (`CodeOrigin.shown`);
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
    # What the check knew, typed by rule family (apiaudit/evidence.py): moved-to modules for
    # import-missing, parameter names for surplus positionals, ... JSON `details` is made from
    # these in report/json_format.py.
    facts: Facts | None = None
    # The recipe that explains the finding (and fixes it), with what its change says.
    recipe: RecipeFacts | None = None
    # Lines of the guards that fail on this release and come before the finding: the job
    # stops there first.
    behind_guard: tuple[int, ...] = ()
    # True when the finding sits behind a guard the engine could not decide on the audited
    # release (`guard` is that guard's source text): it may never run.
    conditional: bool = False
    guard: str | None = None
    # Why the finding is rated below `error` (or may never run): what apiaudit could not prove,
    # in one phrase ("base torch.nn.Module lies outside the provider and may define 'x'",
    # "imported by nothing in NAME"). None for a proven finding (docs/rules.md: an error is a proof).
    reason: str | None = None
    # In a consumer module that nothing reachable imports and no user-facing import path reaches
    # (docs/rules.md, "Modules nothing runs"): it runs only if something outside imports it.
    # Such a finding is `conditional` too.
    unreachable: bool = False
    # The fix as exact edits, where `apiaudit fix` has one: set only for reports written as JSON
    # or SARIF (`apiaudit.fixes.exact.with_exact_fixes`), since finding it parses the file.
    exact_fix: ExactFix | None = None

    @property
    def sort_key(self) -> tuple:
        return (self.consumer, self.path, self.line, self.column, self.rule, self.param or "")


@record
class CodeOrigin:
    """What was audited: a distribution, a fetched release, or a local path."""

    name: str
    version: str | None
    root: str
    kind: SourceKind
    # Set when two consumers of one report share a name (two releases of one distribution,
    # two checkouts): findings, table headings and SARIF roots use it to tell them apart.
    label: str | None = None
    # The import root's folder from the project root, with a trailing slash (`src/`): what a
    # report prints before a finding's path, so that it names the file as the repository does
    # (annotations, SARIF, `git apply`). Empty for releases, installed distributions and trees
    # outside the project: their paths are the import root's.
    display_root: str = ""
    # A declared dependency audited because it holds the coupling (the consumer imports nothing
    # of the provider itself): who requires it, and the requirement as declared. `matrix` and
    # `explain` name it and read its declared range on the provider.
    required_by: str | None = None  # "speculators 0.9.0"
    requirement: str | None = None  # "hs-connectors==0.9.0"

    @property
    def key(self) -> str:
        """What findings name as their `consumer`: the label when there is one, else the name."""
        return self.label or self.name

    def shown(self, path: str) -> str:
        """`path` (relative to the import root) as reports print it: from the project root."""
        return self.display_root + path

    @property
    def shown_base(self) -> str:
        """The folder reports' paths are relative to: the project root, or the import root."""
        up = len(PurePosixPath(self.display_root).parts)
        return str(Path(self.root).parents[up - 1]) if up else self.root

    @property
    def name_version(self) -> str:
        """`name version`, or the name alone when the version is unknown."""
        return f"{self.name} {self.version}" if self.version else self.name

    @property
    def spec(self) -> str:
        """How to resolve it again: a release by NAME==VERSION, an installed one by name, a path as it is."""
        if self.kind == "release" and self.version:
            return f"{self.name}=={self.version}"
        return self.name if self.kind == "installed" else self.root

    @property
    def via(self) -> str:
        """How a dependency came to be audited ("" for a consumer given): "required by speculators 0.9.0 (hs-connectors==0.9.0)"."""
        if self.required_by is None:
            return ""
        return f"required by {self.required_by}" + (f" ({self.requirement})" if self.requirement else "")


class SuppressedBy(str, enum.Enum):
    """What took a finding out of the report (it is still counted, and listed with --show-suppressed)."""

    INLINE = "inline"  # `# apiaudit: ignore[rule] -- reason` on the finding's line
    FILE = "file"  # `# apiaudit: ignore-file[rule] -- reason` anywhere in the file
    CONFIG = "config"  # an `[[tool.apiaudit.ignores]]` entry
    DISABLED = "disabled"  # the rule is off: `select`, `ignore`, or severity `off`
    BASELINE = "baseline"  # the finding is recorded in the `--baseline` file


@record
class Suppressed:
    """A finding the policy took out of the report, with why and where the reason is written."""

    finding: Finding
    by: SuppressedBy
    reason: str | None
    where: str  # `path:line` of the comment, or the config file and key


@record
class BaselineSummary:
    """How the report compares with a `--baseline` file."""

    path: str
    matched: int  # findings recorded in the baseline (left out of the report)
    fixed: int  # baseline entries no finding matched any more


@record
class Delta:
    """An upgrade delta (`--against`): `Report.findings` are what the new provider introduces."""

    against: CodeOrigin  # the provider release the consumer runs on today
    fixed: tuple[Finding, ...]  # findings of the current release the new one no longer has
    unchanged: int  # findings both releases have


@record
class Report:
    consumers: tuple[CodeOrigin, ...]
    provider: CodeOrigin
    findings: tuple[Finding, ...]
    files_scanned: int = 0
    calls_checked: int = 0
    duration_s: float = 0.0
    rules_version: str | None = None
    extras: tuple[tuple[str, str], ...] = field(default=())
    suppressed: tuple[Suppressed, ...] = ()
    baseline: BaselineSummary | None = None
    delta: Delta | None = None
    # One line each: what a person must know about the policy (an expired ignore, ...).
    notices: tuple[str, ...] = ()

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)

    @property
    def cannot_judge(self) -> int:
        return sum(1 for f in self.findings if f.rule == "cannot-judge")

    @property
    def unreachable(self) -> int:
        """Findings in modules nothing reachable imports (listed only with --show-unreachable)."""
        return sum(1 for f in self.findings if f.unreachable)

    def at_or_above(self, threshold: Severity) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity.at_least(threshold) and f.rule != "cannot-judge")

    def blocking(self, fail_on: Severity | None = Severity.ERROR, strict: bool = False) -> tuple[Finding, ...]:
        """What fails a run: findings at or above `fail_on` (None: `--fail-on never`, nothing);
        conditional ones (behind an undecided guard) only when `strict`."""
        if fail_on is None:
            return ()
        return tuple(f for f in self.at_or_above(fail_on) if strict or not f.conditional)

    def exit_code(self, fail_on: Severity | None = Severity.ERROR, strict: bool = False) -> int:
        return 1 if self.blocking(fail_on, strict) else 0


# `--fail-on` everywhere: the lowest severity that makes the exit code 1, or never.
FAIL_ON_CHOICES = ("error", "warning", "info", "never")


def parse_fail_on(value: str | Severity | None) -> Severity | None:
    """'error'|'warning'|'info' -> that severity; 'never' -> None. ValueError for anything else."""
    if value is None or isinstance(value, Severity):
        return value
    text = str(value).strip().lower()
    if text == "never":
        return None
    try:
        return Severity(text)
    except ValueError:
        raise ValueError(f"unknown --fail-on value {value!r} (choose from {', '.join(FAIL_ON_CHOICES)})") from None


def may_fix(f: Finding) -> bool:
    """Whether `apiaudit fix` may have a fix for the finding (a rule with a fix kind, a recipe, a
    text pattern): the rest are never planned, so that a large report parses only the files a
    fix may touch, and a report without one imports no fixer."""
    from apiaudit.evidence import PatternFacts

    rule = ENGINE_RULES.get(f.rule)
    return f.severity is not Severity.INFO and (
        (rule is not None and rule.fix is not FixKind.NONE) or f.recipe is not None or isinstance(f.facts, PatternFacts)
    )
