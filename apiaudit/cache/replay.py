"""A warm scan answered before click is imported: the output the same scan wrote, replayed.

A scan with nothing changed only has to write what it wrote last time, yet importing click,
the audit stage and the source machinery costs many times Python's own start. So
`apiaudit.cli.main` asks this module first, with nothing imported but `os` and `sys`:

- `Invocation.of(argv)` accepts a plain `scan` command line: only the options in
  `VALUE_OPTIONS` and `FLAG_OPTIONS` (`--model`, `--against`, `--explain`, `--help`, an
  unknown option... are left to click).
- `Invocation.answer()` reads the entry that command line left, run in this folder with this
  environment (`results/replay/` in the cache folder), checks each of its *probes*, and
  writes its output: the report to stdout or `-o FILE` (its duration this run's), the same
  stderr line, the same exit code. Any probe that differs, no entry, or anything unusual
  (an unwritable `-o`, a closed stdout) answers None, and the scan runs as it always did.
- Such a scan, when it ran (`Invocation.record()`), leaves an entry once its report is
  written: only for exit 0 or 1, exactly one provider scanned, a results key (not
  `--no-index-cache`), the cache folder the command line names (not one a config file
  chose), stderr empty or only the `-o` line, and its output as this module would replay it.

An entry is one file per command line and working directory, and holds for the rest of
the *invocation*: the whole environment, the interpreter (`sys.version`, `sys.executable`,
`sys.path`, its flags) and what stdout is (a terminal, its size, its encoding); a run with
another replaces it. It holds until the day a config ignore's `until` passes, if one does.
Its probes are the inputs of the scan's answer, each as it was when the scan read it:

- `t`: apiaudit's own files (path, size and mtime of each: as its results key knows them);
- `l`: a folder's listing (names and kinds), for each `sys.path` folder (installed
  distributions, Griffe's version), each consumer folder the scan lists, a release
  entry's top level, each rule folder, and what resolving a path or a distribution looks at;
- `c`: a file's sha256 (or that it is missing): every consumer file read, every rule file,
  the config files looked for from the working directory up, the baseline, a
  distribution's metadata, the files that say a path's version;
- `s`: a file's size, mtime and inode: a release entry's marker (it pins the release's
  content), each provider file a path or installed provider's results entry recorded, and
  the results entry itself;
- `r`: where a path given on the command line leads.

Every probe is computed the same way when recorded and when checked; the recorder takes
them after the scan and then checks that the scan's results key, computed again, is
unchanged (what it read did not change while it ran). Entries are plain netstrings under a
sha256 of their content; nothing in them is ever run.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, AnyStr, Callable, Sequence

FORMAT = 1
_MAGIC = b"apiaudit-replay"
# Options with a value, and flags, whose whole effect the probes and the key cover.
VALUE_OPTIONS = frozenset({
    "--consumer", "--provider", "--rules", "--cache-dir", "--format", "--output", "-o", "--fail-on",
    "--baseline", "--jobs", "--provider-version", "--python-version",
})  # fmt: skip
FLAG_OPTIONS = frozenset({"--strict", "--show-unresolved", "--show-suppressed", "--no-progress", "--offline"})
_SAME_OPTION = {"-o": "--output"}
# Two durations the report is rendered with again: where the two differ, the duration goes.
_SENTINELS = (7.3, 4.6)
_FORMATS = ("3f", "2f", "r")  # longest first: 7.300, 7.30, 7.3
_RECORDER: Recorder | None = None
_SHA256: Any = None


def _sha256(data: bytes = b"") -> Any:
    """hashlib.sha256 without importing hashlib (OpenSSL) where the built-in module is there."""
    global _SHA256
    if _SHA256 is None:
        for name in ("_sha256", "_sha2", "hashlib"):  # Python 3.10-3.11, 3.12+, else OpenSSL's
            try:
                _SHA256 = __import__(name).sha256
                break
            except (ImportError, AttributeError):
                continue
    return _SHA256(data)


def _text_digest(text: str) -> str:
    return _sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


# --- probes: the same functions record and check --------------------------------------


def probe(kind: str, path: str) -> str:
    """What `path` is now, as probe `kind` sees it; an error is `!errno`."""
    try:
        if kind == "c":
            with open(path, "rb") as handle:
                return _sha256(handle.read()).hexdigest()
        if kind == "s":
            st = os.stat(path)
            return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        if kind == "l":
            return _text_digest("\0".join(sorted(_listing(path))))
        if kind == "t":
            return _tree(path)
        if kind == "r":
            return os.path.realpath(path)
    except OSError as exc:
        return f"!{exc.errno}"
    raise ValueError(f"unknown probe {kind!r}")


def _listing(folder: str) -> list[str]:
    """`name/kind` of each entry (l a link, d a folder, f anything else); `__pycache__` is no
    source (no scan reads it) and comes and goes as Python runs."""
    names = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name == "__pycache__":
                continue
            kind = "l" if entry.is_symlink() else "d" if entry.is_dir(follow_symlinks=False) else "f"
            names.append(f"{entry.name}/{kind}")
    return names


def _tree(root: str) -> str:
    from apiaudit.infra.filewalk import files_under

    found = []
    for rel, entry in files_under(root, skip_folder=lambda name: name == "__pycache__"):
        st = entry.stat()
        found.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
    return _text_digest("\n".join(sorted(found)))


def engine_root() -> str:
    """The apiaudit package folder: its files are the engine, the rules it bundles, this module."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- the command line --------------------------------------------------------------------


