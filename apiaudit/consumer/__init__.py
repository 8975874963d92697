"""Consumer stage: every provider use in the consumer's files, from source alone."""

from __future__ import annotations

import ast
import hashlib
import sys
import warnings
from dataclasses import astuple, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from apiaudit.cache import codec
from apiaudit.consumer import records
from apiaudit.consumer.auto_calls import auto_calls
from apiaudit.consumer.imports import ConsumerNames, module_imports, names_of
from apiaudit.consumer.launch import job_file, python_lines
from apiaudit.consumer.one_pass import RecordingNames, import_order, still_valid
from apiaudit.consumer.patterns import pattern_hits
from apiaudit.consumer.plugins import added_flags, launch_plugin_names, plugin_names
from apiaudit.consumer.positions import to_characters
from apiaudit.consumer.reach import mark_unreachable, named_modules
from apiaudit.consumer.records import ConsumerFile, ConsumerOptions, Site, python_source, source_of
from apiaudit.consumer.contracts import defined_functions, replacements
from apiaudit.consumer.visitor import ModuleVisitor
from apiaudit.infra.atomic import is_disk_full
from apiaudit.infra.gcpause import paused_gc
from apiaudit.infra.frozen import record
from apiaudit.infra.workers import News, plan, run_split
from apiaudit.sources.base import CodeTree
from apiaudit.sources.cache import content_verifier

codec.register_module(records)


