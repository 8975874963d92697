"""What the consumer stage extracts from source: uses of the provider, not yet judged.

A `Use` is a chain of steps from a root (a provider name as imported, or `self` in a
class that may be mixed into provider classes) through attribute loads, calls and
subscripts. The checks stage walks chains against the provider index; this stage never
looks at the provider.
"""

from __future__ import annotations

import enum
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from apiaudit.infra.frozen import record

if TYPE_CHECKING:
    from apiaudit.recipes.records import LaunchCommand, Pattern, RemoteCodeRule


@record(slots=True)
class Site:
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None


ArgKind = Literal["positional", "keyword", "star", "starstar"]


@record(slots=True)
class Arg:
    kind: ArgKind
    name: str | None
    site: Site
    via_splat: bool = False  # a key a `**dict` splat is known to hold (not written at the call)


@record(slots=True)
class CallShape:
    args: tuple[Arg, ...]

    @property
    def positional(self) -> int:
        return sum(1 for a in self.args if a.kind == "positional")

    @property
    def keywords(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "keyword")

    @property
    def has_star(self) -> bool:
        return any(a.kind == "star" for a in self.args)

    @property
    def has_starstar(self) -> bool:
        return any(a.kind == "starstar" for a in self.args)

    def keyword_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.keywords if a.name)


# "dynamic": getattr with a computed name; "store": an attribute set (`x.name = v`), which fails
# only on an object that takes no new attributes. A "subscript" step's `name` is the index of an
# item unpacked from a tuple (`first, *rest = f()`), when it is one, or the slice a starred
# target takes (`"2:"`, `"1:-1"`).
StepKind = Literal["attr", "call", "instance", "subscript", "dynamic", "narrow", "store"]


@record(slots=True)
class Step:
    kind: StepKind
    name: str | None = None  # attribute name
    call: CallShape | None = None
    check: bool = True  # False: replayed from an earlier assignment, already judged there
    receiver: str | None = None  # source text of the receiver, for call steps on attributes
    # kind "narrow": the value passed this guard (hasattr, isinstance, a TypeIs function) with
    # `guard.expect`; the checks keep only the candidate classes that pass it.
    guard: "Condition | None" = None
    # A "subscript" step naming an item's index: the number of items the value must have for the
    # unpacking to work (`a, b, c = f()`: 3; None: at least the index's, a starred target takes the
    # rest); where it has another number, the unpacking raises ValueError and the item is not known.
    arity: int | None = None
    # The same, for an item of what a consumer method returns (`a, b = self.prepare()`, the method
    # returning items it unpacked): the method, `pkg.mod.Class.name`. The item is known only where
    # no consumer subclass may override it (`self.prepare` may run the subclass's).
    via: str | None = None


# "symbol": a provider dotted path; "self": a consumer class; "super"; "fself": a function bound as method;
# "param": an unannotated parameter of a consumer method, typed by the provider method it overrides;
# "fparam": one of a function bound as method (`name` the function), typed by the method it replaces;
# "cls": a consumer class object whose member, not its own, comes from its provider base (`Sub.from_parent`).
RootKind = Literal["symbol", "self", "super", "fself", "param", "fparam", "hparam", "cls"]


@record(slots=True)
class Root:
    kind: RootKind
    name: str  # dotted path: provider symbol, consumer class, or consumer function
    # "super" as `super(Cls, self)`: the class the lookup starts after (provider or consumer dotted path).
    after: str | None = None
    # "param" (`name` is the consumer class): the method, the parameter's name and its position
    # among the positional parameters, self included (-1: keyword-only). The checks stage reads
    # the annotation of the provider method it overrides; the walk never sees the provider.
    # "fparam" (`name` is the function): the same, the method being the one it is put over.
    # "hparam" (`name` is the hook): a parameter of a hook implementation (a function or method
    # named with a [[entry_point]] rule's hook prefix), which the provider passes by keyword: the
    # checks read its class from the release's hook specification.
    method: str | None = None
    param: str | None = None
    position: int = -1


