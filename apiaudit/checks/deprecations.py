"""Deprecation forecast: calls that still work today but use what the provider marks as deprecated.

A provider callable is deprecated when it (or its class) is decorated with PEP 702's
`deprecated` (`typing_extensions` or `warnings`), or when its body warns with
`DeprecationWarning`/`FutureWarning` unconditionally, or when the name it is called by is served
by a module `__getattr__` that warns so (a shim kept for a name that moved). A keyword is deprecated when the body
warns only under a test of that parameter (`if old is not None: warnings.warn(...)`), or when
a decorator from the provider that itself warns so is given the keyword's name as a string
(a `deprecate_kwargs("old")`-style decorator). Each such use is a `deprecated-use` warning;
`apiaudit matrix` says in which later release the name or keyword is gone.

The provider's files are read with `ast` only (never imported), by the index's Griffe extension
as it loads them; resolution goes through the provider index, so re-exports are followed as for
every other check.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from apiaudit.cache import codec
from apiaudit.consumer.records import ConsumerFile, Site, Use
from apiaudit.evidence import DeprecationFacts
from apiaudit.findings import Finding, Severity
from apiaudit.infra.frozen import record
from apiaudit.provider.deprecation_marks import Marks

RULE = "deprecated-use"
_PEP702_MODULES = ("typing_extensions", "warnings")


@record
class Deprecation:
    """What the provider says is deprecated about one callable."""

    whole: str | None = None  # the message when the callable itself is deprecated
    keywords: tuple[tuple[str, str], ...] = ()  # (keyword, message)


class Forecaster:
    """Deprecations of provider callables, read from the marks the index's Griffe extension
    recorded on each definition (`provider.deprecation_marks`); answers kept per symbol."""

    def __init__(self, index, packages: tuple[str, ...]):
        self.index = index
        self.packages = packages
        self._facts: dict[str, tuple[str, Deprecation] | None] = {}
        self._warning_decorators: dict[str, bool] = {}

    def _definition(self, dotted: str) -> tuple[str, Marks, Marks | None] | None:
        """(defining path, its marks, its `__init__`'s marks for a class) behind `dotted`, or None."""
        from apiaudit.provider.records import Found, SymbolKind

        resolution = self.index.resolve(dotted)
        if not isinstance(resolution, Found) or resolution.symbol.kind not in (SymbolKind.FUNCTION, SymbolKind.CLASS):
            return None
        obj = self.index.object_at(resolution.symbol.path)
        if obj is None:
            return None
        init = None
        if resolution.symbol.kind is SymbolKind.CLASS:
            member = obj.members.get("__init__") if hasattr(obj, "members") else None
            init = _marks(member) if member is not None and not member.is_alias else None
        return resolution.symbol.path, _marks(obj), init

    def _decorator_warns(self, dotted: str) -> bool:
        """Whether a provider decorator factory's code warns with a deprecation category."""
        if dotted not in self._warning_decorators:
            self._warning_decorators[dotted] = False  # a decorator that decorates itself stops here
            found = self._definition(dotted)
            self._warning_decorators[dotted] = bool(found and found[1].warns)
        return self._warning_decorators[dotted]

    def _decorators(self, marks: Marks) -> tuple[str | None, dict[str, str]]:
        whole: str | None = None
        keywords: dict[str, str] = {}
        for decorator in marks.decorators:
            target = decorator.target
            if target.rsplit(".", 1)[-1] == "deprecated" and target.rsplit(".", 1)[0] in _PEP702_MODULES:
                whole = decorator.message
            elif decorator.is_call and decorator.strings and target.split(".")[0] in self.packages:
                if self._decorator_warns(target):
                    for name in decorator.strings:
                        keywords[name] = decorator.keyword_string or f"'{name}' is deprecated"
        return whole, keywords

    def facts(self, dotted: str) -> tuple[str, Deprecation] | None:
        """(defining path, Deprecation) of what `dotted` names, or None when nothing about it is deprecated."""
        if dotted in self._facts:
            return self._facts[dotted]
        # Plain values, kept in the index memo: a warm scan answers them from the index cache
        # instead of loading provider modules again.
        memo = getattr(self.index, "memo", None)
        key = ("deprecation", dotted)
        if memo is not None and key in memo:
            self._facts[dotted] = memo[key]
            return memo[key]
        result = self._compute(dotted)
        self._facts[dotted] = result
        if memo is not None:
            memo[key] = result
        return result

    def _compute(self, dotted: str) -> tuple[str, Deprecation] | None:
        shim = self.index.getattr_deprecation(dotted) if hasattr(self.index, "getattr_deprecation") else None
        if shim is not None:
            # Served by a module __getattr__ that warns: the old name is what is deprecated.
            return dotted, Deprecation(shim)
        found = self._definition(dotted)
        if found is None:
            return None
        path, marks, init = found
        whole, keywords = self._decorators(marks)
        if init is not None:  # a class: its __init__ says what calling it does
            init_whole, init_keywords = self._decorators(init)
            whole = whole or init_whole or init.whole
            keywords = {**dict(init.keywords), **init_keywords, **keywords}
        else:
            whole = whole or marks.whole
            keywords = {**dict(marks.keywords), **keywords}
        if keywords:
            # A keyword a decorator renames: its new name says more than the decorator's arguments.
            renamed = self._renamed(path)
            keywords = {k: f"renamed to '{renamed[k]}'" if k in renamed else message for k, message in keywords.items()}
        if whole or keywords:
            return path, Deprecation(whole, tuple(sorted(keywords.items())))
        return None

    def _renamed(self, path: str) -> dict[str, str]:
        """{keyword: the parameter it fills} for the keywords a decorator renames before a call of
        `path` reaches it (the index's signatures say)."""
        info = self.index.call(path, via="class")
        signatures = (*info.signatures, *((info.fallback,) if info.fallback is not None else ()))
        return {alias.keyword: alias.param for signature in signatures for alias in signature.aliases if alias.param}


def _marks(obj) -> Marks:
    from apiaudit.provider.extension import (
        facts,  # with Griffe's objects, Griffe is loaded already
    )

    found = facts(obj).get("deprecation")
    return found if isinstance(found, Marks) else Marks()


def _source(lines: tuple[str, ...], site: Site) -> str | None:
    if not lines or site.line < 1:
        return None
    end = site.end_line or site.line
    return "\n".join(lines[site.line - 1 : end]) or None


def _calls(use: Use) -> Iterable[tuple[str, Use, int]]:
    """(dotted path called, use, step index) for each call of a provider name along a chain of attributes."""
    if use.root.kind != "symbol":
        return
    dotted = use.root.name
    for i, step in enumerate(use.steps):
        if step.kind == "attr" and step.name:
            dotted = f"{dotted}.{step.name}"
        elif step.kind == "call" and step.call is not None:
            if step.check:
                yield dotted, use, i
            return
        else:
            return


def find_deprecations(forecaster: Forecaster, file: ConsumerFile, consumer: str) -> list[Finding]:
    """A `deprecated-use` warning for each call of a deprecated provider callable or keyword in
    one consumer file (`forecaster`: one per release, shared by every file of a scan)."""
    out: list[Finding] = []
    if file.error is None:
        for use in file.uses:
            for dotted, _, i in _calls(use):
                known = forecaster.facts(dotted)
                if known is None:
                    continue
                path, deprecation = known
                call = use.steps[i].call
                short = path.rsplit(".", 1)[-1] if not path.endswith(".__init__") else path.rsplit(".", 2)[-2]
                at = Finding(
                    rule=RULE, severity=Severity.WARNING, consumer=consumer, path=file.path, line=use.site.line,
                    column=use.site.column, end_line=use.site.end_line, end_column=use.site.end_column, callee=path,
                    param=None, message="", source=_source(file.lines, use.site),
                )  # fmt: skip
                if deprecation.whole:
                    out.append(replace(
                        at, message=f"{short}() is deprecated: {deprecation.whole}",
                        advice="Move off it before the provider release that removes it (apiaudit matrix says which).",
                        facts=DeprecationFacts("callable"),
                    ))  # fmt: skip
                used = set(call.keyword_names()) if call else set()
                for keyword, message in deprecation.keywords:
                    if keyword in used:
                        out.append(replace(
                            at, param=keyword, message=f"{short}(): the keyword '{keyword}' is deprecated: {message}",
                            advice=f"Stop passing {keyword}=... before the release that removes it.",
                            facts=DeprecationFacts("keyword"),
                        ))  # fmt: skip
    return out


codec.register(Deprecation)  # its facts are kept in the provider index cache
