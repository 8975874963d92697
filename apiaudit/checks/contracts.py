"""The contract the provider calls: consumer code that the provider itself calls must accept
what the provider passes on the audited release.

The same binding check as a consumer's call into the provider, with the roles swapped: the
signature is the consumer's (`consumer/contracts.py`), the call is the provider's own
(`provider/callsites.py`). Rules:

- `override-incompatible`: a consumer class derived from (or injected into) a provider class
  overrides a method the provider calls; a provider call on a receiver of a class in the
  consumer class's MRO cannot bind to the override. A provider call that unpacks the result
  into n names, where every `return` of the override returns a tuple of another length, is a
  warning.
- `constructor-incompatible`: the provider's factory (a `[[plugin]]` rule) builds the consumer
  class and none of its construction calls binds to the class's `__init__`.
  A class the consumer names for the factory (`named_plugins`) is checked so whatever its bases.
- `entry-point-incompatible`: the provider loads an entry point the consumer declares in a group
  an [[entry_point]] rule names and calls the function it names with arguments it cannot take
  (a class named there is `constructor-incompatible`).
- `abstract-unimplemented`: a concrete consumer class (it declares no abstract method and no
  consumer class derives from it) leaves an abstract member of its provider bases undefined.
- `replacement-incompatible`: a consumer function put where a provider method was (`Cls.m = f`,
  `obj.m = types.MethodType(f, obj)`, `setattr`, `mock.patch.object`) cannot take what a
  provider call of that method passes (an error when the object's class is known, a warning
  when it is one of several).
- `patch-target-missing`: the attribute replaced does not exist on the release: the patch
  installs a name nothing calls (a warning).

A provider call counts only where it can run on the consumer's objects: one made on `self` in
a method the instance never runs binds nothing (`_Entry`), nor does one made in a provider
function the consumer replaces on its class, or in one the release only stores into an attribute
of `self` that only such replaced functions call (`caller_replaced`), and one that only a configuration
runs (a branch of an `if/else` chain, a module imported only in one) makes the finding
conditional, with the provider's guard. Where calling an object runs one of its methods
(`[[call_dispatch]]`: `torch.nn.Module` -> `forward`), the provider's `self.model(...)` is a
call of that method too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import replace

from apiaudit.checks.binding import Problem, bind, bind_any
from apiaudit.checks.context import CheckContext
from apiaudit.checks.flows import (
    built_only_by_provider,
    built_where,
    consumer_tree,
    registered_classes,
    stored_by_consumer,
    substituted,
)
from apiaudit.checks.receivers import InstanceValue
from apiaudit.consumer.records import Arg, CallShape, ClassFacts, ConsumerFile, DefinedFunction, Replacement, Site, Use
from apiaudit.findings import Finding, Severity
from apiaudit.infra.frozen import record
from apiaudit.provider.records import Found, Missing, Param, ParamKind, ProviderCall, ProviderReference, ReachedVia, SelfUse, Signature, SymbolKind
from apiaudit.recipes.records import EntryPointRule, PluginRule

_NOWHERE = Site(0, 0)


def contract_findings(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """Every consumer class of `file` that derives from or is injected into provider classes,
    judged against the calls the provider makes of it on this release."""
    functions = ctx.methods_by_class
    findings: list[Finding] = []
    overrides: list[tuple[ClassFacts, DefinedFunction, list[str], frozenset[str]]] = []
    named = named_plugins(ctx)
    for facts in file.classes:
        heads, provider_mro = provider_mro_of(ctx, facts)
        by_name = named.get(facts.dotted, ())
        if not heads and not by_name:
            continue
        methods = _consumer_methods(ctx, facts, functions)
        overrides.extend((facts, f, provider_mro, frozenset(methods)) for f in _overriding(ctx, heads, methods))
        findings.extend(_constructor(ctx, file, facts, provider_mro, methods.get("__init__"), by_name))
        if heads:
            findings.extend(_abstract(ctx, file, facts, heads, provider_mro, methods, functions, bool(by_name)))
    findings.extend(_entry_points(ctx, file))
    findings.extend(registered_hook_findings(ctx, file))
    if file.replacements:
        findings.extend(_replacements(ctx, file))
    if overrides:
        calls = ctx.index.calls_of(f.dotted.rpartition(".")[2] for _, f, _, _ in overrides)
        for facts, function, mro, own in overrides:
            name = function.dotted.rpartition(".")[2]
            reaching = reaching_calls(ctx, name, mro, calls.get(name, ()), own)
            built = (facts.dotted, *ctx.subclasses_of(facts.dotted))
            findings.extend(_override(ctx, file, facts, function, reaching, _Entry(ctx, frozenset(mro), own, built)))
    return findings


def reaching_calls(
    ctx: CheckContext, name: str, provider_mro: list[str], calls: tuple[ProviderCall, ...] | list[ProviderCall], own: frozenset[str]
) -> list[ProviderCall]:
    """The provider's calls of `name` that reach the consumer's override of it.

    The override's contract is the nearest declaration of `name` in the consumer class's MRO,
    provider class `D`: a call whose receiver is declared as `D`, or as a provider class between
    the consumer class and `D` that derives from `D`, reaches it. A call typed as a base above `D`
    reaches it only where `D`'s own declaration takes what the call passes: where `D` re-declares
    the method with other parameters, such a call serves the base's other subclasses (the
    provider would fail on a `D` there too), and proves nothing about this class. A call the
    provider makes on `self` inside a method the consumer class overrides never runs on its
    instances."""
    candidates = [c for c in calls if c.receiver in provider_mro and c.caller not in own]
    declaring = next((k for k in provider_mro if _declares(ctx, k, name)), None)
    if declaring is None or not candidates:
        return candidates
    at = provider_mro.index(declaring)
    below = {k for k in provider_mro[: at + 1] if k == declaring or declaring in ctx.index.mro_paths(k)}
    info = ctx.index.call(f"{declaring}.{name}", via="instance")
    reaching: list[ProviderCall] = []
    for call in candidates:
        if call.receiver in below or info.unknown or not info.signatures:
            reaching.append(call)
            continue
        binding = bind_any(info.signatures, info.fallback, _shape(call), f"{declaring}.{name}")
        if binding.uncertain or not any(p.severity is Severity.ERROR for p in binding.problems):
            reaching.append(call)
    return reaching


def _declares(ctx: CheckContext, class_path: str, name: str) -> bool:
    """Whether the provider class's own body defines `name` (not one of its bases)."""
    found = ctx.index.class_member(class_path, name, instance=False)
    return isinstance(found, Found) and found.symbol.path == f"{class_path}.{name}"