# The import exception an enclosing `try` catches: a missing name raises ImportError, which
# `except ModuleNotFoundError` does not catch.
CaughtImport = Literal["ImportError", "ModuleNotFoundError"]


class ConditionKind(str, enum.Enum):
    """A guard only the provider index can decide (the consumer stage never looks at it)."""

    HAS_ATTR = "has-attr"  # `hasattr(target, name)`, `getattr(target, name, default)` is not None, ...
    HAS_PARAM = "has-param"  # `name in inspect.signature(target).parameters`
    IS_INSTANCE = "is-instance"  # `isinstance(target, name)`: name is a provider class path
    IMPORT_FAILS = "import-fails"  # one of `imports` fails with an exception `caught` catches
    NARROWS = "narrows"  # `name(target)`: name is a provider TypeIs/TypeGuard function
    # `target <name> operand`: a provider module constant (`VERSION >= (4, 2)`) compared with
    # a literal; name is the operator (`ast` class name), operand the literal's repr. Not a
    # literal on the release: a test on run-time data (both sides run), never undecided.
    COMPARES = "compares"
    # `param is not None` / `if param:` on a parameter of a class's `__init__` that defaults to
    # None and is never rebound: true only where a caller passes it. `name` is the parameter,
    # `owner` the class; the checks ask who builds the class (a [[plugin]] factory's calls).
    # Expected False (the `param is None` side of an `is`/`is not None` test): dead only where
    # the provider alone builds the class and every call passes a value that is never None.
    ARGUMENT = "argument"
    # `if obj.flag:` on an attribute read off an instance (`target`: `self.flag`, `param.flag`,
    # attributes only): its truth, decided by the checks where every store of the attribute in
    # the provider is a literal of one truth and no consumer code stores it (a flag the provider
    # keeps fixed, `self.cascade_enabled = False`). Otherwise a test on run-time data, as it was:
    # both sides run, never undecided.
    FIXED_VALUE = "fixed-value"
    # `if not check_support():` of a consumer function (`name`, dotted): the checks read whether it
    # probes the provider (imports, `find_spec`, `hasattr` of names of it); if so, the guarded code
    # runs only where the probe passes (undecided), otherwise the test is on run-time data.
    PROBE_CALL = "probe-call"


@record(slots=True)
class ImportRef:
    module: str
    name: str | None  # None: `import module`
    line: int = 0


@record(slots=True)
class Condition:
    """What must hold for a line to run: the test evaluates to `expect` on the audited release."""

    kind: ConditionKind
    expect: bool
    text: str  # the guard's source, for findings that stay conditional
    target: tuple[Root, tuple[Step, ...]] | None = None
    name: str | None = None
    imports: tuple[ImportRef, ...] = ()
    caught: CaughtImport = "ImportError"
    operand: str = ""  # COMPARES: the literal's repr
    # A narrowing guard whose failing side raises/returns: the lines after it run only for the
    # classes that pass; when none passes the job stops there (`guard-fails`), and what follows
    # is still checked, "behind the guard".
    stops: bool = False
    line: int = 0  # the guard's line, for findings behind it
    owner: str = ""  # ARGUMENT: the class whose `__init__` takes the parameter


@record(slots=True)
class GuardStop:
    """`if not guard(x): raise ...`: the job stops here unless `condition` holds."""

    condition: Condition
    site: Site
    function: str
    live: "Liveness"


@record(slots=True)
class ReleaseGate:
    """`if <a test of the provider's release>: raise ...` (or `assert <such a test>`), the raise
    taken on the audited release: the consumer's own code refuses this release there (a plugin's
    supported-versions check)."""

    site: Site  # the raise (or the failing `assert`)
    function: str  # qualified name of the enclosing function, "<module>" at top level
    test: str  # the test's source
    live: "Liveness"
    raises_when: bool = True  # the test's truth that raises: False for an `else:` arm or an `assert`