def parse(argv: Sequence[str]) -> dict[str, str] | None:
    """The last value of each value option of a plain `scan` command line; None for any other."""
    if not argv or argv[0] != "scan":
        return None
    values: dict[str, str] = {}
    i = 1
    while i < len(argv):
        token = argv[i]
        name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in FLAG_OPTIONS and not equals:
            i += 1
            continue
        if name not in VALUE_OPTIONS:
            return None
        if not equals:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
        i += 1 if equals else 2
        if not value or value.startswith("-"):
            return None
        values[_SAME_OPTION.get(name, name)] = value
    return values


def cache_dir_named(values: dict[str, str]) -> str:
    """The cache folder `--cache-dir`, $APIAUDIT_CACHE_DIR or the default name (as
    `apiaudit.sources.cache.default_cache_dir`): where an entry for this command line lives."""
    named = values.get("--cache-dir") or os.environ.get("APIAUDIT_CACHE_DIR")
    if named:
        return os.path.abspath(os.path.expanduser(named))
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.abspath(os.path.join(os.path.expanduser(xdg), "apiaudit"))
    return os.path.abspath(os.path.join(os.path.expanduser("~"), ".cache", "apiaudit"))


def _stdout_facts() -> str:
    out = sys.stdout
    if out is None:
        raise OSError("no stdout")
    try:
        size = tuple(os.get_terminal_size(sys.__stdout__.fileno())) if sys.__stdout__ is not None else None
    except (AttributeError, ValueError, OSError):  # what the table's width falls back on: not a terminal
        size = None
    return repr((out.isatty(), sys.stderr is not None and sys.stderr.isatty(), size, out.encoding, out.errors))