class _Entry:
    """Whether an instance of the consumer class can come to run a provider method (so that a
    call the method makes on `self` reaches the override). Asked only of a call that would make
    a finding: it reads the release's references to the method and, up the chain, its callers'."""

    _DEPTH = 5  # callers followed; beyond, the method counts as run

    def __init__(self, ctx: CheckContext, mro: frozenset[str], own: frozenset[str], classes: tuple[str, ...] = ()):
        # `classes`: the consumer class and those deriving from it (whose objects the consumer may build)
        self.ctx, self.mro, self.own, self.classes = ctx, mro, own, classes
        self.known: dict[str, bool] = {}
        self.sure: dict[str, bool] = {}

    def reaches(self, call: ProviderCall) -> bool:
        return call.caller is None or self.runs(call.caller, self._DEPTH)

    def certain(self, call: ProviderCall) -> bool:
        """Whether a call `reaches` lets through surely runs on an instance: made outside a method,
        or in one that surely runs (`surely_runs`)."""
        return call.caller is None or self.surely_runs(call.caller, self._DEPTH)

    def surely_runs(self, method: str, depth: int) -> bool:
        """True when the consumer calls `method` on `self` or on an object it builds of the class
        (`trainer = MyTrainer(...)`, then `trainer.train()`), or nothing in the release names it
        (something outside calls it), or the release calls it on an object of a class the
        instance is, outside the methods it overrides, in a method that surely runs. A method the
        release calls only on objects of classes it cannot tell (`child_impl.append(...)`, as a
        list's `append` reads) may run on the instance, and may never."""
        if method in self.sure:
            return self.sure[method]
        self.sure[method] = False  # reached through itself only: its other callers decide
        surely = (
            depth <= 0 or calls_on_self(self.ctx, method) or calls_on_built(self.ctx, method, self.classes)
            or self._surely_from_release(method, depth)
        )  # fmt: skip
        self.sure[method] = surely
        return surely

    def _surely_from_release(self, method: str, depth: int) -> bool:
        refs = self.ctx.index.references_of([method])[method]
        return not refs or any(
            ref.receiver is not None and ref.receiver in self.mro
            and (ref.caller is None or (ref.caller not in self.own and self.surely_runs(ref.caller, depth - 1)))
            for ref in refs
        )  # fmt: skip

    def runs(self, method: str, depth: int) -> bool:
        """False only when the release names `method` somewhere and every place is a call on an
        object of a class the instance is not, or on `self` inside a method the instance never
        runs (the consumer overrides it, or nothing runs it); the consumer's own code naming it,
        or nothing naming it at all (something outside calls it), counts as run."""
        if method in self.known:
            return self.known[method]
        self.known[method] = True  # reached through itself: its other callers decide
        # the consumer's own text first: the release's references cost a pass over its files
        runs = depth <= 0 or consumer_names(self.ctx, method) or self._run_from_release(method, depth)
        self.known[method] = runs
        return runs

    def _run_from_release(self, method: str, depth: int) -> bool:
        """Whether one of the release's references to `method` may run it on an instance (named
        nowhere there: something outside the release calls it)."""
        refs = self.ctx.index.references_of([method])[method]
        return not refs or any(self._reaches(ref, depth) for ref in refs)

    def _reaches(self, ref: ProviderReference, depth: int) -> bool:
        """Whether an instance may run the method through this reference: an object of unknown
        class (or the name used as a value), or a call on a class it is, outside the methods it
        overrides, in a method it runs."""
        if ref.receiver is None:
            return True
        return ref.receiver in self.mro and (ref.caller is None or (ref.caller not in self.own and self.runs(ref.caller, depth - 1)))


def calls_on_self(ctx: CheckContext, name: str) -> bool:
    """Whether the consumer's code calls `name` on `self` or `super()`: on its own objects."""
    called = re.compile(rf"\b(?:self|super\([^)]*\))\.{re.escape(name)}\s*\(")
    return any(name in f.source and called.search(f.source) for f in ctx.files)


def calls_on_built(ctx: CheckContext, name: str, classes: tuple[str, ...]) -> bool:
    """Whether a consumer file binds a name to an object it builds of one of `classes`
    (`trainer = MyTrainer(...)`) and calls `name` on that name there (`trainer.train()`)."""
    shorts = {c.rpartition(".")[2] for c in classes}
    for f in ctx.files:
        text = f.source
        if name not in text:
            continue
        for short in shorts:
            if f"{short}(" not in text:
                continue
            for holder in re.findall(rf"(\w+)\s*=\s*{re.escape(short)}\(", text):
                if re.search(rf"\b{re.escape(holder)}\.{re.escape(name)}\s*\(", text):
                    return True
    return False


def consumer_names(ctx: CheckContext, name: str) -> bool:
    """Whether the consumer's code may call `name`: a call `.name(`, the name as a string, or an
    attribute read `.name` in a file that never stores it (`self.name = ...` makes it data there,
    as in `provider/callsites.find_references`)."""
    word = re.escape(name)
    called = re.compile(rf"\.{word}\s*\(|[\"']{word}[\"']")
    read, stored = re.compile(rf"\.{word}\b"), re.compile(rf"\.{word}\s*(?::[^=]*)?=(?!=)")
    for f in ctx.files:
        text = f.source
        if name not in text:
            continue
        if called.search(text) or (read.search(text) and not stored.search(text)):
            return True
    return False


def _conditional(ctx: CheckContext, finding: Finding, call: ProviderCall) -> Finding:
    """The finding, conditional when the provider's call runs only in one configuration: in a
    branch of an `if/else` chain, or in a module the release imports only in one."""
    guard = call.guard or ctx.index.import_guard(_module_of(call.location))
    return replace(finding, conditional=True, guard=f"the provider's {guard}") if guard else finding


def _guarded(call: ProviderCall) -> bool:
    return call.guard is not None


@record
class CallerReplaced:
    """The provider function a provider call is made in, replaced by the consumer's own on the
    same class (`Cls.caller = mine`): the provider's body, and the call in it, no longer runs.
    `sure`: the replacement is installed whenever the judged code is (a plain assignment or
    `setattr` at the top of the same module, under no guard); else `reason` says where it is."""

    sure: bool
    reason: str


def caller_replaced(ctx: CheckContext, call: ProviderCall, file: ConsumerFile) -> CallerReplaced | None:
    """Whether the consumer replaces the provider function `call` is made in (`call.enclosing`,
    `pkg.mod.Cls.method`) on that very class, keeping no way to its original: the call then never
    runs, on any object, and is no evidence against an override or a replacement judged in `file`.
    None when it does not (a replacement on a subclass leaves the class's own method to its other
    subclasses; a module function replaced by name still runs for those who imported it), or when
    the consumer keeps the original (reads `Cls.method`, `getattr(Cls, "method")`, or its patching
    helper hands it in), which the replacement may call. Failing that, the same for the methods
    that call the attribute the calling function is only ever stored into (`_held_caller_replaced`)."""
    if call.enclosing is None:
        return None
    owner, _, method = call.enclosing.rpartition(".")
    found = _replacement_of(ctx, method, file, lambda target: target == owner)
    if found is None:
        return _held_caller_replaced(ctx, call, file)
    short = owner.rpartition(".")[2]
    verdict = _replaced_for_good(ctx, found, short, method, file)
    if verdict is None or verdict.sure:
        return verdict
    return CallerReplaced(
        False, f"{call.location} is in {short}.{method}, which the consumer replaces {verdict.reason}: where that replacement is installed, the call never runs",
    )  # fmt: skip