@record(slots=True)
class Liveness:
    """Whether a line runs: always, under guards the index decides, or under guards nobody can decide."""

    conditions: tuple[Condition, ...] = ()
    undecided: tuple[str, ...] = ()  # source text of guards the engine cannot evaluate

    @property
    def conditional(self) -> bool:
        return bool(self.undecided)

    @property
    def guard(self) -> str | None:
        return " and ".join(self.undecided) if self.undecided else None

    def under(self, condition: Condition | None = None, undecided: str | None = None) -> "Liveness":
        conditions = self.conditions + ((condition,) if condition is not None and condition not in self.conditions else ())
        texts = self.undecided + ((undecided,) if undecided and undecided not in self.undecided else ())
        return Liveness(conditions, texts)


ALWAYS = Liveness()


@record(slots=True)
class Use:
    root: Root
    steps: tuple[Step, ...]
    site: Site
    function: str  # qualified name of the enclosing function, "<module>" at top level
    text: str  # the expression's source, shortened
    live: Liveness = ALWAYS
    # The root was bound by an import that may fail while its handler left the name unbound/None.
    failed_import: ImportRef | None = None
    # The line of the enclosing `except TypeError:` that handles a call failing to bind, without
    # re-raising (a probe: `try: f(x, new=1)` / `except TypeError: f(x)`); 0: none.
    type_error_handler: int = 0
    # The line of the `except TypeError:` (not re-raising) whose body this use is in: the other
    # way of such a probe, run only where the `try:` body's call raises TypeError; 0: none.
    type_error_retry: int = 0


@record(slots=True)
class ImportUse:
    module: str
    name: str | None
    site: Site
    guarded: str | None = None  # why a failure would not break the run: "try/except ImportError", "TYPE_CHECKING"
    live: Liveness = ALWAYS
    # The exception the enclosing `try` catches: a missing name raises ImportError, which
    # `except ModuleNotFoundError` does not catch.
    caught: CaughtImport | None = None
    # What the handler does instead where it drops a feature (a flag set false, stand-in classes):
    # the run goes on, without what needed the import.
    drops: str | None = None


@record(slots=True)
class ReachedWhen:
    """A consumer module this file names only on a condition (consumer/reach.py): a dotted-name
    string a `return` gives, or an assignment stores, in a branch of run-time tests (`if use_v1:
    return "pkg.v1.Backend"` / `else: return "pkg.v0.Backend"`), or the value of an import map that serves it in a provider
    module's place (`{"prov.layers.sampler": "pkg.ops.sampler"}`: it runs when that is imported)."""

    module: str
    site: Site
    condition: str = ""  # the tests' text (`not use_v1 and not use_mla`); "" for an import map
    stands_for: str = ""  # the provider module an import map serves it for
    # a test reads a provider object (`envs.USE_V1`) or its version, which the release may decide
    # (or no longer have)
    by_release: bool = False


@record(slots=True)
class RunsWhen:
    """Why a module runs only on a condition: a `ReachedWhen` of a file that runs (`where`, its
    path and line), by which the module, or a module importing it, is reached."""

    named: ReachedWhen
    where: str

    def text(self, missing: bool = False) -> str:
        """`runs only when `not use_v1` (pkg/platform.py:12 returns its name there)`; with
        `missing`, the provider module an import map stands for is one the release lacks."""
        w = self.named
        if w.stands_for:
            gone = ", which this release does not have" if missing else ""
            return f"runs only when something imports {w.stands_for}{gone} (the import map at {self.where} serves {w.module} in its place)"
        decided = ", a test of a provider value the release may decide" if w.by_release else ""
        return f"runs only when `{w.condition}`{decided} ({self.where} names {w.module} only there)"


@record(slots=True)
class DeadCode:
    """Statements (lines `first` to `last`) that never run on the audited release, and `why`: the
    test the release decides against them (`` `if ver >= Version("2.0")` (line 25) returns first ``)."""

    first: int
    last: int
    why: str


