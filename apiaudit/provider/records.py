"""What the provider index answers with: small frozen values, safe to cache."""

from __future__ import annotations

import enum
from typing import Literal

from apiaudit.infra.frozen import record


class ParamKind(str, enum.Enum):
    POSITIONAL_ONLY = "positional-only"
    POSITIONAL_OR_KEYWORD = "positional-or-keyword"
    VAR_POSITIONAL = "var-positional"
    KEYWORD_ONLY = "keyword-only"
    VAR_KEYWORD = "var-keyword"


class Extra(str, enum.Enum):
    """What a callee does with a keyword it has no parameter for (pydantic's `extra`)."""

    FORBID = "forbid"  # TypeError / ValidationError: the plain-Python behaviour
    IGNORE = "ignore"  # accepted and silently dropped
    ALLOW = "allow"  # accepted and kept


@record
class Param:
    name: str
    kind: ParamKind
    has_default: bool = False
    annotation: str | None = None
    default: str | None = None

    @property
    def required(self) -> bool:
        return not self.has_default and self.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)

    def render(self) -> str:
        prefix = {"var-positional": "*", "var-keyword": "**"}.get(self.kind.value, "")
        text = prefix + self.name
        if self.annotation:
            text += f": {self.annotation}"
        if self.has_default:
            text += f" = {self.default}" if self.default is not None else " = ..."
        return text


@record
class KeywordAlias:
    """A keyword a decorator's wrapper renames before the call (`kwargs[new] = kwargs.pop(old)`):
    passing `keyword=` fills `param`; or takes out itself (`kwargs.pop("return_dict", None)`):
    `param` None, passing it fills nothing."""

    keyword: str
    param: str | None
    decorator: str  # the decorator's dotted path


@record
class Signature:
    """A callable's parameters as a caller sees them (self/cls already dropped)."""

    params: tuple[Param, ...]
    origin: str  # "def __init__", "dataclass fields", "pydantic model fields", "@overload", ...
    extra: Extra = Extra.FORBID
    location: str | None = None  # "pkg/mod.py:12"
    # Keywords a decorator renames to a parameter before the call reaches it
    aliases: tuple[KeywordAlias, ...] = ()
    # A decorator whose wrapper rewrites the keywords in a way not read (its dotted path): a
    # keyword the parameters do not take may still be taken
    rewritten_by: str | None = None

    def render(self, name: str = "") -> str:
        parts: list[str] = []
        saw_kw_only_marker = False
        for i, p in enumerate(self.params):
            if p.kind is ParamKind.KEYWORD_ONLY and not saw_kw_only_marker:
                if not any(q.kind is ParamKind.VAR_POSITIONAL for q in self.params[:i]):
                    parts.append("*")
                saw_kw_only_marker = True
            parts.append(p.render())
            if p.kind is ParamKind.POSITIONAL_ONLY and (
                i + 1 == len(self.params) or self.params[i + 1].kind is not ParamKind.POSITIONAL_ONLY
            ):
                parts.append("/")
        return f"{name}({', '.join(parts)})"

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def alias(self, keyword: str) -> KeywordAlias | None:
        """How a decorator renames `keyword` before the call, if one does."""
        return next((a for a in self.aliases if a.keyword == keyword), None)


