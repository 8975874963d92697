"""A release published only as a source distribution: its `.py` files, read as data.

Many plugins publish no wheel (older releases, or current ones with compiled parts). Their
sdist (`.tar.gz` or `.zip`) is read the way a wheel is (`archive.py`: the same limits, the
same refusal of unsafe paths, one line for a malformed archive), and nothing in it is ever
built, imported or run: not its `setup.py`, not its build backend. What a wheel's dist-info
would say is read from the sdist's text instead and written into the cache entry as a
`NAME-VERSION.dist-info/` of `METADATA` (name, version, `Requires-Dist`), `top_level.txt`
(the import roots) and `entry_points.txt`, so that everything later reads a source release
exactly as it reads a wheel:

- the requirements: `PKG-INFO`'s `Requires-Dist`, else the `*.egg-info/requires.txt` setuptools
  wrote, else `[project]` of `pyproject.toml`, else `setup.cfg`'s `[options]`, else the
  `install_requires=` a `setup(...)` call in `setup.py` writes as a literal (read with `ast`);
- the entry points: every one written literally in `*.egg-info/entry_points.txt`,
  `pyproject.toml`, `setup.cfg` `[options.entry_points]` and `setup(entry_points=...)`;
- the import roots: the names `*.egg-info/top_level.txt` lists, else the layout: `src/` when it
  holds Python, else the project folder; its folders holding `.py` files (packages, namespace
  packages) and its modules, never a project's tooling (`tests/`, `docs/`, `examples/`,
  `benchmarks/`, ...) nor its build and test scripts (`setup.py`, `conftest.py`, ...).
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from apiaudit.infra.atomic import write_new
from apiaudit.infra.frozen import record
from apiaudit.sources import cache
from apiaudit.sources.archive import (
    DEFAULT_LIMITS,
    HashingReader,
    Malformed,
    PlannedMember,
    TarMember,
    WheelLimits,
    check_member_path,
    check_plan,
    downloaded_marker,
    malformed_is_bad_input,
)
from apiaudit.sources.base import Reporter, report_step

if TYPE_CHECKING:
    import tarfile
    import zipfile

SOURCE_SUFFIXES = (".py", ".pyi")
# Folders a project keeps its own tooling in: never import packages, whatever they hold.
_NOT_PACKAGES = frozenset({
    "test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark", "benchmarks", "bench",
    "script", "scripts", "tools", "build", "dist", "ci",
})  # fmt: skip
# Modules at a project's top that build, test or release it: never import modules.
_NOT_MODULES = frozenset({"setup", "conftest", "noxfile", "fabfile", "tasks", "dodo", "versioneer", "ez_setup"})
_TEST_MODULE = re.compile(r"^(?:test_.*|.*_test)$")
# The project files its metadata is read from (as text), at its top and in an egg-info folder.
_METADATA_FILES = frozenset({"PKG-INFO", "pyproject.toml", "setup.cfg", "setup.py"})
_EGG_INFO_FILES = frozenset({"PKG-INFO", "requires.txt", "entry_points.txt", "top_level.txt"})
# Each is read only up to this size (a real setup.py: ~30 KB); a larger one is not metadata.
_MAX_METADATA_BYTES = 1 << 20


@record
class Layout:
    """Where a source tree's import roots are: `root` ("" or "src") inside the project folder,
    and the top-level names (packages and modules) under it."""

    root: str
    names: tuple[str, ...]


@record
class SourceMetadata:
    """What a wheel's dist-info would say, read from an sdist's text."""

    requires: tuple[str, ...]  # Requires-Dist lines
    entry_points: tuple[tuple[str, str, str], ...]  # (group, name, value)
    top_level: tuple[str, ...]  # the import roots the build tool recorded (empty: none)


def import_layout(files: Iterable[str], declared: Sequence[str] = ()) -> Layout:
    """The import roots of a project whose files (paths inside its folder) are `files`: the
    names `declared` (an egg-info's top_level.txt) where they are there, else the layout's."""
    paths = [f for f in files if f.endswith(SOURCE_SUFFIXES)]
    found = {root: _names_under(paths, root) for root in ("src", "")}
    for root in ("src", "") if declared else ():
        chosen = tuple(n for n in dict.fromkeys(declared) if n in found[root])
        if chosen:
            return Layout(root=root, names=chosen)
    root = "src" if found["src"] else ""
    return Layout(root=root, names=found[root])


def _names_under(paths: Sequence[str], root: str) -> tuple[str, ...]:
    base = f"{root}/" if root else ""
    names = (_top_name(path[len(base):]) for path in paths if path.startswith(base))
    return tuple(dict.fromkeys(name for name in names if name))


def _top_name(rel: str) -> str:
    """The import name a source file at `rel` (under an import root) belongs to, "" for none."""
    head, sep, _rest = rel.partition("/")
    if sep:
        return head if head.isidentifier() and head not in _NOT_PACKAGES else ""
    stem = head.rpartition(".")[0]
    if not stem.isidentifier() or stem in _NOT_MODULES or _TEST_MODULE.match(stem):
        return ""
    return stem


def source_metadata(texts: Mapping[str, str]) -> SourceMetadata:
    """The metadata of a project from the text of its metadata files (`_METADATA_FILES` by
    name, egg-info files as `X.egg-info/NAME`), none of them run."""
    egg: dict[str, str] = {}  # egg-info file name -> its text (the first egg-info's)
    for path, text in sorted(texts.items()):
        folder, _, file = path.rpartition("/")
        if folder.endswith(".egg-info"):
            egg.setdefault(file, text)
    pyproject = _toml(texts.get("pyproject.toml", ""))
    project = pyproject.get("project")
    project = project if isinstance(project, dict) else {}
    setup_cfg = _ini(texts.get("setup.cfg", ""))
    setup_py = _setup_keywords(texts.get("setup.py", ""))
    requires = (
        _requires_dist(texts.get("PKG-INFO", "")) or _requires_dist(egg.get("PKG-INFO", ""))
        or _requires_txt(egg.get("requires.txt", ""))
        or _requirements(project.get("dependencies"), project.get("optional-dependencies"))
        or _setup_cfg_requires(setup_cfg)
        or _requirements(setup_py.get("install_requires"), setup_py.get("extras_require"))
    )  # fmt: skip
    entry_points = [
        *_ini_entry_points(egg.get("entry_points.txt", "")),
        *project_entry_points(project),
        *_setup_cfg_entry_points(setup_cfg),
        *_literal_entry_points(setup_py.get("entry_points")),
    ]
    top_level = [line.strip() for line in egg.get("top_level.txt", "").splitlines() if line.strip()]
    return SourceMetadata(requires=tuple(requires), entry_points=tuple(dict.fromkeys(entry_points)), top_level=tuple(top_level))


# ----------------------------------------------------------------------------- requirements


def _requires_dist(pkg_info: str) -> list[str]:
    if not pkg_info:
        return []
    from email.parser import HeaderParser

    return [str(v) for v in HeaderParser().parsestr(pkg_info).get_all("Requires-Dist") or ()]


def _requires_txt(text: str) -> list[str]:
    """setuptools' requires.txt: requirements, then `[extra]`, `[:marker]`, `[extra:marker]` sections."""
    found: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        found.append(_conditional(line, section))
    return found


def _conditional(requirement: str, section: str) -> str:
    """`requirement` under an extras key (`extra`, `:marker`, `extra:marker`) as one Requires-Dist line."""
    extra, _, marker = section.partition(":")
    conditions = [f"({marker.strip()})"] if marker.strip() else []
    if extra.strip():
        conditions.append(f'extra == "{extra.strip()}"')
    if not conditions:
        return requirement
    base, _, own = requirement.partition(";")
    if own.strip():
        conditions.insert(0, f"({own.strip()})")
    return f"{base.strip()}; {' and '.join(conditions)}"


def _requirements(required: object, extras: object) -> list[str]:
    """Requires-Dist lines of a list of requirements and a {extras key: requirements} table, as written."""
    found = _strings(required)
    if isinstance(extras, dict):
        found += [_conditional(r, str(extra)) for extra, listed in extras.items() for r in _strings(listed)]
    return found


def _setup_cfg_requires(setup_cfg: Mapping[str, Mapping[str, str]]) -> list[str]:
    found = _lines(setup_cfg.get("options", {}).get("install_requires", ""))
    for extra, listed in setup_cfg.get("options.extras_require", {}).items():
        found += [_conditional(r, extra) for r in _lines(listed)]
    return found


# ----------------------------------------------------------------------------- entry points


def project_entry_points(project: Mapping[str, object]) -> list[tuple[str, str, str]]:
    """(group, name, value) of `[project.scripts]`, `[project.gui-scripts]` and
    `[project.entry-points.GROUP]` of a pyproject.toml's `[project]` table."""
    groups: dict[str, object] = {"console_scripts": project.get("scripts"), "gui_scripts": project.get("gui-scripts")}
    extra = project.get("entry-points")
    groups.update(extra if isinstance(extra, dict) else {})
    return [
        (group, name, value)
        for group, table in groups.items()
        if isinstance(table, dict)
        for name, value in table.items()
        if isinstance(value, str)
    ]


def _ini_entry_points(text: str) -> list[tuple[str, str, str]]:
    return [(group, name, value) for group, table in _ini(text).items() for name, value in table.items()]


def _setup_cfg_entry_points(setup_cfg: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str, str]]:
    return [(group, *_assignment(line)) for group, listed in setup_cfg.get("options.entry_points", {}).items() for line in _lines(listed)]