@record(slots=True)
class NamedOnlyInDeadCode:
    """A module-level function of this file that the file names (installs, calls, passes on) only
    in code the release never runs (consumer/reach.py, `named_only_in_dead_code`): `named_at`, the first line naming it; `why`, why that line never runs. Whether another
    file names it is decided once every file is read (engine.check_file)."""

    name: str
    body: tuple[int, int]  # its body's first and last lines
    named_at: int
    why: str


@record(slots=True)
class PrivateCalls:
    """A private name (`_x`, not a dunder) this file calls directly (`self._x(...)`, `cls._x(...)`,
    `_x(...)`), and the liveness of each call: a helper whose every call is dead on the release
    never runs there (its body is not judged)."""

    name: str
    calls: tuple[Liveness, ...]


@record(slots=True)
class ClassFacts:
    dotted: str
    provider_bases: tuple[str, ...]  # dotted provider paths as imported
    consumer_bases: tuple[str, ...]  # consumer classes, or names of neither side (`torch.nn.Module`)
    own_members: frozenset[str]
    site: Site
    # Bases the walk could not read (a call, a name bound at run time): any member may come from them.
    unread_bases: tuple[str, ...] = ()
    # Whether the class statement runs (it is in a branch, or a function): a base that is no class raises there.
    live: Liveness = ALWAYS
    # A method copies the class's own members onto another object with `setattr` (a patch-class
    # framework: `consumer/patching.py`'s `copies_members`): its subclasses patch their target.
    copies_members: bool = False


DefKind = Literal["function", "method", "staticmethod", "classmethod", "property"]
DefParamKind = Literal["positional-only", "positional-or-keyword", "var-positional", "keyword-only", "var-keyword"]


@record(slots=True)
class DefParam:
    name: str
    kind: DefParamKind
    has_default: bool = False


@record(slots=True)
class DefinedFunction:
    """A consumer function or method as a caller would bind to it: the contract the provider
    calls when it calls an override, a plugin's constructor or a function put over its own."""

    dotted: str  # module.Class.method, module.function
    owner: str | None  # the class it is defined in (dotted), None for a plain function
    params: tuple[DefParam, ...]  # as written, self/cls included
    kind: DefKind
    site: Site
    # the arity of each `return` that returns a value: n for a tuple display, None otherwise
    returns: tuple[int | None, ...] = ()
    abstract: bool = False
    # (keyword, string) of each decorator call's literal string keywords (`@impl(specname="x")`)
    decorator_strings: tuple[tuple[str, str], ...] = ()


# "helper": a call of the consumer's own patching helper (`consumer/patching.py`), as a decorator.
ReplacementVia = Literal["assign", "setattr", "patch", "method-type", "helper"]


@record(slots=True)
class Replacement:
    """A consumer function put where a provider object's attribute was: `Cls.m = f`,
    `obj.m = types.MethodType(f, obj)`, `setattr(obj, "m", f)`, `mock.patch.object(Cls, "m", f)`.

    `target` is the dotted name the object is reached by when it is a module-level name (an
    import or a consumer class), else None (the visitor's `MethodBinding` on the same line says
    what the object is)."""

    attribute: str
    function: str | None  # the consumer function's dotted path; None when not one of the file's functions
    target: str | None
    via: ReplacementVia
    bound: bool  # the provider's callers' arguments start at the function's second parameter
    site: Site
    # Arguments a patching helper's wrapper passes before the provider's (the original method):
    # the provider's callers' arguments start that many parameters later.
    lead: int = 0
    # The test of an enclosing `if hasattr(obj, "attribute")`: the patch is skipped, quietly,
    # where the attribute is gone.
    guard: str | None = None


@record(slots=True)
class Injection:
    keyword: str
    target: str | None  # dotted consumer class named by a string literal; None when not a literal
    site: Site
    live: Liveness = ALWAYS
    # The refusal it sits behind ("`assert <test>` (line N)"): a statement that raises on the
    # audited release comes first in its block, so it never runs there; None for a live one.
    behind: str | None = None


