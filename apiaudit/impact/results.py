"""What `impact` hands on: provider changes, the breaks each causes, and each downstream's outcome."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Literal

from apiaudit.findings import CodeOrigin, Finding, Severity
from apiaudit.infra.frozen import record
from apiaudit.recipes.changes import ChangeKind

# What became of one downstream: it breaks (introduced blocking findings), only conditional ones
# are new (behind guards not decided, or in modules nothing imports), nothing is new, it does not
# use the provider (it imports nothing of it, nor does any dependency it declares: nothing to
# check, as an early release of a future plugin; clean for the exit code), or it could not be read
# (a release that cannot be fetched, a path that is not a package, ...).
Outcome = Literal["breaks", "conditional", "clean", "unused", "unreadable"]
# A note listing names (what appeared when a member went) names this many in a summary.
NOTE_NAMES = 4


@record
class ProviderChange:
    """One edit of the provider, as the downstream findings it causes show it.

    `symbol` is the dotted path of the provider definition that changed (on NEW, or on OLD when
    it is gone); `location` is where that definition is on NEW (``pkg/mod.py:LINE``, the line a
    pull request annotation goes on), `old_location` where it was on OLD. `before`/`after` are the
    definition as each side has it (a signature, a dotted path), `old_name`/`new_name` what the
    kind of change names (the parameter removed, the new module of a moved name)."""

    kind: ChangeKind
    symbol: str
    location: str | None = None
    old_location: str | None = None
    before: str | None = None
    after: str | None = None
    old_name: str | None = None
    new_name: str | None = None
    note: str = ""
    rule: str = ""  # the rule of the findings it causes, for changes of no finer kind (`changed`)

    @property
    def short(self) -> str:
        """The symbol as a person names it: `Request.__init__`, `LLM.generate`, `load_model`."""
        parts = self.symbol.split(".")
        for i, part in enumerate(parts):
            if part[:1].isupper():
                return ".".join(parts[i:])
        return parts[-1]

    @property
    def brief_note(self) -> str:
        """The note with a long list cut to its first names ("members added ...: a, b, c and 40 more")."""
        head, sep, listed = self.note.partition(": ")
        names = listed.split(", ")
        if not sep or len(names) <= NOTE_NAMES:
            return self.note
        return f"{head}: {', '.join(names[:NOTE_NAMES])} and {len(names) - NOTE_NAMES} more"

    @property
    def summary(self) -> str:
        """One phrase: "`Request.__init__` lost `eos_token_id`"."""
        name, old, new = f"`{self.short}`", self.old_name, self.new_name
        note = self.brief_note
        kind = self.kind
        if kind is ChangeKind.REMOVED_PARAMETER:
            return f"{name} lost `{old}`"
        if kind is ChangeKind.RENAMED_PARAMETER:
            return f"{name} renamed `{old}` to `{new}`"
        if kind is ChangeKind.ADDED_PARAMETER:
            return f"{name} requires a new parameter `{new}`"
        if kind is ChangeKind.DEFAULT_REMOVED:
            return f"{name} made `{new}` required" + (f" ({note})" if note else "")
        if kind is ChangeKind.MADE_POSITIONAL_ONLY:
            return f"{name} made `{new}` positional-only"
        if kind is ChangeKind.POSITIONAL_REDUCED:
            return f"{name} takes fewer positional arguments" + (f" (dropped {old})" if old else "")
        if kind is ChangeKind.MOVED_SYMBOL:
            return f"`{old}` moved to `{new}`"
        if kind is ChangeKind.RENAMED_ATTRIBUTE:
            return f"{name} renamed attribute `{old}` to `{new}`"
        if kind is ChangeKind.REMOVED:
            gone = f"`{self.symbol}.{old}`" if old and not self.symbol.endswith(old) else f"`{old or self.symbol}`"
            return f"{gone} was removed" + (f" ({note})" if note else "")
        if note:
            # a rule's range names no definition: its note says it all
            return note if self.symbol == self.rule else f"{name}: {note}"
        return f"{name} changed ({self.rule})" if self.rule else f"{name} changed"

    @property
    def stable_id(self) -> str:
        """The change's id in JSON and SARIF: what changed, not where (it survives lines moving around it)."""
        text = "\0".join((self.kind.value, self.symbol, self.old_name or "", self.new_name or "", self.rule))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def key(self) -> tuple:
        """What makes two breaks the same provider change (the by-change view groups on it)."""
        return (self.kind, self.symbol, self.old_name, self.new_name, self.location, self.rule if self.kind is ChangeKind.OTHER else "")


