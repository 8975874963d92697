"""The provider's model registry read as data, and the classes a model object can be.

A `[[registry]]` rule names dict literals mapping an architecture to ``(module, class)``
(module relative to a package); they are read with `ast` from the provider's source,
never imported, and memoised in the index (so the index cache keeps them). `[[slot]]` and
`[[factory]]` rules say which provider attributes and calls hold the registry class for
the model's architecture. `ModelTypes` answers, for a model given with ``--model`` or for
none: which classes can this object be?
"""

from __future__ import annotations

import ast
import bisect
import enum
import functools
import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from apiaudit.errors import InputError
from apiaudit.infra.frozen import record
from apiaudit.provider.records import (
    AssignedValue,
    Found,
    Symbol,
    SymbolKind,
    ValueKind,
)

if TYPE_CHECKING:
    from apiaudit.model import ModelFacts
    from apiaudit.provider.index import ProviderIndex
    from apiaudit.recipes.records import FactoryRule, RegistryRule, RuleBook


@record
class RegistryEntry:
    architecture: str
    module: str  # absolute dotted module
    class_name: str

    @property
    def class_path(self) -> str:
        return f"{self.module}.{self.class_name}"


@record
class Registry:
    """One release's architecture -> class map. `skipped`: keys whose value is not a literal pair."""

    name: str
    module: str
    location: str | None
    entries: tuple[RegistryEntry, ...]
    skipped: tuple[str, ...] = ()

    def lookup(self, architecture: str) -> RegistryEntry | None:
        return next((e for e in self.entries if e.architecture == architecture), None)

    def class_paths(self) -> tuple[str, ...]:
        """Every registered class once, in registry order."""
        return tuple(dict.fromkeys(e.class_path for e in self.entries))

    def architectures_of(self, class_path: str) -> tuple[str, ...]:
        return self._by_class.get(class_path, ())

    def without(self, architectures: frozenset[str]) -> Registry:
        """This registry less the entries of `architectures` (those a non-target registry lists)."""
        if not architectures:
            return self
        kept = tuple(e for e in self.entries if e.architecture not in architectures)
        return Registry(self.name, self.module, self.location, kept, self.skipped)

    @functools.cached_property
    def _by_class(self) -> dict[str, tuple[str, ...]]:
        # cached_property writes the instance dict directly: fine on a frozen dataclass
        found: dict[str, tuple[str, ...]] = {}
        for e in self.entries:
            found[e.class_path] = found.get(e.class_path, ()) + (e.architecture,)
        return found


class CandidateSource(str, enum.Enum):
    """Why these are the classes an object can be."""

    MODEL = "model"  # the registry class for --model's architecture
    LITERAL = "literal"  # a factory call's architectures=[...] literal
    NESTED_CONFIG = "nested-config"  # a factory on the model config's text_config.architectures
    ALL = "all"  # no model given: every class the registry lists
    INFERRED = "inferred"  # provider code assigns or annotates one class


@record
class Candidates:
    """The classes an object can be (a union when several)."""

    classes: tuple[str, ...]
    source: CandidateSource
    architectures: tuple[str, ...] = ()  # the architecture(s) that picked them, when one did

    @property
    def definite(self) -> bool:
        return len(self.classes) == 1


# ------------------------------------------------------------------- reading
def parse_registry(source: str, rule: RegistryRule, location: str | None = None) -> Registry:
    """The registry's entries from the module's source text (dict literals and their ``**`` splats)."""
    tree = ast.parse(source)
    literals: dict[str, ast.Dict] = {}
    for stmt in tree.body:
        targets: list[ast.AST] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Dict):
            for target in targets:
                if isinstance(target, ast.Name):
                    literals[target.id] = value
    entries: dict[str, RegistryEntry] = {}
    skipped: list[str] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        node = literals.get(name)
        if node is None or name in seen:
            return
        for key, value in zip(node.keys, node.values):
            if key is None:  # **other
                if isinstance(value, ast.Name):
                    visit(value.id, seen + (name,))
                continue
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            pair = _literal_pair(value)
            if pair is None:
                skipped.append(key.value)
                continue
            module, class_name = pair
            # A later key wins, as in a Python dict display.
            entries[key.value] = RegistryEntry(key.value, f"{rule.package}.{module}", class_name)

    for name in rule.maps:
        visit(name, ())
    return Registry(rule.name, rule.module, location, tuple(entries.values()), tuple(dict.fromkeys(skipped)))