def _replacement_of(
    ctx: CheckContext, method: str, file: ConsumerFile, on: Callable[[str], bool], *, any_attribute: bool = False,
) -> tuple[ConsumerFile, Replacement, str] | None:
    """The consumer's replacement of `method` (with `any_attribute`, of any) on a provider class
    `on` accepts (the file, the replacement, the class's path), one surely installed with `file`
    first (`_installed_with`)."""
    found: tuple[ConsumerFile, Replacement, str] | None = None
    for other in ctx.files:
        for replacement in other.replacements:
            if replacement.attribute != method and not any_attribute or replacement.target is None:
                continue
            target = ctx.index.class_named(replacement.target)
            if target is not None and on(target.path):
                if found is None or _installed_with(replacement, other, file) and not _installed_with(found[1], found[0], file):
                    found = (other, replacement, target.path)
    return found


def _replaced_for_good(
    ctx: CheckContext, found: tuple[ConsumerFile, Replacement, str], short: str, method: str, file: ConsumerFile,
) -> CallerReplaced | None:
    """None where the consumer keeps the original of `short.method` (it may call it); sure where
    the replacement is installed whenever `file`'s code runs; else not sure, `reason` saying
    where it is installed (`at path:line (how)`)."""
    where, replacement, _ = found
    if replacement.lead or _original_read(ctx, short, method):
        return None
    if _installed_with(replacement, where, file):
        return CallerReplaced(True, "")
    how = (
        f"under `{replacement.guard}`" if replacement.guard else
        "in another module, which may not be imported" if where.path != file.path else "inside a block, which may not run"
    )  # fmt: skip
    return CallerReplaced(False, f"at {where.path}:{replacement.site.line} ({how})")


def _held_caller_replaced(ctx: CheckContext, call: ProviderCall, file: ConsumerFile) -> CallerReplaced | None:
    """Whether the provider method `call` is made in runs only through an attribute of `self`
    that holds it, called only in methods the consumer replaces: the method is never called by
    name on its class's objects, only read as a value (`self.method`) and stored into `self.attr`,
    there or through a method of the class that returns it and whose result is stored so
    (`self._forward = self.dispatch()`, `dispatch` returning `self.forward_xpu`); and every call
    of `self.attr` is in a method `G` of a class `C` that the consumer replaces on a class of the
    calling method's class's MRO at or below `C` (its instances' `G` is the consumer's now). None
    where any of this cannot be told (a use of either name on an object of unknown class, a value
    handed anywhere else, a call of `attr` outside `self`'s methods)."""
    assert call.enclosing is not None
    owner, _, method = call.enclosing.rpartition(".")
    if ctx.index.class_named(owner) is None:
        return None
    lineage = set(ctx.index.mro_paths(owner)) - {owner}
    if not _replacement_of(ctx, "", file, lambda target: target == owner or target in lineage, any_attribute=True):
        return None  # nothing replaced on the class or its bases: no pass over the release

    def related(cls: str) -> bool:  # its objects may run `owner`'s method: a base or a subclass
        return cls == owner or cls in lineage or owner in ctx.index.mro_paths(cls)

    attributes = _holders(ctx, method, related)
    if not attributes:
        return None
    doubts: list[str] = []
    for attribute in sorted(attributes):
        called = False
        for ref in ctx.index.references_of([attribute])[attribute]:
            if ref.receiver is None:
                return None  # on an object of unknown class, or named as a string
            if not related(ref.receiver):
                continue
            if ref.caller is None or ref.enclosing is None:
                return None  # read as a value, or called on another object than `self`
            cls, _, caller = ref.enclosing.rpartition(".")
            found = _replacement_of(ctx, caller, file, lambda target: (target == owner or target in lineage) and cls in ctx.index.mro_paths(target))
            if found is None:
                return None  # a method no replacement covers calls it
            verdict = _replaced_for_good(ctx, found, found[2].rpartition(".")[2], caller, file)
            if verdict is None:
                return None
            called = True
            if not verdict.sure:
                doubts.append(
                    f"`self.{attribute}`, called in {cls.rpartition('.')[2]}.{caller}, which the consumer replaces on "
                    f"{found[2].rpartition('.')[2]} {verdict.reason}"
                )  # fmt: skip
        if not called:
            return None  # nothing calls it where the engine can see: something else may
    if not doubts:
        return CallerReplaced(True, "")
    return CallerReplaced(
        False,
        f"{call.location} is in {owner.rpartition('.')[2]}.{method}, which the provider reaches only through {'; '.join(doubts)}: "
        "where that replacement is installed, the call never runs",
    )  # fmt: skip


def _holders(ctx: CheckContext, method: str, related: Callable[[str], bool]) -> set[str] | None:
    """The attributes of `self` that the provider stores `self.method` into, on the objects
    `related` accepts the class of: directly, or as what a method returning it returns. None
    where `method` is called by name, or its value or the returning method goes elsewhere."""
    attributes: set[str] = set()
    for use in _uses(ctx, method, related) or ():
        if use.called:
            return None  # called by name: reached directly
        if use.stored is not None:
            attributes.add(use.stored)
        elif use.returned:
            results = _uses(ctx, use.method, related)
            if not results or any(not r.called or r.stored is None for r in results):
                return None  # the returning method's result goes somewhere else too
            attributes.update(r.stored for r in results if r.stored is not None)
        else:
            return None
    return attributes or None


def _uses(ctx: CheckContext, name: str, related: Callable[[str], bool]) -> tuple[SelfUse, ...] | None:
    """Every `self.name` on objects `related` accepts the class of (`Index.self_uses`); None where
    the release also names it elsewhere than there (an object of unknown class, a string, a call
    on a typed object that is not `self`)."""
    uses = tuple(u for u in ctx.index.self_uses([name])[name] if related(u.owner))
    places = {u.location for u in uses}
    for ref in ctx.index.references_of([name])[name]:
        if ref.receiver is None or related(ref.receiver) and ref.location not in places:
            return None
    return uses


def _installed_with(replacement: Replacement, where: ConsumerFile, file: ConsumerFile) -> bool:
    """Whether the replacement is installed whenever code of `file` runs: in that module, a
    statement of its top level (column 0: inside no `if`, function or `with`) that assigns it or
    calls `setattr`, under no guard."""
    plain = replacement.via in ("assign", "setattr", "method-type")
    return where.path == file.path and plain and replacement.site.column == 0 and replacement.guard is None


def _original_read(ctx: CheckContext, short: str, method: str) -> bool:
    """Whether the consumer's code reads `Cls.method` as a value (not only assigns it) or names it
    to `getattr`: it may keep the provider's original, and call it. Asked once a pair: the
    consumer's trees are walked for it, and every provider call of the method asks again."""
    key = (short, method)
    if key not in ctx.original_read_memo:
        ctx.original_read_memo[key] = _reads_original(ctx, short, method)
    return ctx.original_read_memo[key]