@record(slots=True)
class RpcCall:
    method: str
    name: str | None  # None when the RPC name is not a string literal
    site: Site
    function: str
    live: Liveness = ALWAYS
    # `self.collective_rpc(...)`: the consumer class `self` is (its own override may take the call).
    receiver: str | None = None


@record(slots=True)
class MethodBinding:
    """`types.MethodType(func, obj)`: consumer function `func` runs with `obj` as self."""

    function: str
    target: tuple[Root, tuple[Step, ...]] | None  # the chain of obj, when the visitor can tell
    site: Site
    own: tuple[str, ...] = ()  # attributes the consumer set on obj itself (not provider members)


@record(slots=True)
class AttributeStore:
    """`obj.name = v` / `setattr(obj, "name", v)` on an object that is not the class's own `self`:
    the consumer adds `name` to it (any object without __slots__ takes it), so a read of `name`
    elsewhere may be the consumer's own member, not a provider one."""

    name: str
    target: tuple[Root, tuple[Step, ...]] | None  # the chain of obj, when it reaches the provider
    site: Site
    # obj's own last attribute name (`session.config._x = v`: "config"), None for a plain name:
    # an object whose type is not known is matched to a read through an attribute of that name.
    holder: str | None = None
    # A member of a patch class `class P(Base[Target])` (site: its class statement), copied onto
    # Target only if Base (or a consumer class above it) copies its subclasses' members: the
    # checks keep the store only then (`ClassFacts.copies_members`); the dotted Base here.
    copied_by: str | None = None


NoteKind = Literal["version-compared-as-string"]


@record(slots=True)
class Note:
    """Something the consumer stage saw that is worth a finding without asking the provider."""

    kind: NoteKind
    site: Site
    text: str  # the expression's source
    detail: str  # what Python makes of it on the audited release
    live: Liveness = ALWAYS
    breaks: bool = False  # the test of an `assert` that fails on the release: it raises there


@record(slots=True)
class PatternHit:
    """Where a text [[pattern]] rule fires (`ConsumerOptions.patterns`), found while the file was
    parsed, with what its fix needs."""

    pattern: str  # the pattern's id
    site: Site  # the whole call
    bound: str | None = None  # result-subscripted through a name: the name the result is bound to


class TrustArgument(str, enum.Enum):
    """What an Auto class's load call passes for the trust keyword."""

    TRUE = "true"
    FALSE = "false"
    ABSENT = "absent"
    UNKNOWN = "unknown"  # a non-literal value, or a **splat that may carry it


@record(slots=True)
class AutoCallSite:
    """``Auto.method(model, ...)`` in a consumer file (`ConsumerOptions.remote_code`).
    `model_literal` is the model argument when it is a string literal (a hub id or path), None
    when it is computed (a variable). Columns are characters."""

    path: str
    line: int
    column: int
    end_line: int | None
    end_column: int | None
    auto_class: str
    trust: TrustArgument
    model_literal: str | None
    has_model_argument: bool
    source: str | None = None
    rule: str = ""  # the id of the [[remote_code]] rule that found it


# A launch argument's text where a part of it is only known at run time (a shell `$VAR`, an
# f-string's `{...}`, a Python expression in an argv list); JSON built from a dict whose value
# is computed holds it as that value.
UNKNOWN = "\x00"


@record(slots=True)
class LaunchArg:
    """One argument of a provider command line as the program receives it (shell quoting
    undone); `UNKNOWN` marks what only run time knows (the whole text, for a computed item)."""

    text: str
    site: Site

    @property
    def known(self) -> bool:
        return UNKNOWN not in self.text