def _literal_pair(node: ast.AST) -> tuple[str, str] | None:
    if isinstance(node, ast.Tuple) and len(node.elts) == 2:
        first, second = node.elts
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and isinstance(second, ast.Constant) and isinstance(second.value, str):
            return first.value, second.value
    return None


def read_registry(index: ProviderIndex, rule: RegistryRule) -> Registry | None:
    """The registry of the release the index reads (None when its module is absent); memoised."""
    return index._cached(("registry", rule.name, rule.module, rule.maps, rule.package), lambda: _read(index, rule))


def _read(index: ProviderIndex, rule: RegistryRule) -> Registry | None:
    path = index.loader.module_file(rule.module)
    if path is None:
        return None
    data = index.loader.read_module_bytes(path)  # recorded: a changed file invalidates the cache
    try:
        return parse_registry(data.decode("utf-8", errors="replace"), rule, index.loader.relative(path))
    except SyntaxError:
        return None


# ------------------------------------------------------------------ queries
class ModelTypes:
    """Which classes a model object can be, from the rules, the index and the model (or none)."""

    def __init__(self, index: ProviderIndex, book: RuleBook):
        self.index = index
        self.book = book

    def install(self) -> ModelTypes:
        """Let `index.attribute_type` read factory calls with a literal architecture (model-independent:
        ``init_vllm_registered_model(..., architectures=["DeepseekV2ForCausalLM"])`` is that class)."""
        if self.book.factories and self.book.registries:
            self.index.call_results = self._literal_factory_class
            data: list[tuple[object, ...]] = [(r.name, r.module, r.maps, r.package) for r in self.book.registries]
            data += [(f.function, f.registry, f.architectures_keyword, f.nested_config) for f in self.book.factories]
            self.index.call_results_key = hashlib.sha256(repr(data).encode()).hexdigest()[:12]
        return self

    def _literal_factory_class(self, value: AssignedValue) -> Symbol | None:
        rule = self.factory_rule(value.symbol.path)
        literal = value.keyword_list(rule.architectures_keyword) if rule is not None else None
        if not literal:
            return None
        found = self.factory_classes(value.symbol.path, literal, None)
        if found is None or not found.definite:
            return None
        resolved = self.index.resolve(found.classes[0])
        return resolved.symbol if isinstance(resolved, Found) and resolved.symbol.kind is SymbolKind.CLASS else None

    def registry(self, name: str | None = None) -> Registry | None:
        rule = self.book.registry(name)
        return read_registry(self.index, rule) if rule is not None else None

    def target_registry(self, name: str | None = None) -> Registry | None:
        """The registry as a target model's candidates: less the architectures that registries
        marked `target = false` list (drafts for speculative decoding), unless it is one of them."""
        rule = self.book.registry(name)
        found = read_registry(self.index, rule) if rule is not None else None
        if found is None or rule is None or not rule.target:
            return found
        drafts = frozenset(
            entry.architecture
            for other in self.book.registries
            if not other.target
            for entry in getattr(read_registry(self.index, other), "entries", ())
        )
        return found.without(drafts)

    def origins(self, found: Candidates) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(class, the architectures that load it) for each candidate: for a union without a model,
        only the architectures that can be a target."""
        registry = self.target_registry() if found.source is CandidateSource.ALL else self.registry()
        return tuple((c, registry.architectures_of(c) if registry else ()) for c in found.classes)

    def model_classes(self, model: ModelFacts | None, registry: str | None = None) -> Candidates | None:
        """The class the registry maps the model's architecture to; without a model, every class it
        registers that can be a target (`target_registry`)."""
        if model is None or not model.architectures:
            targets = self.target_registry(registry)
            return Candidates(targets.class_paths(), CandidateSource.ALL) if targets is not None else None
        found = self.registry(registry)
        if found is None:
            return None
        return self._for_architectures(found, model.architectures, CandidateSource.MODEL)

    def _for_architectures(self, registry: Registry, architectures: tuple[str, ...], source: CandidateSource) -> Candidates:
        # The provider loads the first architecture it registers.
        for architecture in architectures:
            entry = registry.lookup(architecture)
            if entry is not None:
                return Candidates((entry.class_path,), source, (architecture,))
        return Candidates((), source, architectures)

    def unregistered(self, model: ModelFacts) -> tuple[str, ...] | None:
        """The model's architectures when the registry registers none of them; None when it does (or has no registry)."""
        found = self.registry()
        if found is None or not model.architectures or any(found.lookup(a) for a in model.architectures):
            return None
        return model.architectures

    def slot_classes(self, class_path: str, attribute: str, model: ModelFacts | None) -> Candidates | None:
        """For `instance.attribute` where a [[slot]] rule says it holds the model."""
        for slot in self.book.slots:
            if slot.attribute == attribute and self._is_subclass(class_path, slot.owner):
                return self.model_classes(model, slot.registry)
        return None

    def factory_classes(self, function_path: str, architectures: tuple[str, ...] | None, model: ModelFacts | None) -> Candidates | None:
        """For a call of a [[factory]] function, given its `architectures=` literal (or None)."""
        rule = self.factory_rule(function_path)
        if rule is None:
            return None
        found = self.registry(rule.registry)
        if found is None:
            return None
        if architectures:
            return self._for_architectures(found, architectures, CandidateSource.LITERAL)
        if model is None or not (model.architectures or model.text_architectures):
            targets = self.target_registry(rule.registry) or found
            return Candidates(targets.class_paths(), CandidateSource.ALL)
        nested = model.text_architectures if rule.nested_config else ()
        if nested:
            return self._for_architectures(found, nested, CandidateSource.NESTED_CONFIG)
        return self._for_architectures(found, model.architectures, CandidateSource.MODEL)

    def factory_rule(self, function_path: str) -> FactoryRule | None:
        resolved = self.index.resolve(function_path)
        path = resolved.symbol.path if isinstance(resolved, Found) else function_path
        for rule in self.book.factories:
            target = self.index.resolve(rule.function)
            target_path = target.symbol.path if isinstance(target, Found) else rule.function
            if path in (target_path, rule.function):
                return rule
        return None

    def attribute_classes(self, class_path: str, attribute: str, model: ModelFacts | None) -> Candidates | None:
        """What `instance.attribute` can be: a slot rule, else what the class's code assigns
        (a class, or a factory call read through its rule); None when unknown."""
        slot = self.slot_classes(class_path, attribute, model)
        if slot is not None:
            return slot
        value = self.index.attribute_value(class_path, attribute)
        if value is None:
            return None
        if value.kind is ValueKind.INSTANCE:
            return Candidates((value.symbol.path,), CandidateSource.INFERRED)
        rule = self.factory_rule(value.symbol.path)
        if rule is None:
            return None
        return self.factory_classes(value.symbol.path, value.keyword_list(rule.architectures_keyword), model)

    def may_implement(self, class_path: str, protocol_path: str, members: tuple[str, ...] | None) -> bool:
        """A cheap `ast` pre-check before `index.implements` loads the class's module with Griffe:
        False only when no chain of base names (through the provider's modules) reaches the
        protocol and, for a runtime-checkable one, its member names do not all appear in those
        modules' text. Anything it cannot follow answers True (ask the index)."""
        key = ("may-implement", class_path, protocol_path, members)
        return self.index._cached(key, lambda: self._may_implement(class_path, protocol_path, members))

    def _may_implement(self, class_path: str, protocol_path: str, members: tuple[str, ...] | None) -> bool:
        texts: list[str] = []
        seen: set[str] = set()

        def reaches(path: str, depth: int) -> bool:
            if path == protocol_path:
                return True
            if path in seen:
                return False
            seen.add(path)
            if depth > 30 or not self.index.loader.owns(path):
                return False  # outside the provider: adds no provider protocol
            module, _, name = path.rpartition(".")
            shape = _module_shape(self.index, module)
            if shape is None or name not in shape.classes:
                # a plain re-export (`from .interfaces import SupportsPP` in a package) is
                # followed to its class statement; anything else: ask the index
                target = self.index.reexported_class(path)
                return target is None or target == path or reaches(target, depth + 1)
            bases, body = shape.classes[name]
            if "typing.Protocol" not in {shape.absolute(b) for b in bases}:
                texts.append(body)  # a protocol base brings its own members, not this one's
            for base in bases:
                target = shape.absolute(base)
                if target is None or reaches(target, depth + 1):
                    return True
            return False

        if reaches(class_path, 0):
            return True
        if members:
            joined = "\n".join(texts)
            return all(m in joined and re.search(rf"\b{re.escape(m)}\b", joined) for m in members)
        return False

    def _is_subclass(self, class_path: str, owner: str) -> bool:
        # memoised as a plain bool, so a warm scan (index cache) loads no module to answer it
        return self.index._cached(("is-subclass", class_path, owner), lambda: self._subclass(class_path, owner))

    def _subclass(self, class_path: str, owner: str) -> bool:
        resolved = self.index.resolve(owner)
        owner_path = resolved.symbol.path if isinstance(resolved, Found) and resolved.symbol.kind is SymbolKind.CLASS else owner
        return owner_path in self.index.mro_paths(class_path)