def _reads_original(ctx: CheckContext, short: str, method: str) -> bool:
    for file in ctx.files:
        if short not in file.source or method not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            return True  # unparsed: it may read it
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == method and isinstance(node.ctx, ast.Load):
                if isinstance(node.value, ast.Name) and node.value.id == short:
                    return True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
                owner, name = node.args[0], node.args[1]
                if isinstance(owner, ast.Name) and owner.id == short and isinstance(name, ast.Constant) and name.value == method:
                    return True
    return False


def _module_of(location: str) -> str:
    """`pkg/sub/mod.py:12` -> `pkg.sub.mod` (a package's `__init__.py` -> the package)."""
    path = location.rpartition(":")[0].removesuffix(".py").removesuffix("/__init__")
    return path.replace("/", ".")


def prefetch_provider_calls(ctx: CheckContext, *, workers: int = 1) -> None:
    """Look up, in one pass over the release (shared among `workers` processes), the provider's
    calls of every method the consumer's classes override (each file's check then reads them
    from the index's memo)."""
    functions = ctx.methods_by_class
    names: set[str] = set()
    for file in ctx.files:
        for facts in file.classes:
            heads, _ = provider_mro_of(ctx, facts)
            if heads:
                methods = _consumer_methods(ctx, facts, functions)
                names.update(f.dotted.rpartition(".")[2] for f in _overriding(ctx, heads, methods))
    # (A replaced attribute is looked up when its object's classes are known: `_replacements`.)
    if names:
        ctx.index.calls_of(names, workers=workers)


def _overriding(ctx: CheckContext, heads: list[str], methods: dict[str, DefinedFunction]) -> list[DefinedFunction]:
    """The consumer methods that override a method provider code defines."""
    return [
        function
        for name, function in methods.items()
        # __init__ is the constructor's contract; other dunders are Python's to call
        if not name.startswith("__") and function.kind != "property" and _declared_by_provider(ctx, heads, name)
    ]


def provider_mro_of(ctx: CheckContext, facts: ClassFacts) -> tuple[list[str], list[str]]:
    """(the provider classes the consumer class derives from directly or through its consumer
    bases, or is injected into; every provider class an instance of it is, in MRO order)."""
    bases: list[str] = []
    seen: set[str] = set()
    stack = [facts.dotted]
    while stack:
        dotted = stack.pop(0)
        if dotted in seen:
            continue
        seen.add(dotted)
        own = ctx.classes.get(dotted)
        if own is None:
            continue
        bases.extend(own.provider_bases)
        bases.extend(sorted(ctx.injected.get(dotted, ())))
        stack.extend(own.consumer_bases)
    heads: list[str] = []
    mro: list[str] = []
    for base in bases:
        res = ctx.index.resolve(base)
        if not (isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS):
            continue
        heads.append(res.symbol.path)
        for entry in ctx.index.mro_paths(res.symbol.path):
            if isinstance(entry, str) and entry not in mro:
                mro.append(entry)
    return heads, mro


def _consumer_methods(
    ctx: CheckContext, facts: ClassFacts, functions: dict[str, dict[str, DefinedFunction]]
) -> dict[str, DefinedFunction]:
    """name -> the consumer definition an instance of the class finds first (its own, then its
    consumer bases', depth first as written)."""
    found: dict[str, DefinedFunction] = {}
    seen: set[str] = set()

    def walk(dotted: str) -> None:
        if dotted in seen:
            return
        seen.add(dotted)
        for name, function in functions.get(dotted, {}).items():
            found.setdefault(name, function)
        own = ctx.classes.get(dotted)
        for base in own.consumer_bases if own else ():
            walk(base)

    walk(facts.dotted)
    return found


def _declared_by_provider(ctx: CheckContext, heads: list[str], name: str) -> bool:
    """A method one of the provider bases defines in provider code (not one only an external
    base such as `torch.nn.Module` has: the provider's calls of those are not read)."""
    for head in heads:
        found = ctx.index.class_member(head, name, instance=False)
        if isinstance(found, Found) and found.symbol.kind is SymbolKind.FUNCTION:
            return True
    return False


def signature_of(function: DefinedFunction) -> Signature:
    """The parameters a caller of `function` binds to: `self`/`cls` dropped for a method."""
    params = function.params[1:] if function.kind in ("method", "classmethod") and function.params else function.params
    return Signature(
        tuple(Param(p.name, ParamKind(p.kind), p.has_default) for p in params),
        origin=f"def {function.dotted.rpartition('.')[2]}",
    )


def _shape(call: ProviderCall) -> CallShape:
    args = [Arg("positional", None, _NOWHERE) for _ in range(call.positional)]
    args += [Arg("keyword", name, _NOWHERE) for name in call.keywords]
    if call.star:
        args.append(Arg("star", None, _NOWHERE))
    if call.starstar:
        args.append(Arg("starstar", None, _NOWHERE))
    return CallShape(tuple(args))


def _surplus_parameter(ctx: CheckContext, provider_callable: str, via: ReachedVia, signature: Signature) -> str | None:
    """For a call passing more positionals than the consumer's def takes: the name the provider's
    own definition gives the first one the def lacks (what a fix adds), if the provider says."""
    info = ctx.index.call(provider_callable, via=via)
    if not info.signatures:
        return None
    kinds = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
    theirs = [p.name for p in info.signatures[0].params if p.kind in kinds]
    mine = [p.name for p in signature.params if p.kind in kinds]
    surplus = [name for name in theirs[len(mine):] if name not in mine]
    return surplus[0] if surplus else None


def _passes(call: ProviderCall) -> str:
    parts = [f"{call.positional} positional"] if call.positional else []
    parts += [f"{k}=" for k in call.keywords]
    parts += ["*args"] if call.star else []
    parts += ["**kwargs"] if call.starstar else []
    return ", ".join(parts) or "no arguments"