class Invocation:
    """One plain `scan` command line, run here and now."""

    __slots__ = ("cache_dir", "output", "name", "key", "started")

    def __init__(self, cache_dir: str, output: str | None, name: str, key: str, started: float):
        self.cache_dir, self.output, self.name, self.key, self.started = cache_dir, output, name, key, started

    @classmethod
    def of(cls, argv: Sequence[str]) -> Invocation | None:
        started = time.perf_counter()
        values = parse(argv)
        if values is None:
            return None
        try:
            place = (FORMAT, list(argv), os.getcwd())
            facts = (
                place, sorted(os.environ.items()), sys.version, sys.executable, sys.path, tuple(sys.flags),
                sys.warnoptions, getattr(sys, "_xoptions", {}), _stdout_facts(),
            )  # fmt: skip
        except (OSError, ValueError):
            return None
        output = values.get("--output")
        output = os.path.abspath(os.path.expanduser(output)) if output else None
        return cls(cache_dir_named(values), output, _text_digest(repr(place)), _text_digest(repr(facts)), started)

    @property
    def entry(self) -> str:
        """One file per command line and folder: a run in another environment replaces it."""
        return os.path.join(self.cache_dir, "results", "replay", self.name[:40])

    def answer(self) -> int | None:
        """Write the recorded output and return its exit code, or None when the scan must run."""
        try:
            entry = _read(self.entry, self.key)
            if entry is None or entry.output != (self.output or "") or (entry.until and time.strftime("%Y-%m-%d") > entry.until):
                return None
            for kind, path, value in entry.probes:
                if probe(kind, path) != value:
                    return None
            text = fill(entry.pieces, entry.holes, round(time.perf_counter() - self.started, 3))
            if self.output is None:
                sys.stdout.write(text)
                sys.stdout.flush()
            elif not _write_file(self.output, text):
                return None
        except Exception:  # noqa: BLE001 - a closed stdout, a bug here: the scan runs and says what it says
            if os.environ.get("APIAUDIT_DEBUG"):
                raise
            return None
        if entry.stderr:
            try:
                sys.stderr.write(entry.stderr)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass  # the report is written: it is not written again
        return entry.code

    def record(self) -> Recorder | None:
        """Start recording what the scan about to run reads and writes (`note_scan`, `note_output`)."""
        global _RECORDER
        try:
            _RECORDER = Recorder(self)
        except Exception:  # noqa: BLE001 - not recorded; the scan runs all the same
            if os.environ.get("APIAUDIT_DEBUG"):
                raise
        return _RECORDER


def _write_file(path: str, text: str) -> bool:
    """Write `-o` as `apiaudit.report.write_output` does; False where it would say something else."""
    folder = os.path.dirname(path)
    if os.path.isdir(path) or not os.path.isdir(folder):
        return False
    from apiaudit.infra.atomic import atomic_write

    try:
        atomic_write(path, text)
    except OSError:
        return False
    return True


# --- entries -------------------------------------------------------------------------------


class Entry:
    """What a replay writes (`pieces` around the duration `holes`, to stdout or the `output`
    file, `stderr`, exit `code`), the last day it holds (`until`, "" for always) and its probes."""

    __slots__ = ("code", "output", "stderr", "pieces", "holes", "until", "probes")

    def __init__(self, code: int, output: str, stderr: str, pieces: list[str], holes: list[str], until: str, probes: list[tuple[str, str, str]]):  # fmt: skip
        self.code, self.output, self.stderr, self.pieces, self.holes = code, output, stderr, pieces, holes
        self.until, self.probes = until, probes


def _pack(fields: list[str]) -> bytes:
    parts = []
    for field in fields:
        data = field.encode("utf-8", "surrogateescape")
        parts.append(b"%d:%s" % (len(data), data))
    return b"".join(parts)


def _unpack(data: bytes) -> list[str]:
    fields, at = [], 0
    while at < len(data):
        colon = data.index(b":", at)
        start = colon + 1
        end = start + int(data[at:colon])
        if end > len(data) or end < start:
            raise ValueError("a field runs past the end")
        fields.append(data[start:end].decode("utf-8", "surrogateescape"))
        at = end
    return fields


def encode(key: str, entry: Entry) -> bytes:
    fields = [key, str(entry.code), entry.output, entry.stderr, entry.until, str(len(entry.holes)), *entry.pieces, *entry.holes]
    for kind, path, value in entry.probes:
        fields += [kind, path, value]
    body = _pack(fields)
    return b"%s %d %s\n%s" % (_MAGIC, FORMAT, _sha256(body).hexdigest().encode(), body)


def _read(path: str, key: str) -> Entry | None:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return decode(raw, key)


def decode(raw: bytes, key: str) -> Entry | None:
    """The entry in `raw` when it is whole, of this format and for `key`; else None."""
    head, _, body = raw.partition(b"\n")
    if head != b"%s %d %s" % (_MAGIC, FORMAT, _sha256(body).hexdigest().encode()):
        return None
    try:
        fields = _unpack(body)
        holes = int(fields[5])
        pieces, kinds, rest = fields[6 : 7 + holes], fields[7 + holes : 7 + 2 * holes], fields[7 + 2 * holes :]
        if fields[0] != key or len(kinds) != holes or len(rest) % 3 or not set(kinds) <= set(_FORMATS):
            return None
        probes = [(rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)]
        return Entry(int(fields[1]), fields[2], fields[3], pieces, kinds, fields[4], probes)
    except (ValueError, IndexError):
        return None