@record
class _ModuleShape:
    """A module's top-level classes (bases as written, body text) and its imports (from `ast`)."""

    module: str
    classes: dict  # name -> (bases, source of the class)
    imports: dict

    def absolute(self, written: str | None) -> str | None:
        if written is None:
            return None
        head, _, rest = written.partition(".")
        if head in self.classes and not rest:
            return f"{self.module}.{head}"
        if head in self.imports:
            return self.imports[head] + (f".{rest}" if rest else "")
        return f"builtins.{written}" if not rest and head in _BUILTINS else None


def _module_shape(index: ProviderIndex, module: str) -> _ModuleShape | None:
    cache = index.__dict__.setdefault("_module_shapes", {})
    if module not in cache:
        cache[module] = _read_shape(index, module)
    return cache[module]


_CLASS_LINE = re.compile(r"^class\s+(\w+)\s*(\(|:)")
_FROM_IMPORT = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\s+(.+)$")
_IMPORT = re.compile(r"^\s*import\s+(.+)$")
_BODY_STARTS = ("", " ", "\t", "#", ")")  # a line starting so (or blank) goes on a class body
_BUILTINS = frozenset(dir(__import__("builtins")))


def _read_shape(index: ProviderIndex, module: str) -> _ModuleShape | None:
    """Line-based (no full parse: this runs over every model module of a registry): top-level
    class headers, each class's lines, and the import statements anywhere in the module."""
    path = index.loader.module_file(module)
    if path is None:
        return None
    data = index.loader.read_module_bytes(path)
    lines = data.decode("utf-8", errors="replace").splitlines()
    package = module if path.name.startswith("__init__.") else module.rpartition(".")[0]
    imports: dict[str, str] = {}
    classes: dict[str, tuple[tuple[str | None, ...], str]] = {}
    # Only lines that may be an import or a class header are looked at, and a class body ends at
    # the next line that starts at column 0 (not blank, a comment or a closing bracket).
    candidates = [i for i, line in enumerate(lines) if "import" in line or line.startswith("class")]
    outdented = [i for i, line in enumerate(lines) if line[:1] not in _BODY_STARTS and line.strip()]
    done = 0  # the lines before this one were read as part of an import or a class
    for i in candidates:
        if i < done:
            continue
        line = lines[i]
        if _FROM_IMPORT.match(line) or _IMPORT.match(line):
            text = line
            while "(" in text and ")" not in text and i + 1 < len(lines):
                i += 1
                text += " " + lines[i]
            _imports(text, package, imports)
            done = i + 1
            continue
        header = _CLASS_LINE.match(line)
        if header is None:
            continue
        start = i
        text = line.split("#", 1)[0]
        while not _header_ends(text) and i + 1 < len(lines):
            i += 1
            text += " " + lines[i].split("#", 1)[0]
        after = bisect.bisect_right(outdented, i)
        done = outdented[after] if after < len(outdented) else len(lines)
        classes[header.group(1)] = (_bases(text), "\n".join(lines[start:done]))
    return _ModuleShape(module, classes, imports)