def _override(
    ctx: CheckContext, file: ConsumerFile, facts: ClassFacts, function: DefinedFunction, calls: list[ProviderCall], entry: _Entry
) -> list[Finding]:
    """One finding per override: every provider call that cannot bind to it, listed (the first
    unguarded one decides whether the finding is certain), and a warning when a call unpacks its
    result into another number of names than it returns."""
    name = function.dotted.rpartition(".")[2]
    signature = signature_of(function)
    failing: list[tuple[ProviderCall, str, str | None]] = []
    unpacking: ProviderCall | None = None
    doubtful: dict[int, str] = {}  # id(call) -> why it may never run (`caller_replaced`)
    for call in sorted(calls, key=_guarded):  # a problem any unguarded call has is certain
        binding = bind(signature, _shape(call), function.dotted)
        if binding.uncertain:
            continue
        problems = [p for p in binding.problems if p.severity is Severity.ERROR]
        unpacks = (
            call.unpacks is not None and bool(function.returns) and None not in function.returns
            and call.unpacks not in function.returns
        )  # fmt: skip
        if not (problems or unpacks) or not entry.reaches(call):
            continue  # binds, or made on `self` in a method the consumer's instances never run
        if problems and _held_only_where_not_called(ctx, facts, call):
            continue  # on an attribute only consumer objects that never run the calling method hold
        if _holds_only_provider_objects(ctx, call):
            continue  # on an attribute the release fills only with objects of its own classes
        caller = caller_replaced(ctx, call, file)
        if caller is not None and caller.sure:
            continue  # made in a provider function the consumer replaced on its class: never runs
        if caller is not None:
            doubtful[id(call)] = caller.reason
        if problems:
            failing.append((call, problems[0].message, problems[0].param))
        if unpacks and unpacking is None:
            unpacking = call
    findings: list[Finding] = []
    short = facts.dotted.rpartition(".")[2]
    # a call that surely runs, in every configuration, first: any such failure makes the finding certain
    callers = {c.caller for c, _, _ in failing if c.caller is not None and not calls_on_self(ctx, c.caller)}
    if len(callers) > 1:
        ctx.index.references_of(callers)  # one pass over the release for all of them, not one each
    # a call that runs only from a provider class the plugin substitutes, or in a provider function
    # the consumer may have replaced: after every other one
    replaced = {id(c): why for c, _, _ in failing if (why := doubtful.get(id(c)) or _runs_only_from_substituted(ctx, c, name)) is not None}
    failing.sort(key=lambda item: (
        id(item[0]) in replaced, not entry.certain(item[0]),
        _guarded(item[0]) or ctx.index.import_guard(_module_of(item[0].location)) is not None,
    ))  # fmt: skip
    if failing:
        call, message, param = failing[0]
        # made on `self` in a method the release calls only on objects it cannot tell: not proven to run
        unproven = None if entry.certain(call) else (
            f"{call.location} runs only where {call.receiver.rpartition('.')[2]}.{call.caller} runs on such an object, and no code "
            f"proven to run calls {call.caller} on one (the release calls it on objects of classes it cannot tell)"
        )  # fmt: skip
        param = param or _surplus_parameter(ctx, f"{call.receiver}.{name}", "instance", signature)
        text = (
            f"{call.location} calls {call.receiver.rpartition('.')[2]}.{name}({_passes(call)}), which "
            f"{short}.{name} overrides: {message}"
        )
        others = [c for c, _, _ in failing[1:]]
        if others:
            shown = ", ".join(c.location for c in others[:_SITES_SHOWN])
            more = len(others) - _SITES_SHOWN
            text += f"; also {shown}" + (f" and {more} more" if more > 0 else "")
        why = replaced.get(id(call))  # set only where every failing call has one (they sort last)
        findings.append(
            _conditional(ctx, ctx.finding(
                file, function.site, "override-incompatible", text,
                callee=f"{call.receiver}.{name}", param=param, provider_location=call.location,
                signature=signature.render(name), severity=Severity.WARNING if why or unproven else None, reason=why or unproven,
            ), call)  # fmt: skip
        )
    if unpacking is not None:
        shown = " or ".join(str(n) for n in sorted({n for n in function.returns if n is not None}))
        findings.append(
            _conditional(ctx, ctx.finding(
                file, function.site, "override-incompatible",
                f"{unpacking.location} unpacks {name}(...) into {unpacking.unpacks} names; {short}.{name} returns {shown} values",
                callee=f"{unpacking.receiver}.{name}", severity=Severity.WARNING, provider_location=unpacking.location,
            ), unpacking)  # fmt: skip
        )
    return findings


def _held_only_where_not_called(ctx: CheckContext, facts: ClassFacts, call: ProviderCall) -> bool:
    """Whether the provider's call, made in method `m` of provider class P on an attribute of
    `self` (`self.manager.allocate(...)` in `Scheduler.schedule`), never reaches the consumer
    class: the consumer builds its objects (and those of its consumer subclasses) only into that
    attribute of consumer classes deriving from P whose own `m` replaces P's without calling it
    (`super().m(...)`), as do the consumer classes deriving from those, and no provider factory
    builds them. Then no P whose `m` runs holds one."""
    if call.enclosing is None or call.holder is None or call.caller is not None:
        return False
    owner, _, method = call.enclosing.rpartition(".")
    classes = (facts.dotted, *ctx.subclasses_of(facts.dotted))
    named = named_plugins(ctx)
    places = 0
    for cls in classes:
        cls_facts = ctx.classes.get(cls)
        if cls_facts is None or cls in named:
            return False
        _, mro = provider_mro_of(ctx, cls_facts)
        if any(p.base in mro for p in ctx.hosts.plugins):
            return False  # the provider's factory may build it
        built = built_where(ctx, cls)
        if built is None:
            return False
        for holder_class, _, attribute in built:
            holder = ctx.classes.get(holder_class or "")
            if holder is None or attribute != call.holder:
                return False
            _, holder_mro = provider_mro_of(ctx, holder)
            if owner not in holder_mro:
                return False
            # the holder's consumer subclasses hold it too (its `__init__` is theirs): each must replace `m` as well
            for sub in (holder.dotted, *ctx.subclasses_of(holder.dotted)):
                sub_facts = ctx.classes.get(sub)
                if sub_facts is None or not _replaced_without_super(ctx, sub_facts, method):
                    return False
            places += 1
    return places > 0


def _holds_only_provider_objects(ctx: CheckContext, call: ProviderCall) -> bool:
    """Whether the provider's call on an attribute of `self` (`self.output_processor.process(...)`)
    is made on an object of the provider's own classes, never on a consumer object: every place
    the release binds the attribute's name builds an object of a provider class there (or stores
    None), the holding class sets no attribute by a computed name (`setattr(self, key, v)`), no
    consumer code binds that name (`flows.stored_by_consumer`: on any object, by name, or as a
    member of a consumer subclass of the holding class), and none rebinds the classes built
    (`mod.Cls = Mine`, a patch naming them): an override of the method in a consumer subclass of
    those classes never takes it."""
    holding = call.enclosing.rpartition(".")[0] if call.enclosing is not None else None
    if call.holder is None or holding is None or ctx.index.computing_class(holding):
        return False
    stores = ctx.index.attribute_values(call.holder, _module_of(call.location))  # the holder's own module read first
    built = {s.value for s in stores if s.stored == "built"}
    if not built or any(s.stored == "other" or (s.stored == "literal" and s.value != "None") for s in stores):
        return False
    if stored_by_consumer(ctx, call.holder, (holding,)) is not None:
        return False
    return all(stored_by_consumer(ctx, cls.rpartition(".")[2]) is None for cls in sorted(built))


