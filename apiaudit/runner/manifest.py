"""Stage manifests: what a stage read, with which config and versions, and what it wrote.

A stage is skipped on a re-run when its manifest still matches: the same config, the
same input fingerprints, the same library versions, and every output still on disk as
written. Outputs are re-checked by size and modification time first and re-hashed only
when those changed, so checking a stage of many gigabytes of hidden states stays cheap.

`attempt.json` records what a stage started with; an interrupted stage whose attempt
matches the current expectation resumes (keeps finished samples) instead of starting over.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from apiaudit.infra.frozen import record

MANIFEST_NAME = "manifest.json"
ATTEMPT_NAME = "attempt.json"
MANIFEST_VERSION = 1
# Files larger than this are fingerprinted by size plus their first and last blocks:
# hashing a model's many gigabytes of weights on every run would cost more than it protects.
FULL_HASH_LIMIT = 64 * 1024 * 1024
_SAMPLED_BLOCK = 4 * 1024 * 1024
_CHUNK = 1024 * 1024

LIBRARIES = ("apiaudit", "speculators", "torch", "transformers", "datasets", "vllm")


def fingerprint(path: Path) -> str:
    """A content fingerprint of one file: `sha256:...` (whole file) or `sampled-sha256:...` (large files)."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        if size <= FULL_HASH_LIMIT:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
            return f"sha256:{digest.hexdigest()}"
        digest.update(str(size).encode())
        digest.update(handle.read(_SAMPLED_BLOCK))
        handle.seek(size - _SAMPLED_BLOCK)
        digest.update(handle.read(_SAMPLED_BLOCK))
    return f"sampled-sha256:{digest.hexdigest()}"


def fingerprint_files(paths: list[Path], base: Path) -> dict[str, str]:
    """{path relative to base (or absolute when outside it): fingerprint} for existing files."""
    result: dict[str, str] = {}
    for path in sorted(paths):
        if path.is_file():
            result[_relative(path, base)] = fingerprint(path)
    return result


def fingerprint_tree(directory: Path, base: Path, *, suffixes: tuple[str, ...] | None = None) -> dict[str, str]:
    files = [p for p in directory.rglob("*") if p.is_file() and (suffixes is None or p.name.endswith(suffixes))]
    return fingerprint_files(files, base)


def library_versions(overlay: Path | None = None) -> dict[str, str]:
    """Installed versions of the libraries a stage's output depends on ('absent' when not installed)."""
    versions: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    if overlay is not None:
        versions["speculators"] = f"overlay:{overlay}"
    return versions


@record
class Expectation:
    """What a stage would run with now."""

    stage: str
    config: dict[str, Any]
    inputs: dict[str, str]
    versions: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "config": self.config, "inputs": self.inputs, "versions": self.versions}


@dataclass
class OutputRecord:
    fingerprint: str
    size: int
    mtime_ns: int


@dataclass
class Manifest:
    expectation: Expectation
    outputs: dict[str, OutputRecord]
    counts: dict[str, Any] = field(default_factory=dict)
    started_at: float = 0.0
    duration_s: float = 0.0

    def to_json(self) -> str:
        body = {
            "manifest_version": MANIFEST_VERSION,
            **self.expectation.as_dict(),
            "outputs": {k: vars(v) for k, v in sorted(self.outputs.items())},
            "counts": self.counts,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
        }
        return json.dumps(body, indent=2, sort_keys=True) + "\n"

    @property
    def output_fingerprints(self) -> dict[str, str]:
        return {k: v.fingerprint for k, v in sorted(self.outputs.items())}


def record_outputs(paths: list[Path], base: Path) -> dict[str, OutputRecord]:
    records: dict[str, OutputRecord] = {}
    for path in sorted(paths):
        stat = path.stat()
        records[_relative(path, base)] = OutputRecord(fingerprint(path), stat.st_size, stat.st_mtime_ns)
    return records


def write_manifest(stage_dir: Path, manifest: Manifest) -> None:
    _atomic_write(stage_dir / MANIFEST_NAME, manifest.to_json())


def read_manifest(stage_dir: Path) -> Manifest | None:
    """The manifest of a finished stage, or None when absent or unreadable (then the stage runs)."""
    try:
        body = json.loads((stage_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        if body.get("manifest_version") != MANIFEST_VERSION:
            return None
        return Manifest(
            expectation=Expectation(body["stage"], body["config"], body["inputs"], body["versions"]),
            outputs={k: OutputRecord(**v) for k, v in body["outputs"].items()},
            counts=body.get("counts", {}),
            started_at=body.get("started_at", 0.0),
            duration_s=body.get("duration_s", 0.0),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_manifest(stage_dir: Path) -> None:
    (stage_dir / MANIFEST_NAME).unlink(missing_ok=True)


def stale_reason(manifest: Manifest | None, expected: Expectation, base: Path) -> str | None:
    """Why the stage must run again, or None when its manifest still matches."""
    if manifest is None:
        return "never completed"
    recorded = manifest.expectation
    for label, old, new in (
        ("config", recorded.config, expected.config),
        ("versions", recorded.versions, expected.versions),
        ("inputs", recorded.inputs, expected.inputs),
    ):
        if old != new:
            return f"{label} changed ({_first_difference(old, new)})"
    for name, record in manifest.outputs.items():
        path = _absolute(name, base)
        try:
            stat = path.stat()
        except OSError:
            return f"output {name} is missing"
        if stat.st_size == record.size and stat.st_mtime_ns == record.mtime_ns:
            continue
        if fingerprint(path) != record.fingerprint:
            return f"output {name} changed"
    return None


def write_attempt(stage_dir: Path, expected: Expectation) -> None:
    _atomic_write(stage_dir / ATTEMPT_NAME, json.dumps(expected.as_dict(), indent=2, sort_keys=True) + "\n")


def read_attempt(stage_dir: Path) -> dict[str, Any] | None:
    """What the last run of this stage started with (JSON form), or None."""
    try:
        body = json.loads((stage_dir / ATTEMPT_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def attempt_matches(stage_dir: Path, expected: Expectation) -> bool:
    """True when an earlier, unfinished run of this stage started with exactly what it would start with now."""
    return read_attempt(stage_dir) == as_json(expected)


def as_json(expected: Expectation) -> dict[str, Any]:
    """An expectation as its attempt record reads back."""
    return json.loads(json.dumps(expected.as_dict()))


def now() -> float:
    return time.time()


def _first_difference(old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                return f"{key}: {_short(old.get(key))} -> {_short(new.get(key))}"
    return f"{_short(old)} -> {_short(new)}"


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def _absolute(name: str, base: Path) -> Path:
    path = Path(name)
    return path if path.is_absolute() else base / path


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