def _header_ends(text: str) -> bool:
    """Whether a class header read so far is whole: its brackets closed and a `:` after them
    (`class A(B):`, and `): ...` closing a header written over several lines)."""
    if text.count("(") > text.count(")"):
        return False
    return ":" in text[text.rfind(")") + 1 :]


def _imports(text: str, package: str, into: dict[str, str]) -> None:
    text = text.split("#", 1)[0].replace("(", " ").replace(")", " ").replace("\\", " ")
    found = _FROM_IMPORT.match(text)
    if found is not None:
        dots, base, names = found.groups()
        if dots:
            parts = package.split(".")
            anchor = ".".join(parts[: len(parts) - len(dots) + 1])
            base = f"{anchor}.{base}" if base else anchor
        for item in names.split(","):
            words = item.split()
            if words:
                into[words[2] if len(words) == 3 and words[1] == "as" else words[0]] = f"{base}.{words[0]}"
        return
    found = _IMPORT.match(text)
    for item in (found.group(1).split(",") if found else ()):
        words = item.split()
        if len(words) == 3 and words[1] == "as":
            into[words[2]] = words[0]
        elif words:
            into[words[0].split(".")[0]] = words[0].split(".")[0]


def _bases(header: str) -> tuple[str | None, ...]:
    """The bases of `class X(A, b.B, metaclass=M):` as written; None for what is not a name."""
    head = header.rstrip().rstrip(":")
    if "(" not in head:
        return ()
    return _bases_written(head[head.find("(") + 1 : head.rfind(")")])


