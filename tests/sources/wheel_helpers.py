"""Wheels built inside the tests: tiny honest ones for the real pip, hostile ones for the extractor."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def record_hash(content: bytes) -> str:
    """A RECORD hash field: `sha256=` and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()


def build_wheel(
    folder: Path,
    name: str,
    version: str,
    members: dict[str, bytes | str],
    *,
    record: bool = False,
    compression: int = zipfile.ZIP_STORED,
) -> Path:
    """A py3-none-any wheel of `members`; with `record`, its RECORD lists every member's sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    dist_info = f"{name}-{version}.dist-info"
    base: dict[str, bytes | str] = {
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    everything = {**base, **members}
    record_name = f"{dist_info}/RECORD"
    if record_name not in everything:
        lines = []
        if record:
            for member, content in everything.items():
                data = content.encode() if isinstance(content, str) else content
                lines.append(f"{member},{record_hash(data)},{len(data)}")
            lines.append(f"{record_name},,")
        everything[record_name] = "\n".join(lines) + ("\n" if lines else "")
    with zipfile.ZipFile(wheel, "w", compression) as archive:
        for member, content in everything.items():
            archive.writestr(member, content)
    return wheel


def build_sdist(
    folder: Path,
    name: str,
    version: str,
    members: dict[str, bytes | str],
    *,
    archive: str = "tar.gz",
    top: str | None = None,
) -> Path:
    """A source distribution of `members` (paths inside its project folder, `NAME-VERSION/` unless
    `top` says otherwise: "" puts them at the archive's root); a `.tar.gz` or a `.zip`."""
    import io
    import tarfile

    folder.mkdir(parents=True, exist_ok=True)
    project = f"{name}-{version}" if top is None else top
    prefix = f"{project}/" if project else ""
    path = folder / f"{name}-{version}.{archive}"
    encoded = {prefix + member: content.encode() if isinstance(content, str) else content for member, content in members.items()}
    if archive == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
            for member, data in encoded.items():
                out.writestr(member, data)
        return path
    with tarfile.open(path, "w:gz") as out:
        for member, data in encoded.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return path