@record(slots=True)
class LaunchLine:
    """A command line that starts the provider's server (`[[launch]]` rule `launch`), found in a
    shell script, a YAML/TOML config or a Python argv list/string: the command as written and
    its arguments after it (one computed at run time, a `*splat` or `"$@"`, is `UNKNOWN`)."""

    launch: str  # the [[launch]] rule's name
    module: str  # the entry module the command runs
    command: str  # how it was written: "vllm serve", "python -m pkg.mod"
    site: Site  # the command's first word
    args: tuple[LaunchArg, ...]


@record(slots=True)
class PluginName:
    """A consumer class named for the provider to build (`module`, `name`): by a registration call
    or a dict setting a plugin rule's keys (`via`: the call or the key), at `site`. `receiver`: what
    the registration call is made on, dotted as the module's imports name it (`Factory` of
    `Factory.register(...)`); None for a dict, or a receiver the module's names do not say."""

    module: str
    name: str
    via: str
    site: Site
    receiver: str | None = None


@record(slots=True)
class EntryPoint:
    """One entry point the consumer distribution declares: `group`, its `name`, and the object it
    names (`module`, `attr`: "" for the module itself)."""

    group: str
    name: str
    module: str
    attr: str


def source_of(raw: bytes) -> str:
    """A consumer file's text as every reader of it reads its bytes (a cached record's own text is
    told by this being equal): decoded as Python decodes a module, its coding cookie honoured;
    bytes that do not decode are replaced here, and `python_source` refuses them."""
    return raw.decode(declared_encoding(raw), errors="replace")


def python_source(raw: bytes, filename: str) -> str:
    """A `.py` file's text, or the SyntaxError Python raises for it: bytes that are not valid in
    the encoding the file declares (UTF-8 without a PEP 263 cookie) make no module, so nothing
    in the file may be judged as if they did."""
    encoding = declared_encoding(raw)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        line = raw.count(b"\n", 0, exc.start) + 1
        byte = raw[exc.start : exc.start + 1].hex()
        why = "no encoding declared" if encoding == "utf-8" else f"the declared encoding is {encoding}"
        raise SyntaxError(
            f"byte 0x{byte} on line {line} is not valid {encoding} ({why}; see PEP 263)",
            (filename, line, len(raw[line_start : exc.start].decode(encoding, errors="replace")) + 1, None),
        ) from None


def declared_encoding(raw: bytes) -> str:
    """The encoding a module's bytes declare (a coding cookie in its first two lines, or a UTF-8
    BOM), as `tokenize.detect_encoding` reads them; UTF-8 where nothing is declared."""
    first_end = raw.find(b"\n")
    second_end = raw.find(b"\n", first_end + 1) if first_end >= 0 else -1
    if b"coding" not in (raw if second_end < 0 else raw[:second_end]):  # the common case, without tokenize
        return "utf-8"
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:  # an unknown encoding: Python refuses the file, and parsing it says so
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


@lru_cache(maxsize=8)
def lines_of(source: str) -> tuple[str, ...]:
    """A file's lines, split once for the few files being read or reported at a time."""
    return tuple(source.splitlines())


