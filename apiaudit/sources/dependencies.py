"""Where the coupling went: the declared dependencies of a consumer that use the provider.

A consumer may import nothing of the provider while a library it pins does (speculators 0.5+
drives vLLM through `hs-connectors`, a plugin vLLM loads and calls). Such a dependency need
not declare the provider, so it is found by reading its code: a bounded search of its module
files for an import of the provider's packages, answered once per release and cached.

Only what the consumer declares is followed (its dist-info `Requires-Dist`, extras left out),
one level deep; a requirement the provider itself declares is skipped (a library vLLM
depends on cannot import vLLM without a cycle), and so is the provider. A pinned requirement
(`==`) names its release; an installed consumer's dependency is the installed one; otherwise
the newest release the requirement allows.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Collection

from apiaudit.infra.frozen import record
from apiaudit.infra.progress import NullProgress, Progress
from apiaudit.sources.base import CodeTree

# Dependencies checked for one consumer at most: a consumer with more is told so.
MAX_CHECKED = 12
_FORMAT = 1
_CONSUMER_FORMAT = 1


@record
class Dependency:
    """A declared dependency of `consumer` that imports the provider."""

    spec: str  # what to audit: NAME==VERSION, or an installed NAME
    name: str
    version: str | None
    consumer: str  # "speculators 0.9.0"
    requirement: str  # as declared: "hs-connectors==0.9.0"


def uses_provider(tree: CodeTree, packages: tuple[str, ...]) -> bool:
    """Whether any module of `tree` imports one of `packages` (a text search, no parse)."""
    pattern = _import_pattern(packages)
    for path in tree.python_files():
        try:
            if pattern.search(path.read_bytes()):
                return True
        except OSError:
            continue
    return False


def imports_provider(tree: CodeTree, provider: CodeTree, cache_dir: Path | None) -> bool:
    """`uses_provider` of a tree, answered once per release (a release's files never change)."""
    spec = f"{tree.name}=={tree.version}" if tree.kind == "release" and tree.version else ""
    answer = _cached_answer(cache_dir, spec, provider) if spec else None
    if answer is None:
        answer = uses_provider(tree, provider.packages)
        if spec:
            _store_answer(cache_dir, spec, provider, answer)
    return answer


def declared(tree: CodeTree) -> list[str]:
    """The `Requires-Dist` lines of the tree's own dist-info (empty without one)."""
    metadata = _metadata_file(tree)
    if metadata is None:
        return []
    try:
        from email.parser import HeaderParser  # here: a scan of a consumer that imports the provider never reads one

        headers = HeaderParser().parsestr(metadata.read_text("utf-8", errors="replace"))
    except OSError:
        return []
    return [str(v) for v in headers.get_all("Requires-Dist") or ()]


def provider_dependencies(
    tree: CodeTree, provider: CodeTree, *, resolve, versions, cache_dir: Path | None, progress: Progress | None = None,
    jobs: int = 8,
) -> tuple[list[Dependency], list[str]]:
    """(the declared dependencies of `tree` that import the provider, notices about what could
    not be followed). `resolve(spec) -> CodeTree` fetches a release (or finds an installed
    distribution); `versions(name) -> list[str]` lists a distribution's releases.

    The requirements are checked at once, in `jobs` threads (each mostly waits on the network),
    each saying why it is fetched; the threads are gone when this returns (a scan forks later).
    A released consumer's whole answer is kept, so a warm scan asks nothing, not even a release
    list: an unpinned dependency stays the release that was newest when first asked."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    progress = progress or NullProgress()
    skip = {canonicalize_name(provider.name)} | _requirement_names(tuple(declared(provider)))
    consumer = tree.origin().name_version
    kept_as = f"{tree.name}=={tree.version}" if tree.kind == "release" and tree.version else ""
    kept = _cached_consumer_answer(cache_dir, kept_as, provider, skip)
    if kept is not None:
        return kept
    to_check: list[tuple[str, Requirement]] = []
    notices: list[str] = []
    for line in declared(tree):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) in skip:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's dependency, or another platform's
        if len(to_check) == MAX_CHECKED:
            notices.append(f"{consumer} declares more dependencies than {MAX_CHECKED}: the rest were not checked for {provider.name} imports")
            break
        to_check.append((line, requirement))

    def check(line: str, requirement: Requirement) -> tuple[Dependency | None, str | None]:
        spec = _release_spec(requirement, tree, versions)
        if spec is None:
            return None, f"{consumer} requires {line}: no release of it could be chosen to check for {provider.name} imports"
        answer = _cached_answer(cache_dir, spec, provider)
        if answer is None:
            progress.step(f"checking whether {spec} imports {provider.name} ({consumer} requires {line})")
            try:
                dependency_tree = resolve(spec)
            except Exception as exc:  # noqa: BLE001 - a dependency that cannot be fetched is a notice, not a failure
                return None, f"{consumer} requires {line}: {spec} could not be read ({exc})"
            answer = imports_provider(dependency_tree, provider, cache_dir)
        if not answer:
            return None, None
        name, _, version = spec.partition("==")
        return Dependency(spec, name, version or None, consumer, line), None

    if to_check:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(to_check))), thread_name_prefix="apiaudit-deps") as pool:
            answers = list(pool.map(lambda item: check(*item), to_check))  # in declaration order
    else:
        answers = []
    found = [dependency for dependency, _ in answers if dependency is not None]
    failed = [notice for _, notice in answers if notice is not None]
    if not failed:  # a release that could not be read is asked again next time
        _store_consumer_answer(cache_dir, kept_as, provider, skip, found, notices)
    return found, failed + notices


@functools.lru_cache(maxsize=64)
def _requirement_names(lines: tuple[str, ...]) -> frozenset[str]:
    """The distributions valid requirement lines name, canonical. Kept by the lines: a sweep
    scans many downstreams against one provider, whose hundred-odd lines parse once a process."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = set()
    for line in lines:
        try:
            names.add(canonicalize_name(Requirement(line).name))
        except InvalidRequirement:
            continue
    return frozenset(names)


def _release_spec(requirement, tree: CodeTree, versions) -> str | None:
    pins = [s.version for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version]
    if pins:
        return f"{requirement.name}=={pins[0]}"
    if tree.kind == "installed":
        return requirement.name  # beside an installed consumer, the installed dependency
    try:
        allowed = [v for v in versions(requirement.name) if requirement.specifier.contains(v, prereleases=False)]
    except Exception:  # noqa: BLE001 - no listing (offline, an unknown name): nothing chosen
        return None
    return f"{requirement.name}=={allowed[-1]}" if allowed else None


def _metadata_file(tree: CodeTree) -> Path | None:
    from packaging.utils import canonicalize_name

    wanted = canonicalize_name(tree.name)
    for info in sorted(tree.root.glob("*.dist-info")):
        if canonicalize_name(info.name.removesuffix(".dist-info").rpartition("-")[0]) == wanted and (info / "METADATA").is_file():
            return info / "METADATA"
    if tree.kind == "installed":
        from importlib import metadata

        try:
            files = metadata.distribution(tree.name).files or ()
        except metadata.PackageNotFoundError:
            return None
        for file in files:
            if file.name == "METADATA" and file.parent.name.endswith(".dist-info"):
                return Path(str(file.locate()))
    return None


def _import_pattern(packages: tuple[str, ...]) -> re.Pattern[bytes]:
    names = "|".join(re.escape(p) for p in packages)
    return re.compile(rb"^[ \t]*(?:from[ \t]+(?:" + names.encode() + rb")(?:\.|[ \t])|import[ \t]+(?:" + names.encode() + rb")\b)", re.M)


def _answer_file(cache_dir: Path, spec: str, provider: CodeTree) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    return cache_dir / "dependencies" / f"{safe}--{re.sub(r'[^A-Za-z0-9._-]', '_', provider.name)}.json"


def _cached_answer(cache_dir: Path | None, spec: str, provider: CodeTree) -> bool | None:
    if cache_dir is None or "==" not in spec:
        return None  # an installed dependency may change under the same name
    try:
        data = json.loads(_answer_file(cache_dir, spec, provider).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("packages") != list(provider.packages):
        return None
    answer = data.get("imports_provider")
    return answer if isinstance(answer, bool) else None


def _store_answer(cache_dir: Path | None, spec: str, provider: CodeTree, answer: bool) -> None:
    if cache_dir is None or "==" not in spec:
        return
    from apiaudit.infra.atomic import atomic_write

    try:
        path = _answer_file(cache_dir, spec, provider)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"format": _FORMAT, "packages": list(provider.packages), "imports_provider": answer}))
    except OSError:
        pass  # asked again next time