def _replaced_without_super(ctx: CheckContext, facts: ClassFacts, method: str) -> bool:
    """Whether the consumer class's `method` (its own or a consumer base's) is the consumer's,
    and its text never calls a method of that name (`super().m(...)`, `Base.m(self, ...)`)."""
    function = _consumer_methods(ctx, facts, ctx.methods_by_class).get(method)
    if function is None or function.site.end_line is None:
        return False
    module = function.dotted.rpartition(".")[0].rpartition(".")[0]
    file = next((f for f in ctx.files if f.module == module), None)
    if file is None:
        return False
    body = "\n".join(file.lines[function.site.line : function.site.end_line])
    return re.search(rf"\.{re.escape(method)}\s*\(", body) is None


def _runs_only_from_substituted(ctx: CheckContext, call: ProviderCall, name: str) -> str | None:
    """Why a provider call of `name` may never run: it is made (not on `self`) in a method that
    the release calls only from methods of provider classes the plugin substitutes with its own
    ([[substitution]]: `@MoERunner.register_oot`), so wherever the provider builds those, it
    builds the plugin's classes, which may never run the calling method. A warning's reason
    naming the substitutions; None where a call comes from elsewhere (or is not read)."""
    if call.enclosing is None or call.caller is not None or not ctx.hosts.substitutions:
        return None
    replaced = substituted(ctx)
    if not replaced:
        return None
    method = call.enclosing.rpartition(".")[2]
    refs = ctx.index.references_of([method]).get(method, ())
    shown: list[str] = []
    for ref in refs:
        enclosing_class, _, enclosing_method = (ref.enclosing or "").rpartition(".")
        if ref.receiver is None or enclosing_class not in replaced:
            return None
        consumer, where = replaced[enclosing_class]
        shown.append(f"{enclosing_class.rpartition('.')[2]}.{enclosing_method} ({ref.location}), "
                     f"whose class the plugin replaces by {consumer.rpartition('.')[2]} ({where})")  # fmt: skip
    if not shown:
        return None
    return f"{call.location} is in {call.enclosing.rpartition('.')[0].rpartition('.')[2]}.{method}, which the provider calls only from {'; '.join(dict.fromkeys(shown))}"


# Provider call sites named in one override finding beyond the first; the rest are counted.
_SITES_SHOWN = 4


def named_plugins(ctx: CheckContext) -> dict[str, tuple[PluginRule, ...]]:
    """consumer class -> the [[plugin]] rules whose factory builds it because the consumer names
    it (a registration call, a dict or launch-line JSON setting the rule's keys), whatever its
    bases: the provider imports the module and builds the class by name."""
    memo = ctx.named_plugins_memo
    if memo is not None:
        return memo
    found: dict[str, dict[PluginRule, None]] = {}
    for f in ctx.files:
        for name in f.plugin_names:
            for plugin in ctx.hosts.plugins:
                if name.via == plugin.module_key or (name.via == plugin.register and _registers_with(ctx, name.receiver, plugin)):
                    found.setdefault(f"{name.module}.{name.name}", {})[plugin] = None
    memo = {dotted: tuple(rules) for dotted, rules in found.items()}
    ctx.named_plugins_memo = memo  # once per consumer
    return memo


def _registers_with(ctx: CheckContext, receiver: str | None, plugin: PluginRule) -> bool:
    """Whether a registration call made on `receiver` (dotted as the consumer names it) may
    register with `plugin`'s factory: the rule names no class (`register_on`), the receiver is not
    known to be a provider class, or it is that class or a subclass of it. Another factory's
    method of the same name (`OtherFactory.register_connector`) registers nothing here."""
    if plugin.register_on is None or receiver is None:
        return True
    resolved = ctx.index.resolve(receiver)
    if not isinstance(resolved, Found) or resolved.symbol.kind != SymbolKind.CLASS:
        return True  # a consumer class, or one the index cannot read: it may be the factory's
    registrar = ctx.index.resolve(plugin.register_on)
    wanted = registrar.symbol.path if isinstance(registrar, Found) else plugin.register_on
    return wanted == resolved.symbol.path or wanted in ctx.index.mro_paths(resolved.symbol.path)


def unpassed_argument(ctx: CheckContext, owner: str, name: str) -> str | None:
    """Why `name` keeps its default None in `owner`'s `__init__` when the provider builds the
    class: the [[plugin]] factories that build it (by its bases, or because the consumer names
    it) all have construction calls on this release, and none passes the parameter (positionally
    or by keyword; a splat may). None when no factory builds the class, or one may pass it."""
    init = ctx.methods_by_class.get(owner, {}).get("__init__")
    facts = ctx.classes.get(owner)
    if init is None or facts is None:
        return None
    _, provider_mro = provider_mro_of(ctx, facts)
    plugins = dict.fromkeys((*named_plugins(ctx).get(owner, ()), *(p for p in ctx.hosts.plugins if p.base in provider_mro)))
    positional = [p.name for p in signature_of(init).params if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)]
    where: list[str] = []
    for plugin in plugins:
        calls = ctx.index.construction_calls(plugin.factory, plugin.class_variable)
        if not calls:
            return None  # the factory's calls are not known: it may pass it
        for call in calls:
            if call.star or call.starstar or name in call.keywords or name in positional[: call.positional]:
                return None
        where.extend(c.location for c in calls)
    if not where:
        return None
    factories = " nor ".join(p.factory for p in plugins)
    return f"runs only when a caller passes {name}; {factories} does not pass it on this release ({', '.join(where)})"


def argument_always_given(ctx: CheckContext, owner: str, name: str) -> str | None:
    """Why `name` is never None in `owner`'s `__init__` on this release, so that its `name is None`
    side never runs: only the provider builds the class (`flows.built_only_by_provider`: no
    consumer code builds it, derives from it or hands it on), through [[plugin]] factories (by its
    bases, or because the consumer names it) whose construction calls are all known, and each call
    passes the parameter (positionally or by keyword, no splat) a value that is never None
    (`ProviderCall.not_none`: a literal, a built object, a parameter the factory declares with one
    class and no None). None when any of that is not shown."""
    init = ctx.methods_by_class.get(owner, {}).get("__init__")
    facts = ctx.classes.get(owner)
    if init is None or facts is None or init.kind != "method":
        return None
    _, provider_mro = provider_mro_of(ctx, facts)
    plugins = dict.fromkeys((*named_plugins(ctx).get(owner, ()), *(p for p in ctx.hosts.plugins if p.base in provider_mro)))
    if not plugins:
        return None
    params = signature_of(init).params
    param = next((p for p in params if p.name == name), None)
    if param is None or param.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
        return None
    at = None
    if param.kind is ParamKind.POSITIONAL_OR_KEYWORD:
        at = [p.name for p in params if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)].index(name)
    where: list[str] = []
    for plugin in plugins:
        calls = ctx.index.construction_calls(plugin.factory, plugin.class_variable)
        if not calls:
            return None  # the factory's calls are not known
        for call in calls:
            if call.star or call.starstar:
                return None
            passed: int | str | None = at if at is not None and at < call.positional else name if name in call.keywords else None
            if passed is None or passed not in call.not_none:
                return None
        where.extend(c.location for c in calls)
    if not built_only_by_provider(ctx, owner):
        return None
    factories = " and ".join(p.factory for p in plugins)
    return f"only {factories} builds {owner.rpartition('.')[2]}, and it always passes {name} a value that is never None ({', '.join(where)})"