def _literal_entry_points(value: object) -> list[tuple[str, str, str]]:
    """`setup(entry_points=...)` as written: {group: ["name = value", ...]}, {group: "..."}, or ini text."""
    if isinstance(value, str):
        return _ini_entry_points(value)
    if not isinstance(value, dict):
        return []
    found = []
    for group, listed in value.items():
        lines = _lines(listed) if isinstance(listed, str) else _strings(listed)
        found += [(str(group), *_assignment(line)) for line in lines]
    return found


def _assignment(line: str) -> tuple[str, str]:
    name, _, value = line.partition("=")
    return name.strip(), value.strip()


def entry_points_text(entry_points: Iterable[tuple[str, str, str]]) -> str:
    """entry_points.txt of these (group, name, value); what the file could not hold is left out."""
    groups: dict[str, list[str]] = {}
    for group, name, value in entry_points:
        if name and value and not re.search(r"[\[\]=\r\n]", group + name) and not re.search(r"[\r\n]", value):
            groups.setdefault(group.strip(), []).append(f"{name} = {value}")
    return "".join(f"[{group}]\n" + "".join(f"{line}\n" for line in lines) + "\n" for group, lines in groups.items())


# ----------------------------------------------------------------------------- reading text


def _toml(text: str) -> dict:
    if not text:
        return {}
    from apiaudit.infra.tomlcompat import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return {}