@record
class Break:
    """One finding a downstream has on NEW and not on OLD, and the provider change behind it."""

    downstream: str  # the downstream's label: "speculators 0.3.0", or its path's name
    finding: Finding
    change: ProviderChange
    site: str  # where in the downstream, as reports print it: "speculators/generator.py:123"

    @property
    def blocking(self) -> bool:
        """An error that is proven (not behind an undecided guard, not in a module nothing runs)."""
        return self.finding.severity is Severity.ERROR and not self.finding.conditional and self.finding.rule != "cannot-judge"


@record
class DownstreamResult:
    """One downstream against the change: what breaks, how many findings the change fixes."""

    spec: str
    label: str
    outcome: Outcome
    breaks: tuple[Break, ...] = ()
    fixed: int = 0
    unchanged: int = 0
    origin: CodeOrigin | None = None  # None where there is no report ("unused", "unreadable")
    error: str | None = None  # why it could not be read (outcome "unreadable" only)


@record
class ChangeImpact:
    """The by-change view: one provider change and every downstream break it causes."""

    change: ProviderChange
    breaks: tuple[Break, ...]

    @property
    def downstreams(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.downstream for b in self.breaks))

    @property
    def blocking(self) -> bool:
        return any(b.blocking for b in self.breaks)


@record
class ImpactResult:
    """`impact OLD NEW`: each downstream's outcome, and the same breaks grouped by provider change."""

    old: CodeOrigin
    new: CodeOrigin
    downstreams: tuple[DownstreamResult, ...]
    duration_s: float = 0.0
    # The provider as its downstreams import it ("vllm"): a checkout's folder ("head") is not that.
    provider_name: str = ""

    @property
    def provider(self) -> str:
        """The provider's name as a downstream that does not use it is said not to ("vllm")."""
        return self.provider_name or self.new.name

    @property
    def breaks(self) -> tuple[Break, ...]:
        return tuple(b for d in self.downstreams for b in d.breaks)

    @property
    def by_change(self) -> tuple[ChangeImpact, ...]:
        """Each provider change with its breaks, blocking changes first, then by where the change is."""
        grouped: dict[tuple, list[Break]] = {}
        changes: dict[tuple, ProviderChange] = {}
        for b in self.breaks:
            grouped.setdefault(b.change.key, []).append(b)
            changes.setdefault(b.change.key, b.change)
        out = [ChangeImpact(changes[k], tuple(v)) for k, v in grouped.items()]
        return tuple(sorted(out, key=lambda c: (not c.blocking, c.change.location or "~", c.change.symbol, c.change.summary)))

    @property
    def summary(self) -> str:
        """One line: "old -> new: 5 downstreams, 2 broken, 1 clean, 2 do not use vllm; 3 provider changes
        behind 4 findings"."""
        counts: Counter[str] = Counter(d.outcome for d in self.downstreams)
        unused = f"{'does' if counts['unused'] == 1 else 'do'} not use {self.provider}"
        words = (("breaks", "broken"), ("conditional", "with conditional findings only"), ("clean", "clean"),
                 ("unused", unused), ("unreadable", "not readable"))  # fmt: skip
        parts = [f"{counts[o]} {word}" for o, word in words if counts[o]]
        total, changes, found = len(self.downstreams), len(self.by_change), len(self.breaks)
        return (
            f"{self.old.name_version} -> {self.new.name_version}: {total} downstream{'s' if total != 1 else ''}, "
            + ", ".join(parts) + f"; {changes} provider change{'s' if changes != 1 else ''} "
            f"behind {found} finding{'s' if found != 1 else ''}"
        )

    def exit_code(self) -> int:
        """1 when a downstream breaks (a proven error the change introduces), else 0: one that does not
        use the provider, or cannot be read, is said, never a failure."""
        return 1 if any(d.outcome == "breaks" for d in self.downstreams) else 0