class SymbolKind(str, enum.Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    ATTRIBUTE = "attribute"
    EXTERNAL = "external"  # lives outside the provider: torch.nn.Module, builtins, ...


@record
class Symbol:
    """A provider object, named by the dotted path where it is defined."""

    path: str
    kind: SymbolKind
    location: str | None = None  # "pkg/mod.py:12" relative to the provider root

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


@record
class Found:
    symbol: Symbol


@record
class Missing:
    """The name does not exist (certainly, unless `doubt` says why not). `owner` is the deepest
    object that does."""

    path: str
    owner: Symbol | None
    # The name to look for elsewhere in the provider (where it may have moved): looked up by
    # `ProviderIndex.moved_to` when a finding says it, not when a probe meets the absence (the
    # map of every top-level name is a read of every file of the release).
    moved_name: str | None = None
    # Why the absence is likely but not proven (a module __getattr__ whose names were not all
    # read): the checks then report a warning with this reason, never an error.
    doubt: str | None = None


@record
class Unknown:
    """The index cannot tell (dynamic module __getattr__, external base, ...)."""

    path: str
    reason: str


Resolution = Found | Missing | Unknown

# How a callable was reached, which decides whether its first parameter is bound:
# a plain name ("module"), `Class.attr` ("class") or `obj.attr` ("instance").
ReachedVia = Literal["module", "class", "instance"]


@record
class UnresolvedBase:
    """A base class in an MRO that the index cannot resolve: its members are unknown."""

    text: str  # the base as written (or as canonicalised), for messages


@record
class FieldShape:
    """How a provider class's `__init__` is synthesized from fields, as a consumer subclass without
    an `__init__` of its own extends it."""

    kind: str  # the shape plug-in's kind: "msgspec-struct", "dataclass", "pydantic-model", ...
    subclass_fields: bool  # a subclass's annotations are fields without decorating it
    all_keyword_only: bool = False  # every field is keyword-only (pydantic models)


@record
class CallInfo:
    """How a call to a symbol binds, and what it returns."""

    callee: Symbol
    signatures: tuple[Signature, ...]  # several for @overload: a call fitting any is fine
    fallback: Signature | None = None  # the runtime implementation behind overloads
    returns: Symbol | None = None  # a provider class when the result type is known
    unknown: str | None = None  # why it cannot be bound (then signatures is empty)


class ValueKind(str, enum.Enum):
    """What provider code assigns to an attribute, as light inference sees it."""

    INSTANCE = "instance"  # an instance of `symbol` (a class)
    CALL_RESULT = "call-result"  # whatever the function `symbol` returns (rules may say: factories)


@record
class AssignedValue:
    """The value of `self.NAME` as provider code assigns (or annotates) it.

    `list_keywords` are the call's keyword arguments that are lists of string literals
    (``architectures=["DeepseekV2ForCausalLM"]``), for factory rules to read.
    """

    kind: ValueKind
    symbol: Symbol
    list_keywords: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def keyword_list(self, name: str) -> tuple[str, ...] | None:
        return next((v for k, v in self.list_keywords if k == name), None)


class Membership(str, enum.Enum):
    """Does a class implement a protocol (or subclass a marker)? Unknown when the index cannot tell."""

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


class NarrowKind(str, enum.Enum):
    TYPE_IS = "TypeIs"
    TYPE_GUARD = "TypeGuard"


@record
class Narrowing:
    """A function annotated ``-> TypeIs[X]`` / ``-> TypeGuard[X]`` (over its overloads).

    `instance_target` is X for ``TypeIs[X]``, `class_target` is X for ``TypeIs[type[X]]``;
    the narrowed argument is the first positional parameter, `parameter`.
    """

    function: Symbol
    kind: NarrowKind
    parameter: str | None
    instance_target: Symbol | None = None
    class_target: Symbol | None = None


@record
class ProviderCall:
    """One call the provider's own code makes of a method, on a receiver of a known class."""

    location: str  # "pkg/mod.py:12" in the release
    receiver: str  # the class the receiver is typed as (an override on a subclass receives it)
    positional: int
    keywords: tuple[str, ...]
    star: bool = False
    starstar: bool = False
    unpacks: int | None = None  # `a, b = recv.m(...)`: the result is unpacked into this many names
    # For a call on `self`: the method it is made in (a subclass overriding that method never
    # makes this call on its instances)
    caller: str | None = None
    # The provider's own `if` whose branch the call is in, where the chain has another branch
    # (`elif`/`else`) and the test does not name the receiver: which branch runs is the
    # configuration's choice (`elif is_fsdp_enabled: self._load(a, b)`), so the call may never
    # run. Its text and place.
    guard: str | None = None
    # The function or method the call is made in, dotted (`pkg.mod.Cls.method`), whatever its
    # receiver; and for a receiver held in an attribute of `self` (`self.manager.m(...)`), that
    # attribute: where a plugin's objects cannot be, the call does not reach them.
    enclosing: str | None = None
    holder: str | None = None
    # What the call passes that is never None, by position (int) or keyword (str): a literal, a
    # display, an object the provider builds of a class, or a parameter of the calling function
    # that it never rebinds, annotated with one class and no None, without a None default
    # (read for a [[plugin]] factory's construction calls only).
    not_none: tuple[int | str, ...] = ()


@record
class ProviderReference:
    """One place the provider's code names a method: a call on a receiver of a known class
    (`receiver`, with `caller` the method it is made in when the receiver is `self` or
    `super()`; `self.m` read as a value in a method is this object's too), or a use whose object
    is unknown (`receiver` None: an untyped receiver, the name as a string, a call at module
    level)."""

    location: str
    receiver: str | None
    caller: str | None = None
    enclosing: str | None = None  # the function or method it is in, dotted (None: module level, or not read)


@record
class SelfUse:
    """One place a method of a provider class names `self.NAME` (its first parameter's
    attribute), called there (`self.NAME(...)`) or read as a value, and where what it yields
    goes: `stored`, the attribute of `self` it is assigned to as a whole or as one branch of a
    conditional expression (`self.fn = self.NAME`, `self.fn = self.NAME(...)`,
    `self.fn = self.NAME if c else self.other`); `returned`, the method returns it the same way
    (`return self.NAME`). Neither: it goes somewhere no reading follows (an argument, a local, a
    nested function)."""

    location: str
    owner: str  # the class whose method it is in, dotted
    method: str
    called: bool
    stored: str | None = None
    returned: bool = False


@record
class ProviderStore:
    """One place the provider's code sets an attribute on an object other than the `self` of
    its own method (`node.origin = self.origin` in `Parser.extend_nodelist`): `annotated`, the
    class the object's annotation names (None: not annotated, or not one provider class), and
    `uses`, the other attributes the same function reads on that object (what ties an
    unannotated object to a class: `node.must_be_first`)."""

    location: str
    annotated: str | None
    uses: tuple[str, ...] = ()


# What a store puts in an attribute: a literal, an object built of a provider class, or anything
# else (a parameter, a call of a function, a computation: what it holds is not read).
StoredKind = Literal["literal", "built", "other"]


@record
class ProviderAssignment:
    """One place the provider's code binds an attribute by its name, on any object (`self` too)
    or in a class body (`x.name = v`, `setattr(x, "name", v)`, `name = v` or `def name` in a
    class), and what it stores there: `value` is the literal's repr, or the class built."""

    location: str
    stored: StoredKind
    value: str = ""


@record
class Forward:
    """Where a callable passes its `**kwargs` on."""

    target: str  # the callable's path; for `super().__init__`, the class whose method makes the call
    explicit: tuple[str, ...] = ()  # keywords passed beside the splat (the target gets those too)
    removed: tuple[str, ...] = ()  # keys the callable takes out of its **kwargs (the target may never get those)
    # `super().__init__(**kwargs)`: the next constructor in the MRO of the *instance's* class,
    # which a class deriving from several bases decides (`ProviderIndex.next_constructor`)
    via_super: bool = False


# ------------------------------------------------------------- decorators rewriting keywords
# Where a key a decorator's wrapper writes or pops comes from: a string literal in the wrapper,
# or a parameter of the decorator factory (whose value the decorator call gives).
KeySource = Literal["literal", "parameter"]


@record
class RewrittenKey:
    name: str  # the literal, or the factory's parameter
    source: KeySource


@record
class Rename:
    """`kwargs[new] = kwargs.pop(old)` in a decorator's wrapper."""

    old: RewrittenKey
    new: RewrittenKey


@record
class KeywordRewrites:
    """What a decorator's wrapper does to the keywords it receives (`provider.keyword_rewrites`)."""

    decorator: str  # the decorator's (or decorator factory's) dotted path
    factory: tuple[Param, ...]  # its parameters, which a decorator call's arguments bind to
    renames: tuple[Rename, ...] = ()
    consumed: tuple[RewrittenKey, ...] = ()  # keys the wrapper pops or deletes outside a rename
    # The first rewrite that is not a rename it reads (its text): which keywords it takes then
    # cannot be told
    opaque: str | None = None