def _ini(text: str) -> dict[str, dict[str, str]]:
    """An ini file's sections (names keep their case); {} when it cannot be read."""
    if not text:
        return {}
    import configparser

    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",), strict=False)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    try:
        parser.read_string(text)
    except configparser.Error:
        return {}
    return {section: dict(parser[section]) for section in parser.sections()}


def _lines(value: object) -> list[str]:
    """The entries of a multi-line ini value (a `file:` or `attr:` directive is nothing literal)."""
    if not isinstance(value, str) or value.strip().startswith(("file:", "attr:")):
        return []
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for item in value if isinstance(item, str)]
    return []


_LITERAL_KEYWORDS = ("install_requires", "extras_require", "entry_points")


def _setup_keywords(text: str) -> dict[str, object]:
    """The keywords of a `setup(...)` call that are literals, or names bound once at module level
    to a literal; read with `ast`, never run."""
    if not text:
        return {}
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    bound: dict[str, ast.expr] = {}
    for statement in module.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            bound[name] = statement.value if name not in bound else ast.Constant(None)  # bound twice: not literal
    found: dict[str, object] = {}
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and _names_setup(node.func)):
            continue
        for keyword in node.keywords:
            if keyword.arg not in _LITERAL_KEYWORDS or keyword.arg in found:
                continue
            value = keyword.value
            if isinstance(value, ast.Name) and value.id in bound:
                value = bound[value.id]
            try:
                found[keyword.arg] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                continue
    return found


