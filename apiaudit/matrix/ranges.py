"""Version ranges: which releases a provider requirement selects, how a set of releases reads
as a requirement, and what range a consumer declares for its provider."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Iterable, Sequence

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from apiaudit.errors import InputError
from apiaudit.infra.frozen import record
from apiaudit.infra.tomlcompat import tomllib
from apiaudit.sources.base import CodeTree


@record
class ProviderRange:
    """`vllm>=0.11,<=0.20` parsed: the distribution name and its specifiers ("" = every release)."""

    name: str
    specifier: str
    written: str = ""  # as the user wrote it, for messages

    @property
    def text(self) -> str:
        return self.written or f"{self.name}{self.specifier}"

    def contains(self, version: str, *, prereleases: bool = False) -> bool:
        return SpecifierSet(self.specifier).contains(Version(version), prereleases=prereleases)


@record
class DeclaredRequirement:
    """One requirement a consumer declares on the provider, e.g. ``vllm<=0.16.0,>=0.12.0`` under extra datagen."""

    consumer: str
    specifier: str  # "" when the consumer names the provider without a version range
    extra: str | None = None  # the extra it is declared under, None for a base requirement
    marker: str | None = None  # the full environment marker, as written

    @property
    def text(self) -> str:
        return self.specifier or "any version"

    def allows(self, version: str) -> bool:
        # A pinned pre-release (==0.12.0rc1) must count as allowed, hence prereleases=True.
        return SpecifierSet(self.specifier).contains(Version(version), prereleases=True)


def parse_provider_range(spec: str) -> ProviderRange:
    """`NAME`, `NAME==V`, `NAME>=A,<=B` ... -> ProviderRange; one clear InputError otherwise."""
    text = (spec or "").strip()
    if not text:
        raise InputError("give the provider range to scan, e.g. --provider 'vllm>=0.11,<=0.17'")
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        raise InputError(f"not a provider range: {spec!r}; write NAME and version specifiers, e.g. 'vllm>=0.11,<=0.17'") from None
    if requirement.url or requirement.marker or requirement.extras:
        raise InputError(f"not a provider range: {spec!r}; give only a name and version specifiers (no extras, URL or marker)")
    provider = ProviderRange(requirement.name, str(requirement.specifier), text)
    reason = empty_range_reason(provider.specifier)
    if reason:
        raise InputError(f"the range {provider.text} is empty: {reason}")
    return provider


def empty_range_reason(specifier: str) -> str | None:
    """Why no version at all can satisfy `specifier` (e.g. ``>=0.20,<0.11``), or None when some could.

    Only the bounds are compared; that is enough for the ranges people write by hand.
    """
    lower: tuple[Version, bool, str] | None = None  # (version, inclusive, as written)
    upper: tuple[Version, bool, str] | None = None
    pins: list[Version] = []
    for spec in SpecifierSet(specifier):
        try:
            version = Version(spec.version.rstrip(".*"))
        except InvalidVersion:
            continue
        if spec.operator in (">=", ">", "~="):
            bound = (version, spec.operator != ">", str(spec))
            if lower is None or bound[0] > lower[0] or (bound[0] == lower[0] and not bound[1]):
                lower = bound
        if spec.operator in ("<=", "<"):
            bound = (version, spec.operator == "<=", str(spec))
            if upper is None or bound[0] < upper[0] or (bound[0] == upper[0] and not bound[1]):
                upper = bound
        if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
            pins.append(version)
    if len(set(pins)) > 1:
        return f"it pins two different versions ({', '.join(sorted({str(p) for p in pins}))})"
    if lower and upper:
        if lower[0] > upper[0] or (lower[0] == upper[0] and not (lower[1] and upper[1])):
            return f"no version is both {lower[2]} and {upper[2]}"
    if pins and not SpecifierSet(specifier).contains(pins[0], prereleases=True):
        return f"it pins {pins[0]} but also excludes it"
    return None


def select_releases(
    available: Sequence[str], provider: ProviderRange, *, include_prereleases: bool = False
) -> list[str]:
    """The releases of `available` (oldest first) inside the range; InputError with the reason when none is."""
    chosen = []
    for version in available:
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if parsed.is_prerelease and not include_prereleases:
            continue
        if SpecifierSet(provider.specifier).contains(parsed, prereleases=include_prereleases):
            chosen.append(version)
    if not chosen:
        finals = [v for v in available if not Version(v).is_prerelease]
        newest = finals[-1] if finals else (available[-1] if available else None)
        span = f" (the index has {available[0]} ... {newest})" if available else ""
        hint = ""
        if not include_prereleases and any(
            SpecifierSet(provider.specifier).contains(Version(v), prereleases=True) for v in available
        ):
            hint = "; only pre-releases match (pass --pre to include them)"
        raise InputError(f"no release of {provider.name} on the package index falls in {provider.text}{span}{hint}")
    return chosen


def as_requirement(selected: Iterable[str], scanned: Sequence[str]) -> tuple[str, bool]:
    """`selected` releases, out of the `scanned` ones (oldest first), as requirement syntax.

    Returns (text, contiguous). Contiguous means no scanned release lies between two
    selected ones: ``>=A,<=B`` (``==A`` for one). Otherwise each run of neighbours is
    written that way and the runs are joined with `` | ``. Nothing selected: ("", True).
    """
    chosen = set(selected)
    runs: list[list[str]] = []
    for version in scanned:
        if version in chosen:
            if runs and runs[-1][-1] == _previous(scanned, version):
                runs[-1].append(version)
            else:
                runs.append([version])
    if not runs:
        return "", True
    texts = [f"=={run[0]}" if len(run) == 1 else f">={run[0]},<={run[-1]}" for run in runs]
    return " | ".join(texts), len(runs) == 1


def _previous(scanned: Sequence[str], version: str) -> str | None:
    at = list(scanned).index(version)
    return scanned[at - 1] if at > 0 else None


# --- what the consumer declares -------------------------------------------------------


def declared_requirements(tree: CodeTree, provider: str) -> tuple[DeclaredRequirement, ...]:
    """Every requirement the consumer's metadata declares on `provider`, extras included.

    Read from the dist-info METADATA a release entry keeps, from an installed
    distribution's metadata, or from a path's pyproject.toml; () when there is none.
    """
    lines = _requires_dist(tree)
    wanted = canonicalize_name(provider)
    out: list[DeclaredRequirement] = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) != wanted:
            continue
        marker = str(requirement.marker) if requirement.marker else None
        out.append(
            DeclaredRequirement(
                consumer=tree.name,
                specifier=str(requirement.specifier),
                extra=_extra_of(requirement.marker),
                marker=marker,
            )
        )
    return tuple(dict.fromkeys(out))


def _requires_dist(tree: CodeTree) -> list[str]:
    if tree.kind == "release":
        for metadata_file in sorted(Path(tree.root).glob("*.dist-info/METADATA")):
            return _metadata_requires(metadata_file.read_text(encoding="utf-8", errors="replace"))
        return []
    if tree.kind == "installed":
        try:
            return list(metadata.distribution(tree.name).requires or [])
        except metadata.PackageNotFoundError:
            return []
    return _pyproject_requires(Path(tree.root))


def _metadata_requires(text: str) -> list[str]:
    # METADATA is an email-style header block; the body (after the first blank line) is the README.
    out = []
    for line in text.splitlines():
        if not line.strip():
            break
        if line.lower().startswith("requires-dist:"):
            out.append(line.split(":", 1)[1].strip())
    return out


def _pyproject_requires(root: Path) -> list[str]:
    for folder in (root, *root.parents[:2]):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return []
        out = [str(r) for r in project.get("dependencies", []) or []]
        for extra, requirements in (project.get("optional-dependencies", {}) or {}).items():
            for requirement in requirements or []:
                # Written as METADATA would write it, so one parser reads both.
                joiner = " and " if ";" in str(requirement) else "; "
                out.append(f'{requirement}{joiner}extra == "{extra}"')
        return out
    return []


def _extra_of(marker: Marker | None) -> str | None:
    if marker is None:
        return None
    for item in _marker_atoms(marker._markers):  # noqa: SLF001 - packaging exposes no public walker
        left, _op, right = item
        names = {getattr(left, "value", None), getattr(right, "value", None)}
        if "extra" in names:
            value = right.value if getattr(left, "value", None) == "extra" else left.value
            return str(value)
    return None


def _marker_atoms(markers) -> Iterable[tuple]:
    for item in markers:
        if isinstance(item, list):
            yield from _marker_atoms(item)
        elif isinstance(item, tuple) and len(item) == 3:
            yield item