@record(slots=True)
class ConsumerFile:
    path: str  # relative to the consumer root, posix
    module: str
    uses: tuple[Use, ...] = ()
    imports: tuple[ImportUse, ...] = ()
    classes: tuple[ClassFacts, ...] = ()
    injections: tuple[Injection, ...] = ()
    rpc_calls: tuple[RpcCall, ...] = ()
    method_bindings: tuple[MethodBinding, ...] = ()
    attribute_stores: tuple[AttributeStore, ...] = ()
    guard_stops: tuple[GuardStop, ...] = ()
    release_gates: tuple[ReleaseGate, ...] = ()
    notes: tuple[Note, ...] = ()
    pattern_hits: tuple[PatternHit, ...] = ()
    auto_calls: tuple[AutoCallSite, ...] = ()
    functions: tuple[DefinedFunction, ...] = ()
    replacements: tuple[Replacement, ...] = ()
    launch_lines: tuple[LaunchLine, ...] = ()
    # Options the file adds (`.add_argument("--x")`) to a parser it builds with a [[launch]]
    # parser function: flags of the provider's command as the consumer's own CLI runs it.
    cli_flags: tuple[str, ...] = ()
    # Classes the file names for a provider factory to build ([[plugin]] register/keys).
    plugin_names: tuple[PluginName, ...] = ()
    # The file's text as read ("" where nothing was read): kept whole, not as its lines (a line
    # is an object of its own: the lines of a 1,000-file consumer cost 33 MB, its text 15 MB).
    source: str = ""
    error: str | None = None  # a parse error: nothing else was extracted
    error_site: Site | None = None
    # Modules this file may make run, by dotted name: what its import statements on live lines
    # name (every `from M import n` gives M and M.n), and dotted consumer names its string
    # literals hold (`"pkg.ext.Worker"`, `"pkg.cli:main"`): the edges of the reachability graph.
    reaches: tuple[str, ...] = ()
    private_calls: tuple[PrivateCalls, ...] = ()
    # Private names the file uses otherwise (read, passed on, named in a string): they may run.
    private_refs: tuple[str, ...] = ()
    # Module-level functions the file names only in code the release never runs (a patch a version
    # ladder installs on other releases only): their findings are conditional (docs/rules.md).
    dead_named: tuple[NamedOnlyInDeadCode, ...] = ()
    # Set by `collect` (never cached with the file: it depends on the whole tree): why the module
    # may never run, when nothing reachable imports it (consumer/reach.py).
    unreachable: str | None = None
    # Modules this file names only on a condition (not in `reaches`): consumer/reach.py.
    reaches_when: tuple[ReachedWhen, ...] = ()
    # Set by `collect` as `unreachable` is: the conditions under which alone the module runs,
    # when it is reached only through names given on a condition (any one of them suffices).
    runs_when: tuple[RunsWhen, ...] = ()

    @property
    def lines(self) -> tuple[str, ...]:
        """The text's lines, as `str.splitlines` gives them."""
        return lines_of(self.source)


@record(slots=True)
class ConsumerOptions:
    """Facts the visitor needs from outside: which names are the provider's, and rule-data hooks."""

    provider_packages: tuple[str, ...]
    # consumer names that are provider objects re-exported: ("driver.compat.Params", "engine.params.Params")
    reexports: tuple[tuple[str, str], ...] = ()
    rpc_methods: tuple[tuple[str, int | None, str | None], ...] = ()  # (method, name_arg, name_keyword)
    injection_keywords: tuple[str, ...] = ()
    # The audited release, so version guards fold as they would run there (None: undecided).
    provider_version: str | None = None
    provider_distribution: str | None = None
    # The Python the audited code is assumed to run on (`sys.version_info` guards).
    python_version: tuple[int, int, int] = (3, 12, 0)
    # Values other consumer modules export (module constants, guard helpers): dotted -> value.
    shared_values: tuple[tuple[str, object], ...] = ()
    # Rule data matched on the parsed file, so no later stage parses it again: the text
    # [[pattern]]s in force, and the [[remote_code]] rules (given with --model).
    patterns: tuple[Pattern, ...] = ()
    remote_code: tuple[RemoteCodeRule, ...] = ()
    # The provider command lines to find ([[launch]] rules): (rule name, command) pairs.
    launch_commands: tuple[tuple[str, LaunchCommand], ...] = ()
    # The [[launch]] rules' parser functions (dotted): a file building one records the flags it adds.
    launch_parsers: tuple[str, ...] = ()
    # How a class is named for a [[plugin]] factory: (call name, module arg, class arg) and
    # (module key, class key).
    plugin_calls: tuple[tuple[str, int, int], ...] = ()
    plugin_keys: tuple[tuple[str, str], ...] = ()
    # Hook implementations ([[entry_point]] rules with hookspecs): (name prefix, the decorator
    # keyword that names another hook, "" for none).
    hook_prefixes: tuple[tuple[str, str], ...] = ()