# --- the report's duration --------------------------------------------------------------------


def _formatted(seconds: float, kind: str) -> str:
    return format(seconds, ".3f") if kind == "3f" else format(seconds, ".2f") if kind == "2f" else repr(float(seconds))


def fill(pieces: Sequence[AnyStr], holes: list[str], seconds: float) -> AnyStr:
    out = [pieces[0]]
    for kind, piece in zip(holes, pieces[1:]):
        out += [_spelled(_formatted(seconds, kind), piece), piece]
    return pieces[0][:0].join(out)


def _spelled(text: str, like: AnyStr) -> AnyStr:
    """A duration as text or, among UTF-8 bytes, as its (ASCII) bytes."""
    return text.encode("ascii") if isinstance(like, bytes) else text


def template(first: AnyStr, second: AnyStr) -> tuple[list[AnyStr], list[str]] | None:
    """(pieces, holes) of the same output rendered with each of `_SENTINELS` as its duration
    (as text, or as UTF-8 bytes): the text they share, and how the duration is formatted where
    they differ; None when they differ in any other way."""
    if len(first) != len(second):
        return None
    a, b = _SENTINELS
    pieces: list[AnyStr] = []
    holes: list[str] = []
    start, at = 0, 0
    while True:
        at = _next_difference(first, second, at)
        if at == len(first):
            break
        kind = next(
            (k for k in _FORMATS
             if first.startswith(_spelled(_formatted(a, k), first), at) and second.startswith(_spelled(_formatted(b, k), first), at)),
            None,
        )  # fmt: skip
        if kind is None:
            return None
        pieces.append(first[start:at])
        holes.append(kind)
        at = start = at + len(_formatted(a, kind))
    pieces.append(first[start:])
    return pieces, holes


_BLOCK = 1 << 16  # characters compared at once: a large report's text is ~4 MB


def _next_difference(first: AnyStr, second: AnyStr, at: int) -> int:
    """The first index from `at` where two texts of one length differ (their length if none):
    blocks compared whole (in C) before one character at a time, where one differs."""
    end = len(first)
    while at < end and first[at : at + _BLOCK] == second[at : at + _BLOCK]:
        at += _BLOCK
    while at < end and first[at] == second[at]:
        at += 1
    return min(at, end)


# --- recording ---------------------------------------------------------------------------------