def _names_setup(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or (isinstance(func, ast.Attribute) and func.attr == "setup")


# ----------------------------------------------------------------------------- the archive


@record
class _Member:
    """A member of the sdist: its path in the archive, its size, whether it is a folder, and
    the format's own record of it (to read it by)."""

    name: str
    size: int
    folder: bool
    info: object


class _Source:
    """An sdist opened for reading (a context manager): its members listed and checked (count,
    paths, kinds) as it opens."""

    def __init__(self, archive: Path, plain: Path, limits: WheelLimits) -> None:
        """`plain`: where a .tar.gz's unpacked tar is kept while it is read (the caller removes it)."""
        import tarfile
        import zipfile

        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        self.members: list[_Member] = []
        self._files: set[str] = set()
        try:
            if archive.name.endswith(".zip"):
                try:
                    self._zip = zipfile.ZipFile(archive)
                except (zipfile.BadZipFile, ValueError, EOFError) as exc:
                    raise Malformed(f"not a readable zip archive ({exc})") from None
                self._list_zip(self._zip, limits)
            elif archive.name.endswith((".tar.gz", ".tgz")):
                _gunzip(archive, plain, limits)
                self._tar = tarfile.open(plain, "r:")
                self._list_tar(self._tar, limits)
            else:
                raise Malformed("not a .tar.gz or .zip source distribution")
        except BaseException:
            self.close()
            raise

    def _list_zip(self, archive: zipfile.ZipFile, limits: WheelLimits) -> None:
        for count, info in enumerate(archive.infolist(), 1):
            _check_count(count, limits)
            check_member_path(info.filename)
            _check_kind(info.filename, stat.S_IFMT(info.external_attr >> 16))
            self._add(_Member(info.filename.removesuffix("/"), info.file_size, info.is_dir(), info))

    def _list_tar(self, archive: tarfile.TarFile, limits: WheelLimits) -> None:
        for count, member in enumerate(archive, 1):
            _check_count(count, limits)
            check_member_path(member.name)
            if member.issym() or member.islnk():
                raise Malformed(f"member {member.name!r} is a link (to {member.linkname!r})")
            if not (member.isreg() or member.isdir()) or member.issparse():
                raise Malformed(f"member {member.name!r} is not a file or a folder (a device, a pipe, a sparse file)")
            self._add(_Member(member.name, member.size, member.isdir(), member))

    def _add(self, member: _Member) -> None:
        # A file named twice is one the archive gives two contents for (a tar's later one wins
        # when unpacked): which one a tool reads is not to be left to chance.
        if not member.folder and member.name in self._files:
            raise Malformed(f"member {member.name!r} appears twice")
        self._files.add(member.name)
        self.members.append(member)

    def __enter__(self) -> _Source:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def planned(self, member: _Member) -> PlannedMember:
        return member.info if self._zip is not None else TarMember(member.name, member.size)  # type: ignore[return-value]

    def open(self, member: _Member):
        if self._zip is not None:
            return self._zip.open(member.info)  # type: ignore[arg-type]
        assert self._tar is not None
        stream = self._tar.extractfile(member.info)  # type: ignore[arg-type]
        if stream is None:
            raise Malformed(f"member {member.name!r} cannot be read")
        return stream

    def text(self, member: _Member) -> str:
        """A small member's text ("" when it is too large to be metadata)."""
        if member.size > _MAX_METADATA_BYTES:
            return ""
        with self.open(member) as stream:
            return stream.read(_MAX_METADATA_BYTES).decode("utf-8", errors="replace")

    def close(self) -> None:
        for opened in (self._zip, self._tar):
            if opened is not None:
                opened.close()


def _check_count(count: int, limits: WheelLimits) -> None:
    if count > limits.max_members:
        raise Malformed(f"it has more members than the {limits.max_members} apiaudit reads")


def _check_kind(name: str, kind: int) -> None:
    """A zip member's file type (its Unix mode, when the archive records one): a file or a folder."""
    if kind == stat.S_IFLNK:
        raise Malformed(f"member {name!r} is a link")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise Malformed(f"member {name!r} is not a file or a folder (a device, a pipe)")


def _gunzip(archive: Path, plain: Path, limits: WheelLimits) -> None:
    """Unpack the gzip stream of a .tar.gz into `plain`, refusing a stream that unpacks past the
    total cap or more than `max_ratio` times the archive's size (a gzip bomb) as it goes."""
    import gzip

    packed = archive.stat().st_size
    total = 0
    with gzip.open(archive, "rb") as stream, open(plain, "xb") as out:
        while chunk := stream.read(1 << 20):
            total += len(chunk)
            if total > limits.max_total_bytes:
                raise Malformed(f"it unpacks to more than the {limits.max_total_bytes} bytes apiaudit reads")
            if total > limits.ratio_floor_bytes and total > packed * limits.max_ratio:
                raise Malformed(f"it unpacks more than {limits.max_ratio}-fold, more than apiaudit accepts (a gzip bomb?)")
            out.write(chunk)


def _project_folder(members: Sequence[_Member]) -> str:
    """The one folder every member lies in (`NAME-VERSION/`, as sdists are made), else ""."""
    tops = {m.name.partition("/")[0] for m in members}
    if len(tops) == 1 and any("/" in m.name for m in members):
        return f"{tops.pop()}/"
    return ""


def _is_metadata(rel: str) -> bool:
    """Whether a project file is one its metadata is read from (`X.egg-info/` at the top or in `src/`)."""
    if rel in _METADATA_FILES:
        return True
    folder, _, file = rel.removeprefix("src/").rpartition("/")
    return folder.endswith(".egg-info") and "/" not in folder and file in _EGG_INFO_FILES


def read_sdist(
    archive: Path, dest: Path, name: str, version: str, progress: Reporter | None, limits: WheelLimits = DEFAULT_LIMITS,
    work: Path | None = None,
) -> cache.Marker:
    """Write the import roots' `.py`/`.pyi` files of the sdist `archive` and a dist-info read from
    its text under `dest`; every malformed archive is one InputError line. `work`: where the
    unpacked tar of a .tar.gz is kept meanwhile (default: beside the archive)."""
    with malformed_is_bad_input("sdist", archive.name, name, version, dest):
        digests = _extract(archive, dest, name, version, progress, limits, work or archive.parent)
    return downloaded_marker(archive, dest, name, version, digests)


def _extract(archive: Path, dest: Path, name: str, version: str, progress: Reporter | None, limits: WheelLimits, work: Path) -> dict[str, str]:
    plain = work / (archive.name + ".tar")
    try:
        return _extract_from(_Source(archive, plain, limits), dest, name, version, progress, limits)
    finally:
        plain.unlink(missing_ok=True)


def _extract_from(source: _Source, dest: Path, name: str, version: str, progress: Reporter | None, limits: WheelLimits) -> dict[str, str]:
    with source:
        prefix = _project_folder(source.members)
        files = {m.name[len(prefix):]: m for m in source.members if not m.folder and m.name.startswith(prefix)}
        metadata = source_metadata({rel: source.text(m) for rel, m in files.items() if _is_metadata(rel)})
        layout = import_layout(files, metadata.top_level)
        kept = list(_kept(files, layout))
        written = _dist_info(name, version, metadata, layout)
        check_plan([*((source.planned(m), target) for m, target in kept),
                    *((TarMember(target, len(data)), target) for target, data in written.items())], limits)  # fmt: skip
        report_step(progress, f"extracting {len(kept)} .py files")
        dest.mkdir(parents=True)
        digests = {}
        for member, target in kept:
            with source.open(member) as stream:
                digests[target] = _write(dest, target, stream, member.size)
        for target, data in written.items():
            digests[target] = _write(dest, target, io.BytesIO(data), len(data))
        return digests


def _kept(files: Mapping[str, _Member], layout: Layout) -> Iterator[tuple[_Member, str]]:
    """(member, where it lands in the entry) of each source file of the import roots."""
    base = f"{layout.root}/" if layout.root else ""
    names = set(layout.names)
    for rel, member in files.items():
        if not rel.startswith(base) or not rel.endswith(SOURCE_SUFFIXES):
            continue
        target = rel[len(base):]
        head, sep, _rest = target.partition("/")
        if (head if sep else head.rpartition(".")[0]) in names and "__pycache__" not in target.split("/"):
            yield member, target


def _dist_info(name: str, version: str, metadata: SourceMetadata, layout: Layout) -> dict[str, bytes]:
    """The dist-info files a wheel of this release would hold, from what its sdist says."""
    folder = f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    headers = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
    headers += [f"Requires-Dist: {line}\n" for line in metadata.requires if "\n" not in line and "\r" not in line]
    written = {f"{folder}/METADATA": "".join(headers), f"{folder}/top_level.txt": "".join(f"{n}\n" for n in layout.names)}
    entry_points = entry_points_text(metadata.entry_points)
    if entry_points:
        written[f"{folder}/entry_points.txt"] = entry_points
    return {target: text.encode("utf-8") for target, text in written.items()}


def _write(dest: Path, target: str, stream, size: int) -> str:
    """Write one file of the entry as a new file, no larger than `size`; its sha256."""
    path = os.path.join(dest, target)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    reader = HashingReader(stream, None)
    written = write_new(path, reader, limit=size)
    if written != size:
        raise Malformed(f"member {target!r} holds {written} bytes, its header says {size}")
    return reader.sha256.hexdigest()