def _constructor(
    ctx: CheckContext,
    file: ConsumerFile,
    facts: ClassFacts,
    provider_mro: list[str],
    init: DefinedFunction | None,
    named: tuple[PluginRule, ...] = (),
) -> list[Finding]:
    if init is None:
        return []  # the provider's own __init__ receives what its factory passes
    for plugin in dict.fromkeys((*named, *(p for p in ctx.hosts.plugins if p.base in provider_mro))):
        calls = ctx.index.construction_calls(plugin.factory, plugin.class_variable)
        found = _built(ctx, file, facts.dotted, init, calls, plugin.factory, "constructor-incompatible", plugin.base)
        if found is not None:
            return [found]
    return []


def _built(
    ctx: CheckContext, file: ConsumerFile, dotted: str, function: DefinedFunction, calls: tuple[ProviderCall, ...],
    caller: str, rule: str, base: str | None,
) -> Finding | None:
    """The finding when none of the provider's `calls` (alternatives `caller` chooses between)
    binds to `function` (a class's `__init__`, or a function the provider calls)."""
    if not calls:
        return None
    signature = signature_of(function)
    name = function.dotted.rpartition(".")[2]
    bindings = [bind(signature, _shape(call), dotted) for call in calls]
    if any(b.uncertain or not any(p.severity is Severity.ERROR for p in b.problems) for b in bindings):
        return None
    first = next(p for p in bindings[0].problems if p.severity is Severity.ERROR)
    param = first.param or (_surplus_parameter(ctx, base, "module", signature) if base else None)
    where = ", ".join(f"{c.location} ({_passes(c)})" for c in calls)
    verb = "builds" if name == "__init__" else "calls"
    return ctx.finding(
        file, function.site, rule,
        f"{caller} {verb} {dotted.rpartition('.')[2]} as {where}; none binds to "
        f"{signature.render(name)}: {first.message}",
        callee=caller, param=param, provider_location=calls[0].location, signature=signature.render(name),
    )  # fmt: skip


def _entry_points(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """The objects of `file`'s module that the consumer's entry points name in a group the
    provider loads ([[entry_point]]): a function must take what the provider's calls of it pass,
    a class's `__init__` likewise (the call builds it)."""
    findings: list[Finding] = []
    for entry in ctx.entry_points:
        if entry.module != file.module:
            continue
        for rule in ctx.hosts.entry_points:
            if rule.group != entry.group:
                continue
            if rule.hookspecs is not None:
                if not entry.attr:  # the module itself is the plugin
                    findings.extend(_hook_implementations(ctx, file, rule, [f for f in file.functions if f.owner is None]))
                continue
            if not entry.attr or rule.caller is None or rule.variable is None:
                continue
            dotted = f"{entry.module}.{entry.attr}"
            init = ctx.methods_by_class.get(dotted, {}).get("__init__")
            function = init if init is not None else ctx.functions.get(dotted)
            if function is None or (init is None and dotted in ctx.classes):
                continue  # a class without its own __init__, or not defined here
            calls = ctx.index.construction_calls(rule.caller, rule.variable)
            kind = "constructor-incompatible" if init is not None else "entry-point-incompatible"
            found = _built(ctx, file, dotted, function, calls, rule.caller, kind, None)
            if found is not None:
                findings.append(found)
    return findings


def registered_hook_findings(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """The hook methods of the consumer classes of `file` whose instances the consumer registers
    as plugins at run time (a [[entry_point]] rule's `hook_registrar`)."""
    findings: list[Finding] = []
    for rule in ctx.hosts.entry_points:
        if rule.hookspecs is None or rule.hook_registrar is None:
            continue
        registered = registered_classes(ctx, rule.hook_registrar)
        for facts in file.classes:
            if facts.dotted in registered:
                methods = [f for f in file.functions if f.owner == facts.dotted]
                findings.extend(_hook_implementations(ctx, file, rule, methods))
    return findings


def _hook_implementations(ctx: CheckContext, file: ConsumerFile, rule: EntryPointRule, functions: list[DefinedFunction]) -> list[Finding]:
    """The hook implementations of a plugin the provider registers (an [[entry_point]] rule with
    `hookspecs`): the module an entry point names (its module-level functions), or an object the
    consumer registers (its methods). Each one named like a hook the release specifies is called
    by keyword with the specification's parameter names, so it may take fewer of them but no
    other (pluggy refuses such a plugin when it registers: PluginValidationError). A parameter
    with a default is never passed and not checked; a hook the release does not specify (another
    plugin may add its specification) is not judged."""
    findings: list[Finding] = []
    for function in functions:
        leaf = function.dotted.rpartition(".")[2]
        if not leaf.startswith(rule.hook_prefix):
            continue
        hook = next((v for k, v in function.decorator_strings if k == rule.hook_rename), leaf) if rule.hook_rename else leaf
        spec_path = f"{rule.hookspecs}.{hook}"
        info = ctx.index.call(spec_path, via="module")
        if info.unknown or len(info.signatures) != 1:
            continue
        spec = info.signatures[0]
        offered = {p.name for p in spec.params if p.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)}
        if any(p.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD) for p in spec.params):
            continue  # a specification taking anything: its callers decide
        positional = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
        taken = [p.name for p in signature_of(function).params if p.kind in positional and not p.has_default]
        absent = [name for name in taken if name not in offered]
        if not absent:
            continue
        names = ", ".join(absent)
        found = ctx.finding(
            file, function.site, "override-incompatible",
            f"hook implementation {leaf} takes {names}, which the specification {spec.render(hook)} on this release does "
            f"not provide: the provider calls hook implementations by keyword with the specification's "
            f"argument names, so registering the plugin fails",
            callee=spec_path, param=absent[0], provider_location=spec.location, signature=spec.render(hook),
            advice=f"Take only arguments the specification names (drop `{absent[0]}` or give it a default), or pin the provider.",
        )  # fmt: skip
        findings.append(found)
    return findings