def _consumer_answer_file(cache_dir: Path, spec: str, provider: CodeTree) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._=-]", "_", spec)
    return cache_dir / "dependencies" / f"{safe}--{re.sub(r'[^A-Za-z0-9._-]', '_', provider.name)}--requirements.json"


def _cached_consumer_answer(cache_dir: Path | None, spec: str, provider: CodeTree, skip: Collection[str]) -> tuple[list[Dependency], list[str]] | None:
    """What following a released consumer's requirements found last time, for the same provider
    packages and the same requirements of the provider left out."""
    if cache_dir is None or not spec:
        return None
    try:
        data = json.loads(_consumer_answer_file(cache_dir, spec, provider).read_text())
        if (data.get("format") != _CONSUMER_FORMAT or data.get("packages") != list(provider.packages)
                or data.get("skip") != sorted(skip)):  # fmt: skip
            return None
        found = [Dependency(str(d[0]), str(d[1]), None if d[2] is None else str(d[2]), str(d[3]), str(d[4])) for d in data["found"]]
        notices = [str(n) for n in data["notices"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return found, notices


def _store_consumer_answer(cache_dir: Path | None, spec: str, provider: CodeTree, skip: Collection[str], found: list[Dependency],
                           notices: list[str]) -> None:  # fmt: skip
    if cache_dir is None or not spec:
        return
    from apiaudit.infra.atomic import atomic_write

    rows = [[d.spec, d.name, d.version, d.consumer, d.requirement] for d in found]
    try:
        path = _consumer_answer_file(cache_dir, spec, provider)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"format": _CONSUMER_FORMAT, "packages": list(provider.packages), "skip": sorted(skip),
                                       "found": rows, "notices": notices}))  # fmt: skip
    except OSError:
        pass  # asked again next time
