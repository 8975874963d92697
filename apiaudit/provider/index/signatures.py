"""How a call binds: functions and methods (how the first parameter is bound, `@overload`s,
decorators whose wrappers rewrite keywords), constructors (`__init__`/`__new__` along the MRO,
a metaclass's `__call__`, the `__init__` class shapes synthesize), names assigned from other
callables; and where a callable passes its `**kwargs` on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, TypeAlias

from apiaudit.provider import keyword_rewrites
from apiaudit.provider.index.inference import Inference
from apiaudit.provider.index.lazy import ex, facts, griffe, shapes
from apiaudit.provider.index.mro import TRANSPARENT_BASES, Hierarchy, MroEntry, c3_merge
from apiaudit.provider.records import (
    CallInfo,
    FieldShape,
    Forward,
    Found,
    KeywordAlias,
    KeywordRewrites,
    Param,
    ParamKind,
    ReachedVia,
    Signature,
    Symbol,
    SymbolKind,
    UnresolvedBase,
)

# How a method binds its first parameter, and the builtin descriptor classes that decide it
# (a decorator class deriving from one binds as it does).
MethodDescriptor: TypeAlias = Literal["classmethod", "staticmethod"]
_DESCRIPTOR_BASES: dict[str, MethodDescriptor] = {
    "classmethod": "classmethod",
    "builtins.classmethod": "classmethod",
    "staticmethod": "staticmethod",
    "builtins.staticmethod": "staticmethod",
}

# Externals whose __init__ the class shapes synthesize (their attributes stay unknown).
SHAPED_BASES = frozenset({"pydantic.BaseModel", "pydantic.main.BaseModel", "msgspec.Struct"})


class Signatures(Inference):
    """Call signatures and `**kwargs` forwarding."""

    def call(self, path: str, *, via: ReachedVia) -> CallInfo:
        """How a call to `path` binds. `via`: 'module' (plain name), 'class' (Class.attr), 'instance' (obj.attr)."""
        return self._cached(("call", path, via), lambda: self._call(path, via))

    def _call(self, path: str, via: ReachedVia) -> CallInfo:
        res = self.resolve(path)
        if not isinstance(res, Found):
            sym = Symbol(path, SymbolKind.ATTRIBUTE)
            return CallInfo(sym, (), unknown=getattr(res, "reason", "not found"))
        sym = res.symbol
        if sym.kind is SymbolKind.EXTERNAL:
            return CallInfo(sym, (), unknown=f"{sym.path} lies outside the provider")
        obj = self.object_at(sym.path)
        if sym.kind is SymbolKind.CLASS:
            return self._constructor(sym, obj)
        if sym.kind is SymbolKind.FUNCTION and isinstance(obj, griffe.Function):
            return self._function_call(sym, obj, via)
        if sym.kind is SymbolKind.ATTRIBUTE and isinstance(obj, griffe.Attribute):
            made = self._made_by_call(sym, obj)
            if made is not None:
                return made
            # `Alias = SomeClass` at module or class level: follow the assigned name.
            target = ex.canonical(obj.value) if obj.value is not None and "property" not in obj.labels else None
            if target and target != sym.path:
                slot = self._method_slot(sym, obj, target, via)
                if slot is not None:
                    return slot
                # `set_trace = SomeClass.set_trace`: a method taken from its class binds as
                # `SomeClass.set_trace(...)` does (a classmethod's `cls` is already bound).
                aliased = self.object_at(target)
                via_target: ReachedVia = "class" if isinstance(getattr(aliased, "parent", None), griffe.Class) else "module"
                return self.call(target, via=via_target)
        return CallInfo(sym, (), unknown=f"{sym.path} is not a function or class the index can bind")

    def _made_by_call(self, sym: Symbol, obj: griffe.Attribute) -> CallInfo | None:
        """`name = factory(...)`: what the call returns is not the factory, so its signature is unknown."""
        if not isinstance(obj.value, griffe.ExprCall):
            return None
        factory = ex.canonical(obj.value.function) or str(obj.value.function)
        return CallInfo(sym, (), unknown=f"{sym.name} is made by calling {factory}(...): its signature is not written down")

    def _method_slot(self, sym: Symbol, obj: griffe.Attribute, target: str, via: ReachedVia) -> CallInfo | None:
        """`forward = _forward_unimplemented` in a class body: the function becomes a method.

        Bound like one (self dropped through an instance); a placeholder that only raises
        NotImplementedError is a slot subclasses fill, so its own signature proves nothing.
        """
        if not isinstance(obj.parent, griffe.Class):
            return None
        func = self.object_at(target)
        if not isinstance(func, griffe.Function):
            return None
        if facts(func).get("not_implemented"):
            return CallInfo(sym, (), unknown=f"{sym.path} is a placeholder ({func.name} raises NotImplementedError): subclasses override it")
        if isinstance(func.parent, griffe.Class):
            return None  # `alias = other_method`: already bound as a method
        target_sym = self._symbol(func)
        drop = via == "instance" and "staticmethod" not in func.labels
        return self._function_call(target_sym, func, via, drop_first=drop)

    def _function_call(self, sym: Symbol, func: griffe.Function, via: ReachedVia, drop_first: bool | None = None) -> CallInfo:
        drop = _drops_first(func, via, self._descriptor(func)) if drop_first is None else drop_first
        impl = self._through_decorators(func, self._signature(func, drop))
        overloads = tuple(self._through_decorators(func, self._signature(o, drop, origin="@overload")) for o in (func.overloads or []))
        returns = self.annotation_class(func.returns, func)
        if overloads:
            # Declared only through @overload (a stub): the overloads are all there is to bind.
            fallback = None if facts(func).get("overloads_only") else impl
            return CallInfo(sym, overloads, fallback=fallback, returns=returns)
        return CallInfo(sym, (impl,), returns=returns)

    def _through_decorators(self, func: griffe.Function, signature: Signature) -> Signature:
        """The signature as a caller meets it through the function's decorators that rewrite its
        keywords: a keyword one renames fills the parameter it is renamed to (`aliases`); one
        whose rewrites are not read may take any keyword (`rewritten_by`). A decorator that
        passes keywords on untouched changes nothing."""
        decorators = getattr(facts(func).get("deprecation"), "decorators", ())
        aliases: list[KeywordAlias] = []
        rewritten_by: str | None = None
        for mark in decorators:
            rewrites = self.keyword_rewrites(mark.target)
            if rewrites is None:
                continue
            renamed, unread = keyword_rewrites.apply(mark, rewrites, signature.params)
            aliases += renamed
            rewritten_by = rewritten_by or (rewrites.decorator if unread else None)
        if not aliases and rewritten_by is None:
            return signature
        return replace(signature, aliases=tuple(aliases), rewritten_by=rewritten_by)

    def keyword_rewrites(self, decorator: str) -> KeywordRewrites | None:
        """What the provider decorator (or decorator factory) `decorator` names does to the keywords
        of the functions it wraps; None when it is no provider function or rewrites none."""
        return self._cached(("keyword-rewrites", decorator), lambda: self._keyword_rewrites(decorator))

    def _keyword_rewrites(self, decorator: str) -> KeywordRewrites | None:
        res = self.resolve(decorator)
        if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.FUNCTION:
            return None
        func = self.object_at(res.symbol.path)
        node = self._definition_node(func) if isinstance(func, griffe.Function) else None
        if node is None:
            return None
        return keyword_rewrites.read(node, res.symbol.path, self._signature(func, False).params)

    def _descriptor(self, func: griffe.Function) -> MethodDescriptor | None:
        """How a method is bound: `@classmethod`/`@staticmethod`, or a decorator that is a provider
        class deriving from one of them (Django's `class classonlymethod(classmethod)`: its
        `@classonlymethod def as_view(cls, ...)` binds `cls` like any classmethod)."""
        for kind in ("classmethod", "staticmethod"):
            if kind in func.labels:
                return kind
        if not isinstance(func.parent, griffe.Class):
            return None
        for decorator in func.decorators or ():
            path = decorator.callable_path
            res = self.resolve(path) if path else None
            if not (isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS):
                continue
            for base in self.mro_paths(res.symbol.path)[1:]:
                if base in _DESCRIPTOR_BASES:
                    return _DESCRIPTOR_BASES[base]
        return None

    def _signature(self, func: griffe.Function, drop_first: bool, origin: str | None = None) -> Signature:
        params = []
        for i, p in enumerate(func.parameters):
            if drop_first and i == 0 and p.kind in (griffe.ParameterKind.positional_only, griffe.ParameterKind.positional_or_keyword):
                continue
            kind = _PARAM_KIND[p.kind.name]
            has_default = p.default is not None and kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)
            params.append(Param(p.name, kind, has_default, ex.text(p.annotation), ex.text(p.default) if has_default else None))
        return Signature(tuple(params), origin=origin or f"def {func.name}", location=self.location(func))

    def _constructor(self, sym: Symbol, cls: Any) -> CallInfo:
        if not isinstance(cls, griffe.Class):
            return CallInfo(sym, (), unknown=f"cannot read class {sym.path}")
        meta = ex.canonical(cls.keywords.get("metaclass")) if getattr(cls, "keywords", None) else None
        if meta:
            meta_obj = self.object_at(meta)
            if meta_obj is None or (isinstance(meta_obj, griffe.Class) and "__call__" in meta_obj.members):
                if not self._shape(cls):
                    return CallInfo(sym, (), returns=sym, unknown=f"metaclass {meta} may change how {sym.name} is called")
        for klass in self.mro(sym.path):
            if isinstance(klass, UnresolvedBase):
                return CallInfo(sym, (), returns=sym, unknown=f"base {klass.text} lies outside the provider")
            if isinstance(klass, str):
                if klass in SHAPED_BASES:
                    break
                if klass in TRANSPARENT_BASES:
                    continue
                return CallInfo(sym, (), returns=sym, unknown=f"base {klass} lies outside the provider")
            own_init = klass.members.get("__init__")
            own_new = klass.members.get("__new__")
            if isinstance(own_init, griffe.Function):
                return self._constructor_call(sym, own_init)
            shape = self._shape(klass)
            if shape is not None:
                location = self.location(klass)
                ctx = _ClassCtx(klass, list(self.mro(klass.path)), self)
                return CallInfo(sym, (shapes.synthesize(shape, ctx, location),), returns=sym)
            if isinstance(own_new, griffe.Function):
                return self._constructor_call(sym, own_new)
        shape = self._shape(cls)
        if shape is not None:
            ctx = _ClassCtx(cls, list(self.mro(cls.path)), self)
            return CallInfo(sym, (shapes.synthesize(shape, ctx, self.location(cls)),), returns=sym)
        return CallInfo(sym, (Signature((), origin="object.__init__", location=self.location(cls)),), returns=sym)

    def field_shape(self, path: str) -> FieldShape | None:
        """How the class at `path` synthesizes its `__init__` from fields; None when it has an
        `__init__` or `__new__` of its own first in its MRO, or the MRO leaves the provider."""
        return self._cached(("field-shape", path), lambda: self._field_shape(path))

    def _field_shape(self, path: str) -> FieldShape | None:
        res = self.resolve(path)
        if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
            return None
        for klass in self.mro(res.symbol.path):
            if not isinstance(klass, griffe.Class):
                if isinstance(klass, str) and klass in TRANSPARENT_BASES:
                    continue
                return None  # an outside base, or msgspec.Struct itself before any field class
            if isinstance(klass.members.get("__init__"), griffe.Function):
                return None
            shape = self._shape(klass)
            if shape is not None:
                keyword_only = shape.all_keyword_only or shape.kw_only_default
                return FieldShape(shape.kind, shape.subclass_fields, keyword_only)
            if isinstance(klass.members.get("__new__"), griffe.Function):
                return None
        return None

    def _constructor_call(self, sym: Symbol, method: griffe.Function) -> CallInfo:
        """`__init__`/`__new__` with `@overload`s binds like any overloaded function (self dropped)."""
        impl = self._through_decorators(method, self._signature(method, True))
        if not method.overloads:
            return CallInfo(sym, (impl,), returns=sym)
        overloads = tuple(self._through_decorators(method, self._signature(o, True, origin="@overload")) for o in method.overloads)
        fallback = None if facts(method).get("overloads_only") else impl
        return CallInfo(sym, overloads, fallback=fallback, returns=sym)

    def _shape(self, klass: griffe.Class):
        return shapes.detect(_ClassCtx(klass, list(self.mro(klass.path)), self))

    def forwards(self, path: str) -> tuple[Forward, ...]:
        """Where a callable passes its `**kwargs` on (a `super().__init__` call is left to the
        instance's MRO: `next_constructor`)."""
        return self._cached(("forwards", path), lambda: self._forwards(path))

    def _forwards(self, path: str) -> tuple[Forward, ...]:
        res = self.resolve(path)
        if not isinstance(res, Found):
            return ()
        sym = res.symbol
        if sym.kind is SymbolKind.CLASS:
            init = self.class_member(sym.path, "__init__", instance=True)
            if not isinstance(init, Found) or init.symbol.kind is not SymbolKind.FUNCTION:
                return ()
            sym = init.symbol
        func = self.object_at(sym.path)
        if not isinstance(func, griffe.Function):
            return ()
        out: list[Forward] = []
        removed = tuple(facts(func).get("forwards_removed", ()))
        for callee, explicit in facts(func).get("forwards", ()):
            if callee.startswith("super()."):
                if callee == "super().__init__" and isinstance(func.parent, griffe.Class):
                    out.append(Forward(func.parent.path, tuple(explicit), removed, via_super=True))
                continue
            target = self._forward_target(func, callee)
            if target:
                out.append(Forward(target, tuple(explicit), removed))
        return tuple(out)

    def next_constructor(self, bases: tuple[str, ...], after: str) -> str | None:
        """The class whose `__init__` a `super().__init__(...)` made in `after`'s method reaches, on
        an instance of a class deriving from `bases` in that order (a provider class's own
        instance: `bases=(cls,)`). Python follows the instance's MRO, not `after`'s: in
        `class P(A, B)` A's call reaches B, and a mixin without `__init__` is passed over. None
        when it cannot be told: a base outside the provider (not a transparent one) or one
        nobody resolves comes first, or `after` is not in the MRO."""
        return self._cached(("next-init", bases, after), lambda: self._next_constructor(bases, after))

    def _next_constructor(self, bases: tuple[str, ...], after: str) -> str | None:
        if len(bases) == 1:
            mro = list(self.mro(bases[0]))
        else:
            heads: list[list[MroEntry]] = [list(self.mro(b)) for b in bases]
            mro = c3_merge(heads + [[h[0] for h in heads]])
        paths = [k.path if isinstance(k, griffe.Class) else k for k in mro]
        if after not in paths:
            return None
        for klass in mro[paths.index(after) + 1 :]:
            if isinstance(klass, griffe.Class):
                own = klass.members.get("__init__")
                if own is not None:
                    return klass.path if isinstance(own, griffe.Function) else None
                if self._shape(klass) is not None:
                    return klass.path  # a synthesized __init__ (dataclass, model...)
                continue  # a mixin without __init__: the call goes on along the MRO
            if isinstance(klass, str) and klass in TRANSPARENT_BASES:
                continue
            return None
        return None

    def _forward_target(self, func: griffe.Function, callee: str) -> str | None:
        owner = func.parent
        head, _, rest = callee.partition(".")
        scope = owner.parent if isinstance(owner, griffe.Class) else owner
        try:
            base = scope.resolve(head) if scope is not None else None
        except Exception:  # noqa: BLE001 - a name Griffe cannot resolve: not followed
            return None
        if not base:
            return None
        target = f"{base}.{rest}" if rest else base
        res = self.resolve(target)
        if isinstance(res, Found) and res.symbol.kind in (SymbolKind.CLASS, SymbolKind.FUNCTION):
            return res.symbol.path
        return None


class _ClassCtx:
    def __init__(self, cls: griffe.Class, mro: list, index: Hierarchy):
        self.cls = cls
        self.mro = mro
        self._index = index

    def resolve_object(self, dotted: str) -> Any:
        return self._index.object_at(dotted)

    def mro_of(self, class_path: str) -> list:
        return list(self._index.mro(class_path))


# Griffe's parameter kinds by member name (a table built without importing Griffe).
_PARAM_KIND = {
    "positional_only": ParamKind.POSITIONAL_ONLY,
    "positional_or_keyword": ParamKind.POSITIONAL_OR_KEYWORD,
    "var_positional": ParamKind.VAR_POSITIONAL,
    "keyword_only": ParamKind.KEYWORD_ONLY,
    "var_keyword": ParamKind.VAR_KEYWORD,
}


def _drops_first(func: griffe.Function, via: ReachedVia, descriptor: MethodDescriptor | None) -> bool:
    if not isinstance(func.parent, griffe.Class):
        return False
    if descriptor == "staticmethod":
        return False
    if descriptor == "classmethod":
        return via in ("class", "instance")
    if func.name == "__new__":
        return True
    return via == "instance"