@functools.lru_cache(maxsize=4096)
def _bases_written(inner: str) -> tuple[str | None, ...]:
    """`_bases` of one header's bracket text; kept, as most model classes share a few (`nn.Module, SupportsPP`)."""
    if not inner.strip():
        return ()
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return (None,)
    if not isinstance(call, ast.Call):
        return (None,)
    return tuple(_written(b) for b in call.args)


def _written(node: ast.AST) -> str | None:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _written(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None  # a call or anything computed: cannot follow


# ------------------------------------------------------- unknown architectures
def check_architecture(types: ModelTypes, model: ModelFacts, provider_name: str, provider_version: str | None,
                       cache_dir: Path | None) -> None:
    """Raise one InputError line when the provider's registry registers none of the model's architectures."""
    missing = types.unregistered(model)
    if missing is None:
        return
    named = ", ".join(missing)
    rule = types.book.registry()
    first = first_release_registering(provider_name, missing, rule, cache_dir) if cache_dir and rule else None
    release = f"{provider_name} {provider_version}" if provider_version else provider_name
    if first is not None:
        later = f"{provider_name} {first[1]} is the first release in the cache that registers {first[0]}"
    else:
        later = "no release in the cache registers it"
    raise InputError(f"{release} does not register the architecture {named} in its model registry ({later})")


_RELEASE_DIR = re.compile(r"^(?P<name>.+)-(?P<version>\d[^-]*)$")


def first_release_registering(provider_name: str, architectures: tuple[str, ...], rule: RegistryRule,
                              cache_dir: Path) -> tuple[str, str] | None:
    """(architecture, version) of the oldest cached release whose registry lists one of them."""
    from packaging.utils import canonicalize_name

    from apiaudit.sources.cache import releases_dir

    base = releases_dir(cache_dir)
    wanted = canonicalize_name(provider_name)
    versions: list[tuple[Version, Path]] = []
    for entry in base.iterdir() if base.is_dir() else ():
        match = _RELEASE_DIR.match(entry.name)
        if not match or canonicalize_name(match["name"]) != wanted:
            continue
        try:
            versions.append((Version(match["version"]), entry))
        except InvalidVersion:
            continue
    for version, entry in sorted(versions):
        module_file = entry.joinpath(*rule.module.split(".")).with_suffix(".py")
        if not module_file.is_file():
            continue
        try:
            registry = parse_registry(module_file.read_text("utf-8", errors="replace"), rule)
        except SyntaxError:
            continue
        for architecture in architectures:
            if registry.lookup(architecture):
                return architecture, str(version)
    return None


def _register_for_caches() -> None:
    # Registry answers are memoised in the provider index cache.
    import sys

    from apiaudit.cache import codec

    codec.register_module(sys.modules[__name__])


_register_for_caches()