def parse_quietly(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` without the compiler's warnings about the audited code (invalid escape
    sequences and the like): they are the consumer's business, not lines of our output."""
    with warnings.catch_warnings(), paused_gc():
        warnings.simplefilter("ignore")
        return ast.parse(source, filename=filename)


def module_name(tree: CodeTree, path: Path) -> tuple[str, bool]:
    """Dotted module name of a file under the tree's root, and whether it is a package __init__."""
    rel = path.relative_to(tree.root).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts) if parts else path.stem, is_package


def collect_file(
    tree: CodeTree,
    path: Path,
    options: ConsumerOptions,
    syntax: ast.Module | None = None,
    names: ConsumerNames | None = None,
    raw: bytes | None = None,
) -> ConsumerFile:
    """One file's uses; `names`: what the other files export (default: the tables in `options`);
    `syntax` and `raw`: its tree and bytes, when already at hand."""
    rel = path.relative_to(tree.root).as_posix()
    module, is_package = module_name(tree, path)
    try:
        raw = path.read_bytes() if raw is None else raw
        source = python_source(raw, rel)
        if syntax is None:
            syntax = _parse_bytes(raw, rel)
        syntax = syntax or parse_quietly(source, rel)
    except SyntaxError as exc:
        # SyntaxError.offset is 1-based and already counts characters.
        return ConsumerFile(
            path=rel, module=module, error=f"{exc.msg}", error_site=Site(exc.lineno or 1, max((exc.offset or 1) - 1, 0))
        )
    except (OSError, ValueError, RecursionError) as exc:
        return ConsumerFile(path=rel, module=module, error=str(exc), error_site=Site(1, 0))
    visitor = ModuleVisitor(source, rel, module, is_package, options, names)
    found = visitor.run(syntax)
    # strings naming the package's modules, but those named on a condition or in code the release never runs
    skip = frozenset((w.site.line, w.site.column) for w in found.reaches_when)
    named = named_modules(syntax, module.split(".")[0], source, options.provider_version, skip, visitor.dead_ranges)
    if named:
        found = replace(found, reaches=tuple(dict.fromkeys(found.reaches + named)))
    found = replace(
        _rule_matches(found, syntax, options, source),
        functions=defined_functions(syntax, module) + found.functions,
        replacements=tuple(sorted(replacements(syntax, module, source) + found.replacements, key=lambda r: (r.site.line, r.site.column))),
    )
    found = to_characters(found, found.lines)
    launches = python_lines(syntax, source, options.launch_commands) if options.launch_commands else ()
    if launches:
        found = replace(found, launch_lines=launches)
    flags = added_flags(syntax, module, options.launch_parsers, source)
    given = plugin_names(syntax, options.plugin_calls, options.plugin_keys, source, module)
    if flags or given:
        found = replace(found, cli_flags=flags, plugin_names=given)
    return _with_plugins(found, options)


def _with_plugins(found: ConsumerFile, options: ConsumerOptions) -> ConsumerFile:
    """`found` with the classes its launch lines name for a provider factory, and the modules of
    every class it names made edges of reachability (the provider imports them by name)."""
    named = found.plugin_names + tuple(launch_plugin_names(found.launch_lines, options.plugin_keys))
    if not named:
        return found
    reaches = tuple(dict.fromkeys(found.reaches + tuple(p.module for p in named)))
    return replace(found, plugin_names=named, reaches=reaches)


def _rule_matches(found: ConsumerFile, syntax: ast.Module, options: ConsumerOptions, source: str) -> ConsumerFile:
    """The rule data matched on this parse of the file, so no later stage parses it again:
    text [[pattern]]s (only where the provider is used) and Auto-class load calls."""
    hits = (
        pattern_hits(syntax, options.patterns, options.provider_packages, source)
        if options.patterns and (found.imports or found.uses)
        else ()
    )
    loads = auto_calls(syntax, found.lines, found.path, options.remote_code) if options.remote_code else ()
    return replace(found, pattern_hits=hits, auto_calls=loads) if hits or loads else found


def _parse_bytes(raw: bytes, filename: str) -> ast.Module | None:
    """The tree of a file's bytes (its coding cookie honoured), as the bindings pass reads it;
    None where only the decoded text can say why it does not parse."""
    try:
        return parse_quietly(raw, filename)
    except (SyntaxError, ValueError, RecursionError):
        return None


Bindings = tuple[dict[str, str], dict[str, Any]]


def collect(
    tree: CodeTree,
    options: ConsumerOptions,
    on_file: Callable[[str], None] | None = None,
    files: Iterable[Path] | None = None,
    cache_dir: Path | None = None,
    workers: int = 1,
    on_read: Callable[[ConsumerFile], None] | None = None,
) -> tuple[ConsumerFile, ...]:
    """Every file's uses. With `cache_dir`, a file whose bytes (and the tree's re-exports) are
    unchanged is not re-read. `workers`: processes the reading of many files may be shared
    among (`apiaudit.infra.workers`); the result is the same. `on_read`: called here with each file's
    first reading as it comes in, when the reading is shared (this process then reads less).
    Job files (shell scripts, YAML/TOML configs) are read for the provider command lines in
    them only (`apiaudit.consumer.launch`), each in its place among the results."""
    given = list(files if files is not None else tree.files())
    jobs = {p: _with_plugins(job_file(tree.root, p, options.launch_commands), options) for p in given if p.suffix != ".py"}
    if jobs:
        for path in jobs:
            if on_file:
                on_file(path.name)
        python = collect(tree, options, on_file, [p for p in given if p not in jobs], cache_dir, workers, on_read) if len(jobs) < len(given) else ()
        named = [m for job in jobs.values() for m in job.reaches]
        if named and python:
            # a job script runs what its command lines name (a connector module the server loads)
            python = mark_unreachable(tree, python, named)
        in_order = iter(python)
        return tuple(jobs[p] if p in jobs else next(in_order) for p in given)
    paths = given
    cache = _FileCache(cache_dir, tree, options) if cache_dir is not None else None
    if tree.kind == "release":
        _verify_release_files(tree, paths, cache)
    reported: set[Path] = set()

    def text_of(path: Path) -> bytes:
        """The file's bytes: those its sha256 was taken of, else read now."""
        return (cache.raw(path) if cache else None) or _read_bytes(path)

    def done(path: Path) -> None:
        if on_file and path not in reported:
            reported.add(path)
            on_file(path.name)

    read: dict[Path, Bindings] = {}
    for path in paths:
        found = cache.bindings(path) if cache else None
        if found is not None:
            read[path] = found
    unread = [p for p in paths if p not in read]
    first_reading: dict[Path, tuple[ConsumerFile, dict, Stored | None]] = {}
    if unread:
        # Each file not read before is parsed once (`one_pass`): its bindings and a first
        # reading of its uses, files in an order where the modules a file imports come first,
        # each process reading the chunks it takes against the tables it has built so far.
        cached = [read[p] for p in paths if p in read]
        order = [unread[i] for i in import_order([module_name(tree, p) for p in unread], [text_of(p) for p in unread])]
        # Every process's tables, grown by the files it reads and by what the others tell of theirs.
        names = RecordingNames(options.provider_packages, options.python_version)
        for known in cached:
            names.add(*known)

        def read_share(take: Iterator[Sequence[Path]], send: Callable[[_Read], None]) -> None:
            for chunk in take:
                for path in chunk:
                    send(_read_once(tree, path, text_of(path), options, names, stored=cache is not None))

        readings: dict[Path, tuple[ConsumerFile, Stored | None]] = {}

        def arrived(piece: _Read) -> None:
            if on_file:
                on_file("")
            reading = _unpacked(piece.reading, text_of(piece.path))
            if reading is not None:
                readings[piece.path] = reading
                if on_read is not None and shared.processes > 1:
                    on_read(reading[0])

        # Reading costs about as the calls a file makes.
        shared = plan(order, workers, weight=lambda p: _calls_in(text_of(p)))
        tables = News(tell=lambda piece: piece.bindings if any(piece.bindings) else None, hear=lambda found: names.add(*found))
        for piece in run_split(shared, read_share, arrived, pack=_Read.packed, news=tables).pieces:
            read[piece.path] = piece.bindings
            if cache:
                cache.put_bindings(piece.path, piece.bindings)
            reading = readings.pop(piece.path, None)
            if reading is not None and piece.asked is not None:
                first_reading[piece.path] = (reading[0], piece.asked, reading[1])
            reported.add(piece.path)
        readings.clear()
    # The consumer-wide tables, from every file in order (as the checks see the files).
    bindings: dict[str, str] = {}
    shared_values: dict[str, object] = {}
    for path in paths:
        bindings.update(read[path][0])
        shared_values.update(read[path][1])
    reexports = _resolve_reexports(bindings, options)
    options = replace(options, reexports=tuple(sorted(reexports.items())), shared_values=tuple(sorted(shared_values.items(), key=lambda kv: kv[0])))
    variant = hashlib.sha256(repr(_canonical((options.reexports, options.shared_values))).encode()).hexdigest()[:16]
    final = names_of(options)
    results: dict[Path, ConsumerFile] = {}
    stored: dict[Path, Stored | None] = {}
    for path in paths:
        hit = cache.result(path, variant) if cache else None
        if hit is not None:
            results[path] = hit
            done(path)
        elif path in first_reading and still_valid(first_reading[path][1], final):
            results[path], _, stored[path] = first_reading.pop(path)
    first_reading.clear()
    to_read = [p for p in paths if p not in results]
    unreported = [sum(1 for p in to_read if p not in reported)]  # a file read twice is one step of progress

    def reread_tick() -> None:
        if on_file and unreported[0] > 0:
            unreported[0] -= 1
            on_file("")

    def read_again(path: Path) -> _Reading:
        raw = text_of(path)
        return _Reading.of(path, collect_file(tree, path, options, raw=raw), raw, stored=cache is not None)

    def reread(take: Iterator[Sequence[Path]], send: Callable[[_Reading], None]) -> None:
        for chunk in take:
            for path in chunk:
                send(read_again(path))

    again = plan(to_read, workers, weight=lambda p: _calls_in(text_of(p)))
    for sent in run_split(again, reread, lambda _: reread_tick(), pack=_Reading.packed).pieces:
        # A copy's reading that does not decode (never seen: our own copy wrote it) is read here.
        reading = _unpacked(sent, text_of(sent.path)) or _unpacked(read_again(sent.path), text_of(sent.path))
        assert reading is not None  # a reading made here holds its file
        results[sent.path], stored[sent.path] = reading
        reported.add(sent.path)  # its tick was reported as it was read
    out = []
    for path in paths:
        if cache and path in stored:
            cache.put_result(path, variant, results[path], stored[path])
        out.append(results[path])
    if cache:
        cache.save(workers)
    return mark_unreachable(tree, out)


# How a reading is stored in the consumer cache: its JSON text (compressed until the cache is
# written), without its lines where they are the file's own text (they are rebuilt from its
# bytes), and whether they were left out.
Stored = tuple[codec.Encoded, bool]


@record
class _Reading:
    """One file's reading as a process hands it on: the file's uses, or (from a forked copy) only
    their stored form, which the cache keeps anyway and which costs less to send and decode than
    the objects cost to pickle and unpickle."""

    path: Path
    file: ConsumerFile | None
    own_source: bool  # the reading's text is the file's own (then not stored: read from the file)
    json: codec.Encoded | None = None  # the stored form, once written (compressed until the cache is written)

    @staticmethod
    def of(path: Path, found: ConsumerFile, raw: bytes, *, stored: bool) -> _Reading:
        own_source = bool(found.source) and found.source == source_of(raw)
        reading = _Reading(path, found, own_source)
        return replace(reading, json=reading._encoded()) if stored else reading

    def _encoded(self) -> codec.Encoded:
        assert self.file is not None
        return codec.Encoded.packed(codec.to_json(replace(self.file, source="") if self.own_source else self.file))

    @property
    def stored(self) -> Stored | None:
        return (self.json, self.own_source) if self.json is not None else None

    def packed(self) -> _Reading:
        if self.file is None:
            return self
        return _Reading(self.path, None, self.own_source, self.json if self.json is not None else self._encoded())

    def unpacked(self, raw: bytes) -> _Reading:
        if self.file is not None or self.json is None:
            return self
        found = codec.from_json(self.json.json)
        if not isinstance(found, ConsumerFile):
            raise codec.CacheFormatError("not a consumer file")
        if self.own_source:
            found = replace(found, source=source_of(raw))
        return replace(self, file=found)


def _unpacked(reading: _Reading | None, raw: bytes) -> tuple[ConsumerFile, Stored | None] | None:
    """A reading's file (decoded from a copy's stored form) and stored form; None for no reading,
    or (never seen: our own copy wrote it) a stored form that does not decode: the file is then
    read again."""
    if reading is None:
        return None
    try:
        found = reading.unpacked(raw)
    except codec.CacheFormatError:
        return None
    return (found.file, found.stored) if found.file is not None else None


@record
class _Read:
    """One file's single parse in the read phase: its bindings, and its first reading with the
    questions asked of the tables (None: it does not parse; it is read again later)."""

    path: Path
    bindings: Bindings
    reading: _Reading | None = None
    asked: dict | None = None

    def packed(self) -> _Read:
        return replace(self, reading=self.reading.packed()) if self.reading is not None else self


def _calls_in(raw: bytes) -> int:
    """About how many calls a file's text makes (what reading it costs, in the main)."""
    return raw.count(b"(") + 1


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _read_once(
    tree: CodeTree, path: Path, raw: bytes, options: ConsumerOptions, names: RecordingNames, *, stored: bool = False
) -> _Read:
    """One parse of a file: its bindings (added to `names`), and its uses read against `names`
    as they stand, with the questions asked of them (no reading: it does not parse; read it
    later). `stored`: with the reading's stored form too (for the consumer cache)."""
    syntax = _parse_bytes(raw, path.relative_to(tree.root).as_posix()) if raw else None
    if syntax is None:
        return _Read(path, ({}, {}))
    found = _bindings_of(tree, path, raw, syntax, options)
    names.add(*found)
    asked = names.start()
    file = collect_file(tree, path, options, syntax=syntax, names=names, raw=raw)
    return _Read(path, found, _Reading.of(path, file, raw, stored=stored), asked)


def _canonical(value: object) -> object:
    """`value` with every set sorted: its repr is the same in every process (string hashing is
    randomised per process, so a frozenset's repr is not) and whether it came from the cache or not."""
    if isinstance(value, (set, frozenset)):
        return ("<set>",) + tuple(sorted((_canonical(v) for v in value), key=repr))
    if isinstance(value, dict):
        return ("<dict>",) + tuple(sorted(((_canonical(k), _canonical(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return (type(value).__qualname__,) + tuple((f.name, _canonical(getattr(value, f.name))) for f in fields(value))
    return value


def _verify_release_files(tree: CodeTree, paths: list[Path], cache: _FileCache | None) -> None:
    """A consumer read from the release cache must be what was extracted from its wheel."""
    verify = content_verifier(tree.root, tree.name, tree.version)
    if verify is None:
        return
    for path in paths:
        sha = cache.sha(path) if cache else _sha256_of(path)
        if sha is not None:
            verify(path.relative_to(tree.root).as_posix(), sha)


def _sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _bindings_of(tree: CodeTree, path: Path, raw: bytes, syntax: ast.Module, options: ConsumerOptions) -> Bindings:
    """A file's module-level import bindings, and the constants and guard helpers it exports
    (folded on the audited release, against no other file's exports)."""
    module, is_package = module_name(tree, path)
    try:
        exports = ModuleVisitor(source_of(raw), "", module, is_package, options).exports(syntax)
    except RecursionError:
        exports = {}
    return module_imports(syntax, module, is_package), exports


def _resolve_reexports(bindings: dict[str, str], options: ConsumerOptions) -> dict[str, str]:
    """Consumer names that stand for provider objects (`from engine.x import P` in compat.py makes
    `driver.compat.P` the provider's P), followed through chains of consumer re-exports."""
    tops = set(options.provider_packages)
    resolved: dict[str, str] = {}
    for name in bindings:
        target, hops = bindings[name], 0
        while target in bindings and hops < 20:
            target, hops = bindings[target], hops + 1
        if target.split(".")[0] in tops:
            resolved[name] = target
    return resolved


_KEEP_VARIANTS = 16


class _FileCache:
    """Per consumer tree and file sha256: its import bindings, and its uses for one set of re-exports.

    Valid for one consumer-stage engine, Python and Griffe version, and one set of options.
    Stored as data only (`apiaudit.cache.codec`); anything unreadable or tampered is rebuilt.
    A result's `lines` (most of its bytes) are not stored when they are the file's own text:
    they are rebuilt from the bytes read to check its sha256.
    """

    FORMAT = 3  # 1 was pickle; 3 leaves out the lines a file's bytes give back
    KIND = "consumer-files"

    def __init__(self, cache_dir: Path, tree: CodeTree, options: ConsumerOptions):
        here = Path(__file__).parent
        digest = hashlib.sha256(f"{self.FORMAT}\0{codec.environment_key()}\0{astuple(options)!r}".encode())
        for source in sorted(here.rglob("*.py")):  # the walk's parts (consumer/walk/) too
            digest.update(source.read_bytes())
        self.key = digest.hexdigest()[:16]
        where = hashlib.sha256(str(tree.root.resolve()).encode()).hexdigest()[:12]
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in tree.name)
        # One entry per set of options: the audited release folds guards, so each version keeps its own.
        self.prefix = f"{safe}-{where}"
        self.path = cache_dir / "consumer" / f"{self.prefix}-{self.key}.json"
        # str(path) -> (sha256, bindings, variant or None, ConsumerFile or None, lines left out)
        self.entries: dict[str, tuple] = {}
        self.dirty = False
        try:
            data = codec.read(self.path, self.KIND)
            if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
                raise codec.CacheFormatError("not a consumer cache entry")
            if data.get("key") == self.key:
                self.entries = {k: v for k, v in data["entries"].items() if _valid_entry(k, v)}
        except FileNotFoundError:
            pass
        except (OSError, codec.CacheFormatError) as exc:
            print(f"apiaudit: the consumer cache {self.path.name} failed its check ({exc}); rebuilding it", file=sys.stderr)
            self.path.unlink(missing_ok=True)
        self._shas: dict[Path, str] = {}
        self._raw: dict[Path, bytes] = {}  # a file's bytes, from its hashing until its result is given

    def sha(self, path: Path) -> str | None:
        if path not in self._shas:
            try:
                raw = path.read_bytes()
            except OSError:
                return None
            self._shas[path] = hashlib.sha256(raw).hexdigest()
            self._raw[path] = raw
        return self._shas[path]

    def raw(self, path: Path) -> bytes | None:
        """The bytes the file's sha256 was taken of (None: it could not be read)."""
        return self._raw.get(path) if self.sha(path) is not None else None

    def _source(self, path: Path) -> str | None:
        """The file's text as the visitor reads it, from the bytes its sha256 was taken of."""
        raw = self._raw.pop(path, None)
        return None if raw is None else source_of(raw)

    def _entry(self, path: Path) -> tuple | None:
        entry = self.entries.get(str(path))
        return entry if entry and entry[0] == self.sha(path) else None

    def bindings(self, path: Path) -> tuple[dict[str, str], dict[str, object]] | None:
        entry = self._entry(path)
        return entry[1] if entry else None

    def result(self, path: Path, variant: str) -> ConsumerFile | None:
        entry = self._entry(path)
        if not entry or entry[2] != variant or entry[3] is None:
            return None  # the bytes stay for `put_result`
        if not entry[4]:
            self._raw.pop(path, None)
            return entry[3]
        source = self._source(path)
        return replace(entry[3], source=source) if source is not None else None

    def put_bindings(self, path: Path, bindings: tuple[dict[str, str], dict[str, object]]) -> None:
        sha = self.sha(path)
        if sha is not None:
            self.entries[str(path)] = (sha, bindings, None, None, False)
            self.dirty = True

    def put_result(self, path: Path, variant: str, result: ConsumerFile, stored: Stored | None = None) -> None:
        """Keep `result` for `variant`; `stored`: its stored form, when already written."""
        entry = self._entry(path)
        if entry is None:
            return
        if stored is not None:
            self._raw.pop(path, None)
            encoded, own_source = stored
            self.entries[str(path)] = (entry[0], entry[1], variant, encoded, own_source)
        else:
            source = self._source(path)
            own_source = bool(result.source) and source == result.source
            kept = replace(result, source="") if own_source else result
            self.entries[str(path)] = (entry[0], entry[1], variant, kept, own_source)
        self.dirty = True

    def save(self, workers: int = 1) -> None:
        """Write the entries (`workers`: processes the encoding of many entries not yet in their
        stored form is shared among)."""
        if not self.dirty:
            return
        try:
            entries: dict[str, Any] = dict(self.entries)
            unwritten = [key for key, entry in entries.items() if type(entry[3]) is not codec.Encoded]
            shared = plan(unwritten, workers)
            if shared.processes > 1:

                def encode(take: Iterator[Sequence[str]], send: Callable[[str], None]) -> None:
                    for chunk in take:
                        for key in chunk:
                            send(codec.to_json(self.entries[key]))

                texts: list[str] = run_split(shared, encode).pieces
                entries.update((key, codec.Encoded(text)) for key, text in zip(shared.items, texts))
            codec.write(self.path, self.KIND, {"key": self.key, "entries": entries})
            # Keep the few most recent variants of this tree (releases audited, engine versions).
            siblings = sorted(self.path.parent.glob(f"{self.prefix}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for stale in siblings[_KEEP_VARIANTS:]:
                stale.unlink(missing_ok=True)
        except OSError as exc:
            if is_disk_full(exc):
                print(f"apiaudit: warning: no space left on device writing {self.path}; the consumer cache was not saved", file=sys.stderr)
        except codec.CacheFormatError:
            pass


def _valid_entry(key: object, entry: object) -> bool:
    """The shape `_FileCache` stores; anything else in a (hand-edited) file is ignored."""
    return (
        isinstance(key, str)
        and isinstance(entry, tuple)
        and len(entry) == 5
        and isinstance(entry[4], bool)
        and isinstance(entry[0], str)
        and isinstance(entry[1], tuple)
        and len(entry[1]) == 2
        and all(isinstance(part, dict) for part in entry[1])
        and (entry[3] is None or isinstance(entry[3], ConsumerFile))
    )
