"""The provider change behind each finding a downstream has on NEW and not on OLD.

`explain` already says what changed between two releases for one finding (`describe_change`:
a parameter removed or renamed, a name moved, an attribute gone), by re-checking the finding's
own site against each release through the engine seam. `impact` asks it of the two sides of a
provider change, and adds where the changed definition is on each side, so that a report can
put the finding on the provider's own changed line.
"""

from __future__ import annotations

from pathlib import Path
from apiaudit.evidence import AttributeFacts, attribute_of
from apiaudit.findings import CodeOrigin, Finding, Report
from apiaudit.impact.results import Break, ProviderChange
from apiaudit.matrix.explain import Change, describe_change, load_release
from apiaudit.provider.records import Found
from apiaudit.recipes.changes import ChangeKind
from apiaudit.sources.base import CodeTree

class Sides:
    """OLD and NEW as scan sees them, each prepared once and shared by every downstream."""

    def __init__(self, old_setup, new_setup, cache_dir: Path | None):
        self.old_setup, self.new_setup, self.cache_dir = old_setup, new_setup, cache_dir

    def releases(self, key: str, consumer: CodeTree):
        """OLD and NEW loaded for one consumer (`key`: what its findings name it with)."""
        files: dict = {}  # the consumer read once where both sides read it alike
        old, new = (
            load_release(setup.provider.version or side, setup, {key: consumer}, self.cache_dir, files=files)
            for side, setup in (("old", self.old_setup), ("new", self.new_setup))
        )
        return old, new


def tie_findings(report: Report, trees: dict[str, CodeTree], sides: Sides, label: str) -> tuple[Break, ...]:
    """Each introduced finding of an upgrade-delta `report` with the provider change behind it.

    `trees` maps a finding's `consumer` to the tree it was read from (a downstream audited with
    its dependencies has several). cannot-judge findings are no break and are left out."""
    origins = {o.key: o for o in report.consumers}
    loaded: dict[str, tuple] = {}
    out = []
    for finding in report.findings:
        if finding.rule == "cannot-judge":
            continue
        tree = trees.get(finding.consumer)
        change = None
        if tree is not None:
            if finding.consumer not in loaded:
                loaded[finding.consumer] = sides.releases(finding.consumer, tree)
            old, new = loaded[finding.consumer]
            change = provider_change(finding, old, new)
        out.append(Break(label, finding, change or _unexplained(finding), site_of(finding, origins.get(finding.consumer))))
    return tuple(out)


def provider_change(finding: Finding, old, new) -> ProviderChange:
    """What changed between `old` and `new` (releases loaded for the finding's consumer), with where
    the changed definition lies on each side."""
    change = describe_change(finding, old, new)
    symbol = _symbol(finding, change)
    if finding.rule == "abstract-unimplemented" and finding.callee and finding.param:
        return _abstract_change(finding, finding.callee, finding.param, old.index, new.index)
    return ProviderChange(
        kind=change.kind,
        symbol=symbol,
        location=_new_location(finding, change, symbol, new.index),
        # explain's text of a signature ends with where it is defined, the line a class's
        # constructor has (not the class's own line)
        old_location=_location_in(change.before) or _old_location(finding, change, symbol, old.index),
        before=_strip_location(change.before),
        after=_strip_location(change.after),
        old_name=change.old_name,
        new_name=change.new_name,
        note=change.note or _rule_summary(finding, change),
        rule=finding.rule,
    )


def _abstract_change(finding: Finding, base: str, member: str, old_index, new_index) -> ProviderChange:
    """A base class whose abstract set grew: the change is the member made abstract on NEW."""
    was_abstract = member in old_index.abstract_members(base)
    existed = _member(old_index, base, member)
    note = (
        f"`{member}` is abstract on both sides; it was defined by a class between" if was_abstract
        else f"made `{member}` abstract" if existed else f"gained abstract member `{member}`"
    )  # fmt: skip
    return ProviderChange(
        ChangeKind.OTHER, base, _member(new_index, base, member) or finding.provider_location, existed or _located(old_index, base),
        new_name=member, note=note, rule=finding.rule,
    )  # fmt: skip


def _rule_summary(finding: Finding, change: Change) -> str:
    """A change of no finer kind (the provider's call of a hook, a rule's range) said as its rule says it."""
    if change.kind is not ChangeKind.OTHER:
        return ""
    from apiaudit.findings import ENGINE_RULES

    rule = ENGINE_RULES.get(finding.rule)
    return rule.summary if rule is not None else finding.message


def _symbol(finding: Finding, change: Change) -> str:
    if change.kind is ChangeKind.MOVED_SYMBOL and change.old_name:
        return change.old_name
    return change.symbol or finding.callee or attribute_of(finding.facts) or finding.rule


def _new_location(finding: Finding, change: Change, symbol: str, index) -> str | None:
    """Where the changed definition is on NEW: a moved name where it went, an attribute's class
    (its member is gone), a callable's definition (the finding's own provider location)."""
    if change.kind is ChangeKind.MOVED_SYMBOL and change.new_name:
        return _located(index, change.new_name) or finding.provider_location
    if change.kind is ChangeKind.RENAMED_ATTRIBUTE and change.new_name:
        member = _member(index, symbol, change.new_name)
        if member:
            return member
    return finding.provider_location or _located(index, symbol)


def _old_location(finding: Finding, change: Change, symbol: str, index) -> str | None:
    """Where the definition was on OLD: the member itself for an attribute, else the symbol."""
    facts = finding.facts if isinstance(finding.facts, AttributeFacts) else None
    if facts is not None and change.old_name:
        return _member(index, facts.owner, change.old_name) or _located(index, facts.owner)
    if change.kind is ChangeKind.RENAMED_ATTRIBUTE and change.old_name:
        return _member(index, symbol, change.old_name) or _located(index, symbol)
    return _located(index, symbol)


def _located(index, dotted: str) -> str | None:
    if not dotted:
        return None
    resolution = index.resolve(dotted)
    return resolution.symbol.location if isinstance(resolution, Found) else None


def _member(index, owner: str, name: str) -> str | None:
    return next((m.location for m in index.members(owner) if m.name == name), None)


def _location_in(text: str | None) -> str | None:
    if text and text.endswith(")") and "  (" in text:
        return text.rsplit("  (", 1)[1][:-1]
    return None


def _strip_location(text: str | None) -> str | None:
    """explain's text of a definition ends with its location in brackets: the record keeps that apart."""
    if text and text.endswith(")") and "  (" in text:
        return text.rsplit("  (", 1)[0]
    return text


def _unexplained(finding: Finding) -> ProviderChange:
    """A finding whose consumer tree is not at hand: tied to its callee as NEW has it."""
    return ProviderChange(ChangeKind.OTHER, finding.callee or finding.rule, finding.provider_location, rule=finding.rule)


def site_of(finding: Finding, origin: CodeOrigin | None) -> str:
    path = origin.shown(finding.path) if origin is not None else finding.path
    return f"{path}:{finding.line}"