class _Tee:
    """A text stream that keeps a copy of what is written through it."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.written: list[str] = []

    def write(self, text: str) -> int:
        count = self._stream.write(text)  # first: what the stream refuses (bytes) is not kept
        self.written.append(text)
        return count

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Recorder:
    """What one scan read and wrote; `finish` stores it as an entry when it can be replayed."""

    def __init__(self, invocation: Invocation):
        self.invocation = invocation
        # Before the scan reads anything: a change from here on is seen by the next run.
        self.today = time.strftime("%Y-%m-%d")
        self.early = [_probed(kind, path) for kind, path in early_probes()]
        self.scans: list[tuple[dict[str, Any], list[tuple[str, str, str]] | None]] = []
        self.output: tuple[list[str], list[str], str, float] | None = None
        self.stdout, self.stderr = _Tee(sys.stdout), _Tee(sys.stderr)
        self.streams = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def finish(self, code: object) -> None:
        """Put stdout and stderr back and, after exit code 0 or 1 (SystemExit's `code`), store
        the entry when the run can be replayed; never raises."""
        global _RECORDER
        _RECORDER = None
        sys.stdout, sys.stderr = self.streams
        try:
            code = 0 if code is None else code
            if type(code) is int and code in (0, 1):
                entry = self._entry(code)
                if entry is not None:
                    from apiaudit.infra.atomic import atomic_write

                    os.makedirs(os.path.dirname(self.invocation.entry), exist_ok=True)
                    atomic_write(self.invocation.entry, encode(self.invocation.key, entry))
        except Exception:  # noqa: BLE001 - a scan that could not be recorded is still the scan it was
            if os.environ.get("APIAUDIT_DEBUG"):
                raise

    def _entry(self, code: int) -> Entry | None:
        if len(self.scans) != 1 or self.output is None:
            return None
        scan, probes = self.scans[0]
        invocation = self.invocation
        if probes is None or os.path.abspath(str(scan["cache_dir"])) != invocation.cache_dir:
            return None  # a config file chose the cache folder: the entry would not be found there
        pieces, holes, output, duration = self.output
        text = fill(pieces, holes, duration)
        stdout, stderr = "".join(self.stdout.written), "".join(self.stderr.written)
        if output != (invocation.output or "") or stdout != ("" if output else text):
            return None
        if output:
            if not os.path.isfile(output):
                return None  # a pipe or a device (-o /dev/stdout): written into, never replayed (reading it back would wait)
            with open(output, encoding="utf-8", newline="") as handle:
                if handle.read() != text:
                    return None
        if stderr and not (output and stderr.count("\n") == 1 and stderr.endswith("\n") and stderr.startswith("apiaudit: wrote ")):
            return None  # progress drawn, a notice, a warning: this run's, not one to repeat
        if scan["key_now"]() != scan["key"]:
            return None  # something the scan read changed while it ran
        # The last day the config's ignores stand as they did: the day one expires, the report changes.
        until = min((day for day in scan["ignores_until"] if day >= self.today), default="")
        return Entry(code, output, stderr, pieces, holes, until, list(dict.fromkeys(self.early + probes)))


def _probed(kind: str, path: str) -> tuple[str, str, str]:
    return kind, path, probe(kind, path)


def recording() -> bool:
    return _RECORDER is not None


def note_scan(**scan: Any) -> None:
    """What a scan answered from its results key read (`apiaudit.audit` calls this once per
    provider it scans, before the policy reads the baseline and the consumer's comments):
    `cache_dir`, `key`, `provider` (the spec) and `provider_tree`, `consumers` (the specs),
    `trees`, `read` (their `ConsumerFiles`), `rules_dirs`, `baseline`, `ignores_until` (each
    config ignore's last day, YYYY-MM-DD), and `key_now`, which
    computes the results key again from the command line's inputs as they are then."""
    if _RECORDER is None:
        return
    try:
        probes = scan_probes(scan)
    except Exception:  # noqa: BLE001 - not recorded; the scan goes on
        if os.environ.get("APIAUDIT_DEBUG"):
            raise
        probes = None
    _RECORDER.scans.append((scan, probes))


def note_output(written: str, duration: float, output: Path | None, render: Callable[[float], str]) -> None:
    """The report as written (`written`: `output_digest` of the text, which says `duration`), and
    how to render it with another duration. The caller keeps only the digest: a large report's
    text (~15 MB for 4,000 findings) is not held while the sentinels' texts are made."""
    if _RECORDER is None:
        return

    # Each sentinel's text is rendered here and kept as UTF-8 bytes (a large report's text is
    # ~15 MB as a string where one character needs four bytes, ~4 MB as bytes).
    shape = template(*(_utf8_ended(render(s)) for s in _SENTINELS))
    if shape is None or _sha256(fill(*shape, duration)).hexdigest() != written:
        return
    pieces = [piece.decode("utf-8", "surrogatepass") for piece in shape[0]]
    _RECORDER.output = (pieces, shape[1], os.path.abspath(os.fspath(output)) if output is not None else "", duration)


def _utf8_ended(text: str) -> bytes:
    """The text as written (ending with a line end), as bytes any `str` encodes to (a lone
    surrogate as its own three bytes): a digest of it, or pieces cut where ASCII differs."""
    return (text if text.endswith("\n") else text + "\n").encode("utf-8", "surrogatepass")


def output_digest(text: str) -> str:
    """What `note_output` compares a rendered text by."""
    return _sha256(_utf8_ended(text)).hexdigest()


def early_probes() -> list[tuple[str, str]]:
    """What every scan depends on, whatever it audits: apiaudit's files, what is installed
    where this Python looks, and the config files looked for from the working directory up."""
    from apiaudit.policy.config import APIAUDIT_TOML, CONFIG_ENV, PYPROJECT

    probes = [("t", engine_root())]
    for entry in sys.path:
        folder = os.path.abspath(entry or os.curdir)
        probes.append(("l" if os.path.isdir(folder) else "s", folder))
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        if explicit.lower() != "none":
            probes.append(("c", os.path.abspath(os.path.expanduser(explicit))))
        return probes
    here = os.path.realpath(os.getcwd())
    while True:
        probes += [("c", os.path.join(here, APIAUDIT_TOML)), ("c", os.path.join(here, PYPROJECT))]
        parent = os.path.dirname(here)
        if parent == here:
            return probes
        here = parent


def scan_probes(scan: dict[str, Any]) -> list[tuple[str, str, str]] | None:
    """The probes of one scan's own inputs: rules, baseline, the provider and each consumer,
    the results entry; None where the scan read something these cannot stand for."""
    from apiaudit.cache import scans
    from apiaudit.recipes.files import rule_directories

    probes: list[tuple[str, str]] = []
    for directory, _required in rule_directories(scan["rules_dirs"]):
        folder = os.path.abspath(directory)
        probes.append(("l", folder))
        if os.path.isdir(folder):
            probes += [("c", os.path.join(folder, name)) for name in sorted(os.listdir(folder)) if name.endswith(".toml")]
    if scan["baseline"] is not None:
        probes.append(("c", os.path.abspath(os.fspath(scan["baseline"]))))
    provider = tree_inputs(scan["provider"], scan["provider_tree"], listed=False)
    if provider is None:
        return None
    probes += provider
    if scan["provider_tree"].kind == "release":  # its other releases there are an input (`scans.scan_key`)
        probes.append(("l", os.path.dirname(str(scan["provider_tree"].root))))
    for spec, tree, files in zip(scan["consumers"], scan["trees"], scan["read"]):
        consumer = tree_inputs(spec, tree, listed=True)
        if consumer is None:
            return None
        probes += consumer + [("c", os.path.join(str(files.root), rel)) for rel in files.paths]
    found = [_probed(kind, path) for kind, path in probes]
    # A provider that is not a release: each file its results entry holds unchanged, by its
    # stat now (taken before its content is checked against the entry's sha256).
    touched = scans.recorded_provider_files(scan["cache_dir"], scan["key"])
    if touched is None:
        return None
    root = str(scan["provider_tree"].root)
    for rel, sha in sorted(touched.items()):
        stat = _probed("s", os.path.join(root, rel))
        if probe("c", stat[1]) != sha:
            return None
        found.append(stat)
    return found + [_probed("s", str(scans.entry_path(scan["cache_dir"], scan["key"])))]


def tree_inputs(spec: str, tree: Any, *, listed: bool) -> list[tuple[str, str]] | None:
    """What resolving `spec` to `tree` looked at, and with `listed`, every folder its files are
    listed from; None for a tree these cannot stand for."""
    root = str(tree.root)
    probes: list[tuple[str, str]] = []
    if tree.kind == "release":
        from apiaudit.sources.cache import MARKER_NAME

        probes += [("s", os.path.join(root, MARKER_NAME)), ("l", root)]
        for name in sorted(os.listdir(root)):
            if name.endswith(".dist-info"):
                probes += [("l", os.path.join(root, name)), ("c", os.path.join(root, name, "top_level.txt"))]
    elif tree.kind == "path":
        from apiaudit.sources.local import looked_at

        folders, files = looked_at(spec, tree)
        probes.append(("r", os.path.abspath(os.path.expanduser(spec))))
        probes += [("l", str(f)) for f in folders] + [("c", str(f)) for f in files]
    elif tree.kind == "installed":
        from apiaudit.sources.installed import looked_at as installed_looked_at

        found = installed_looked_at(spec, tree)
        if found is None:
            return None
        probes += [("l", str(f)) for f in found[0]] + [("c", str(f)) for f in found[1]]
    else:
        return None
    if listed:
        for package in tree.packages:
            base = os.path.join(root, package)
            for current, dirnames, _ in os.walk(base):
                dirnames[:] = [d for d in dirnames if d != "__pycache__"]
                probes.append(("l", current))
    return probes