def _abstract(
    ctx: CheckContext,
    file: ConsumerFile,
    facts: ClassFacts,
    heads: list[str],
    provider_mro: list[str],
    methods: dict[str, DefinedFunction],
    functions: dict[str, dict[str, DefinedFunction]],
    named: bool = False,
) -> list[Finding]:
    if any(f.abstract for f in functions.get(facts.dotted, {}).values()):
        return []  # an abstract class of the consumer's own
    if any(facts.dotted in other.consumer_bases for other in ctx.classes.values()):
        return []  # a base of the consumer's own classes: those are the concrete ones
    if any(ctx.index.mro_unknowns(head) for head in heads):
        return []  # a base outside the provider may define what is missing
    defined = set(methods) | ctx.own_members(facts.dotted)
    abstract: dict[str, str] = {}  # name -> the provider class whose definition of it is abstract
    for name in dict.fromkeys(n for head in heads for n in ctx.index.abstract_members(head)):
        if name in defined:
            continue
        # the definition an instance finds first, along the heads in order
        first = next((h for h in heads if isinstance(ctx.index.class_member(h, name, instance=False), Found)), None)
        if first is not None and name in ctx.index.abstract_members(first):
            abstract[name] = first
    if not abstract:
        return []
    built = named or any(plugin.base in provider_mro for plugin in ctx.hosts.plugins)
    names = ", ".join(abstract)
    return [
        ctx.finding(
            file, facts.site, "abstract-unimplemented",
            f"{facts.dotted.rpartition('.')[2]} does not define {names}, abstract in "
            f"{', '.join(dict.fromkeys(abstract.values()))} on this release: instantiating it raises TypeError"
            + ("" if built else " (if it is instantiated: no provider factory is known to build it)"),
            callee=next(iter(abstract.values())), param=next(iter(abstract)),
            severity=Severity.ERROR if built else Severity.WARNING,
        )  # fmt: skip
    ]


def _replacements(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    functions = ctx.functions
    findings: list[Finding] = []
    for replacement in file.replacements:
        function = functions.get(replacement.function or "")
        if function is None:
            continue
        classes, bound, complete = _replaced_classes(ctx, file, replacement)
        if not classes:
            continue
        missing = [c for c in classes if isinstance(ctx.index.class_member(c, replacement.attribute, instance=True), Missing)]
        if missing and len(missing) == len(classes):
            consequence = (
                f"the guard `{replacement.guard}` skips the patch, so {_shown(function.dotted)} is never installed "
                "and the feature it adds is lost" if replacement.guard else f"{_shown(function.dotted)} is installed where nothing calls it"
            )  # fmt: skip
            findings.append(
                ctx.finding(
                    file, replacement.site, "patch-target-missing",
                    f"{_short(classes)} has no attribute '{replacement.attribute}' on this release: {consequence}",
                    callee=f"{classes[0]}.{replacement.attribute}", param=replacement.attribute,
                )  # fmt: skip
            )
            continue
        mros = {c: set(p for p in ctx.index.mro_paths(c) if isinstance(p, str)) for c in classes}
        calls = ctx.index.calls_of([replacement.attribute])[replacement.attribute] + _dispatched(ctx, classes, replacement.attribute)
        signature = _as_called(function, bound, replacement.lead)
        certain = len(classes) == 1 and complete
        # the first provider call that cannot bind says enough; one in a provider function the
        # consumer may have replaced too (`caller_replaced`) only where no other call fails
        failing: tuple[ProviderCall, Problem, str] | None = None
        for call in sorted(calls, key=_guarded):
            if not any(call.receiver in mro for mro in mros.values()):
                continue
            binding = bind(signature, _shape(call), function.dotted.partition("@")[0])
            if binding.uncertain:
                continue
            problem = next((p for p in binding.problems if p.severity is Severity.ERROR), None)
            if problem is None or _original_rejects(ctx, call, replacement.attribute):
                continue
            caller = caller_replaced(ctx, call, file)
            if caller is not None and caller.sure:
                continue  # its caller is the consumer's own now: the call never runs
            if caller is None:
                failing = (call, problem, "")
                break
            failing = failing or (call, problem, caller.reason)
        if failing is not None:
            call, problem, why = failing
            findings.append(
                _conditional(ctx, ctx.finding(
                    file, replacement.site, "replacement-incompatible",
                    f"{call.location} calls {call.receiver.rpartition('.')[2]}.{replacement.attribute}({_passes(call)}), "
                    f"now {_shown(function.dotted)}{signature.render()}: {problem.message}"
                    + ("" if certain else f" (if the object is a {call.receiver.rpartition('.')[2]}: it is one of {len(classes)} classes)"),
                    callee=f"{call.receiver}.{replacement.attribute}", param=problem.param,
                    provider_location=call.location, signature=signature.render(_shown(function.dotted)),
                    severity=Severity.ERROR if certain and not why else Severity.WARNING, reason=why or None,
                ), call)  # fmt: skip
            )
    return findings


def _original_rejects(ctx: CheckContext, call: ProviderCall, attribute: str) -> bool:
    """Whether the provider's own method, the one replaced, does not take the call either: code
    of the provider that fails (or never runs) whatever the consumer puts there is no evidence
    against the replacement."""
    info = ctx.index.call(f"{call.receiver}.{attribute}", via="instance")
    if info.unknown or not info.signatures and info.fallback is None:
        return False
    binding = bind_any(info.signatures, info.fallback, _shape(call), attribute)
    return not binding.uncertain and any(p.severity is Severity.ERROR for p in binding.problems)


def _dispatched(ctx: CheckContext, classes: list[str], method: str) -> tuple[ProviderCall, ...]:
    """The provider's calls of instances of `classes` (`self.model(a, b)`) where calling one runs
    `method`: a base outside the provider whose `__call__` runs it (`[[call_dispatch]]`,
    `torch.nn.Module` -> `forward`)."""
    bases = {base for base, runs in ctx.hosts.call_dispatch.items() if runs == method}
    dispatching = [c for c in classes if bases & set(ctx.index.mro_unknowns(c))] if bases else []
    return ctx.index.instance_calls(dispatching) if dispatching else ()


def _replaced_classes(ctx: CheckContext, file: ConsumerFile, replacement) -> tuple[list[str], bool, bool]:
    """(the provider classes whose attribute is replaced, whether the provider's callers' arguments
    start at the function's second parameter, whether the object is one of them for certain: a
    model object may also be of classes the index cannot read, which are neither judged nor
    counted)."""
    if replacement.target is not None:
        found = ctx.index.class_named(replacement.target)
        # a function set on a class is bound when called on an instance; MethodType binds it too
        return ([found.path], True, True) if found is not None else ([], False, True)
    for binding in file.method_bindings:
        if binding.function == replacement.function and binding.site.line == replacement.site.line and binding.target:
            root, steps = binding.target
            value = ctx.evaluate_chain(ctx, Use(root, steps, _NOWHERE, "", ""))
            if isinstance(value, InstanceValue) and value.classes:
                return list(value.classes), True, not value.unjudged
    return [], False, True


def _as_called(function: DefinedFunction, bound: bool, lead: int = 0) -> Signature:
    """The parameters the provider's callers fill: after the first when the function is bound
    (set on a class, or through MethodType); all of them when it is stored on an instance; and
    after the `lead` ones a patching helper's wrapper fills first (the original method)."""
    params = function.params[lead + (1 if bound else 0) :]
    return Signature(tuple(Param(p.name, ParamKind(p.kind), p.has_default) for p in params), origin="def")


def _shown(dotted: str) -> str:
    """A function's name as findings show it (a nested function's dotted name ends in `@LINE`)."""
    return dotted.rpartition(".")[2].partition("@")[0]


def _short(classes: list[str]) -> str:
    return classes[0].rpartition(".")[2] if len(classes) == 1 else f"none of {len(classes)} classes"

