"""The history check of issue 38: `impact` over consecutive provider releases, each downstream at
the release its users had when the NEW provider release came out.

    python bench/impact_history.py run [--releases 0.9.0,0.10.0,...] [--cache-dir DIR]
    python bench/impact_history.py evidence [--cache-dir DIR]

`run`: for each pair OLD -> NEW of `--releases` (consecutive), every downstream of the bundled
list (`rules/<provider>.downstream.toml`, its names only) is taken at its newest final release
uploaded before NEW was (upload times from the index's JSON project page, PEP 691/700); a
downstream with no release yet is skipped for that pair. The pair's list is written as a
downstream file (`replace-bundled = true`) and the real `run_impact` runs on it, in this one
process, with the shared caches; each pair's JSON report is kept, so a re-run only does the pairs
not done yet.

`evidence`: for each break reported, the downstream's next final release is fetched (the
project's own fetch code) and the break's line looked up in it: whether the next release still
has that line's text in that file (the break's site unchanged) or not (the downstream changed
the line after the provider release: evidence that the break was real). The verdicts themselves
are judged by a person (bench/results/impact-history.md), this only gathers the facts.

Everything lands under `<cache-dir>/bench-impact-history/`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apiaudit import sources  # noqa: E402
from apiaudit.errors import InputError  # noqa: E402
from apiaudit.impact.downstream import read_list  # noqa: E402
from apiaudit.impact.render import render_impact  # noqa: E402
from apiaudit.impact.run import run_impact  # noqa: E402
from apiaudit.sources.release import index_pages, parse_release_spec  # noqa: E402

# One minor release per step, each one the release cache holds (0.19.0 and 0.22.x are not
# there: 0.18.0 -> 0.19.1 and 0.21.0 -> 0.23.0 are single steps).
DEFAULT_RELEASES = (
    "0.9.0,0.10.0,0.11.0,0.12.0,0.13.0,0.14.0,0.15.0,0.16.0,0.17.0,0.18.0,0.19.1,0.20.0,0.21.0,"
    "0.23.0,0.24.0,0.25.1,0.26.0,0.27.1,0.28.0,0.29.0,0.30.0,0.31.0,0.32.0,0.33.0"
)
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
QUOTED = re.compile(r"['`]([A-Za-z_][\w.]*)['`]")
IGNORED_WORDS = ("self", "cls", "vllm")
PAGE_OF = "vllm"  # a project whose index page pip names (the provider)
CACHE: list[Path] = []  # the cache of this run (the table looks upload times up in it)


def work_dir(cache: Path) -> Path:
    where = cache / "bench-impact-history"
    where.mkdir(parents=True, exist_ok=True)
    return where


def upload_times(name: str, cache: Path) -> dict[str, str]:
    """{version: its first file's upload time (ISO)} of NAME's final, unyanked releases; cached."""
    stored = work_dir(cache) / "dates" / f"{name}.json"
    if stored.is_file():
        return json.loads(stored.read_text(encoding="utf-8"))
    # pip names no page for a project with pre-releases only: its page sits beside the provider's.
    page = (index_pages(name, cache) or [index_pages(PAGE_OF, cache)[0].rstrip("/").rsplit("/", 1)[0] + f"/{name}/"])[0]
    request = urllib.request.Request(page, headers={"Accept": JSON_PAGE})
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = [item for item in json.load(answer).get("files", []) if not item.get("yanked")]
    versions = {id(item): _file_version(item.get("filename", "")) for item in files}
    finals = any(v is not None and not v.is_prerelease for v in versions.values())
    times: dict[str, str] = {}
    for item in files:
        version = versions[id(item)]
        # Final releases only, unless the project has none (a downstream published as alphas).
        if version is None or (finals and version.is_prerelease):
            continue
        when = item.get("upload-time")
        if when and (str(version) not in times or when < times[str(version)]):
            times[str(version)] = when
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_text(json.dumps(times, indent=1, sort_keys=True), encoding="utf-8")
    return times


def _file_version(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def current_release(times: dict[str, str], before: str) -> str | None:
    """The highest final release uploaded before `before` (a backport uploaded later than a
    newer line's release is not what a user upgrading had)."""
    earlier = [Version(v) for v, when in times.items() if when < before]
    return str(max(earlier)) if earlier else None


def next_release(times: dict[str, str], version: str) -> str | None:
    later = [Version(v) for v in times if Version(v) > Version(version)]
    return str(min(later)) if later else None


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def bundled_names() -> list[str]:
    listed = read_list(REPO / "rules" / "vllm.downstream.toml")
    return [parse_release_spec(entry.spec)[0] for entry in listed.entries]


def run_pairs(releases: list[str], cache: Path, provider: str, first: list[tuple[str, str]]) -> None:
    provider_times = upload_times(provider, cache)
    names = bundled_names()
    pairs = list(zip(releases, releases[1:]))
    # Pairs asked for first go first (a slow machine gets to the ones that matter most).
    pairs.sort(key=lambda pair: pair not in first)
    for old, new in pairs:
        out = work_dir(cache) / f"{old}-{new}.json"
        if out.is_file():
            print(f"{old} -> {new}: done before", flush=True)
            continue
        chosen = {}
        for name in names:
            version = current_release(upload_times(name, cache), provider_times[new])
            if version is not None:
                chosen[name] = version
        listing = work_dir(cache) / f"{old}-{new}.downstream.toml"
        entries = "".join(f'    "{n}=={v}",\n' for n, v in chosen.items())
        listing.write_text(f"replace-bundled = true\ndownstream = [\n{entries}]\n", encoding="utf-8")
        started = time.perf_counter()
        result = run_impact(f"{provider}=={old}", f"{provider}=={new}", downstream_files=[listing], cache_dir=cache)
        data = json.loads(render_impact(result, "json"))
        data["bench"] = {"released": provider_times[new], "chosen": chosen, "seconds": round(time.perf_counter() - started, 1)}
        out.write_text(json.dumps(data, indent=1), encoding="utf-8")
        broken = [d for d in result.downstreams if d.outcome == "breaks"]
        print(f"{old} -> {new}: {len(chosen)} downstreams, {len(broken)} broken, {len(result.breaks)} breaks, "
              f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip


def gather_evidence(cache: Path, releases: list[str], provider: str) -> None:
    """Each break with the downstream's later releases: the first that no longer has the break's
    statement (its text from the reported line to the end of the statement), if any."""
    provider_times = upload_times(provider, cache)
    rows = []
    reports = [p for p in work_dir(cache).glob("*-*.json") if p.name[0].isdigit()]
    for report in sorted(reports, key=lambda p: Version(p.name.split("-")[0])):
        data = json.loads(report.read_text(encoding="utf-8"))
        new = report.stem.split("-")[1]
        changes = {c["id"]: c["summary"] for c in data.get("changes", [])}
        for downstream in data.get("downstreams", []):
            name, version = parse_release_spec(downstream["spec"])
            later = _later_releases(name, version, [provider_times[r] for r in releases if Version(r) > Version(new)], cache)
            for item in downstream.get("breaks", []):
                rows.append(_evidence_row(report.stem, name, version, item, changes.get(item["change"]), later, cache))
    out = work_dir(cache) / "evidence.json"
    out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"{len(rows)} breaks -> {out}")


def _later_releases(name: str, version: str, later_dates: list[str], cache: Path) -> list[str]:
    """The downstream's next release, the releases current at each later provider release (the
    history's own subjects, so mostly fetched already), and its newest: in version order."""
    times = upload_times(name, cache)
    chosen = {next_release(times, version), *(current_release(times, when) for when in later_dates)}
    chosen.add(str(max(map(Version, times))))
    return sorted((v for v in chosen if v is not None and Version(v) > Version(version)), key=Version)


def _evidence_row(pair: str, name: str, version: str, item: dict, change: str | None, later: list[str], cache: Path) -> dict:
    finding = item["finding"]
    path, line = finding["path"], finding["line"]
    row = {"pair": pair, "downstream": f"{name}=={version}", "site": f"{path}:{line}", "rule": finding["rule"],
           "severity": finding["severity"], "blocking": item["blocking"], "message": finding["message"],
           "change": change, "checked": later}  # fmt: skip
    root = sources.resolve(f"{name}=={version}", cache_dir=cache).root
    old, new = pair.split("-")
    row["requires"] = _provider_requirement(root, PAGE_OF)
    row["admits"] = [_admits(row["requires"], v) for v in (old, new)]
    statement = _statement_at(root / path, line)
    first_line = _lines(root / path)[line - 1] if statement is not None else ""
    row["statement"] = statement
    if statement is None:
        return row
    # The name the finding is about (the keyword, attribute or import the message quotes last,
    # a module path aside): a fix often drops it elsewhere in the file (a kwargs dict) while the
    # reported call stays.
    quoted = [q for q in QUOTED.findall(finding["message"]) if q not in IGNORED_WORDS and "." not in q]
    key = quoted[-1] if quoted else None
    before = _count(_squeezed(sources.resolve(f"{name}=={version}", cache_dir=cache).root / path), key)
    row["name"] = key
    for candidate in later:
        try:
            root = sources.resolve(f"{name}=={candidate}", cache_dir=cache).root
        except InputError as exc:
            row.setdefault("errors", []).append(f"{candidate}: {exc}")
            continue
        body = _squeezed(root / path)
        if "name_dropped_in" not in row and key and _count(body, key) < before:
            row["name_dropped_in"] = candidate
        # The statement's text moved under a guard (a try: or an if: indents it) counts as changed.
        indented = first_line in _lines(root / path)
        if "changed_in" not in row and (statement not in body or not indented):
            row["changed_in"] = candidate
            row["changed_released"] = upload_times(name, cache)[candidate]
            row["file_gone"] = not body
    return row


def _count(body: str, name: str | None) -> int:
    return len(re.findall(rf"\b{re.escape(name)}\b", body)) if name else 0


def _provider_requirement(root: Path, provider: str) -> str | None:
    """The downstream's declared requirement on the provider (any extra), as its METADATA says."""
    found = []
    for metadata in root.glob("*.dist-info/METADATA"):
        for text in metadata.read_text(encoding="utf-8", errors="replace").splitlines():
            if not text.startswith("Requires-Dist:"):
                continue
            try:
                requirement = Requirement(text.split(":", 1)[1].strip())
            except InvalidRequirement:
                continue
            if canonicalize_name(requirement.name) == provider:
                found.append(str(requirement.specifier) or "any")
    return "; ".join(dict.fromkeys(found)) or None


def _admits(requires: str | None, version: str) -> bool | None:
    """Whether one of the declared requirements admits the provider release (None: none declared)."""
    if requires is None:
        return None
    return any(spec == "any" or SpecifierSet(spec).contains(version, prereleases=True) for spec in requires.split("; "))


def _lines(where: Path) -> list[str]:
    return where.read_text(encoding="utf-8", errors="replace").splitlines() if where.is_file() else []


def _squeezed(where: Path) -> str:
    return " ".join(where.read_text(encoding="utf-8", errors="replace").split()) if where.is_file() else ""


def _statement_at(where: Path, line: int) -> str | None:
    """The text from `line` to where its brackets close (a call over several lines), whitespace squeezed."""
    if not where.is_file():
        return None
    lines = where.read_text(encoding="utf-8", errors="replace").splitlines()
    if not 0 < line <= len(lines):
        return None
    taken, depth = [], 0
    for text in lines[line - 1 : line + 59]:
        taken.append(text)
        depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
        if depth <= 0:
            break
    return " ".join(" ".join(taken).split())


def write_table(cache: Path, verdicts_file: Path) -> None:
    """bench/results/impact-history.md's table: one row per (pair, downstream, provider change)
    of the blocking breaks, verdict from the judged list (`verdicts_file`) where it has one, else
    from the evidence (a later release changed the statement: confirmed; none did: unconfirmed)."""
    from apiaudit.infra.tomlcompat import tomllib

    rows = json.loads((work_dir(cache) / "evidence.json").read_text(encoding="utf-8"))
    judged = tomllib.loads(verdicts_file.read_text(encoding="utf-8")).get("verdict", []) if verdicts_file.is_file() else []
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["blocking"]:
            groups.setdefault((row["pair"], row["downstream"], row["change"] or row["message"]), []).append(row)
    counts: dict[str, int] = {}
    removed = 0
    lines = ["| pair | downstream | finding (sites) | provider change | verdict | evidence |", "|---|---|---|---|---|---|"]
    for (pair, downstream, change), members in groups.items():
        verdict, evidence = _verdict(members, judged)
        counts[verdict] = counts.get(verdict, 0) + len(members)
        if verdict == "confirmed" and evidence.endswith("removed the file"):
            removed += len(members)  # weaker: the downstream dropped the code (legacy paths often)
        sites = ", ".join(sorted({m["site"].rsplit("/", 1)[-1] for m in members}))
        first = members[0]
        finding = f"{first['rule']}: {_cell(first['message'], 90)} ({sites})"
        lines.append(f"| {pair} | {downstream}{_pin(first)} | {finding} | {_cell(change, 80)} | {verdict} | {_cell(evidence, 160)} |")
    print("\n".join(lines))
    print()
    print(f"breaks (blocking findings): {sum(counts.values())}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f" (of the confirmed, {removed} only by the file's removal)")  # fmt: skip
    print()
    print("| pair | NEW released | downstreams | impact's summary | seconds |")
    print("|---|---|---|---|---|")
    reports = [p for p in work_dir(cache).glob("*-*.json") if p.name[0].isdigit()]
    for report in sorted(reports, key=lambda p: Version(p.name.split("-")[0])):
        data = json.loads(report.read_text(encoding="utf-8"))
        bench = data.get("bench", {})
        print(f"| {report.stem} | {bench.get('released', '')[:10]} | {len(bench.get('chosen', {}))} | "
              f"{data['summary'].split(': ', 1)[-1]} | {bench.get('seconds', '')} |")  # fmt: skip


def _verdict(members: list[dict], judged: list[dict]) -> tuple[str, str]:
    first = members[0]
    for entry in judged:
        if all(_matches(entry.get(key), first, key) for key in ("pair", "downstream", "path", "rule", "contains")):
            return entry["verdict"], entry.get("evidence") or entry.get("mechanism", "")
    name = first["downstream"].split("==")[0]
    said = []  # (release, what it did): the earliest wins
    for m in members:
        if m.get("changed_in"):
            said.append((Version(m["changed_in"]), "removed the file" if m.get("file_gone") else "changed or guarded the statement"))
        if m.get("name_dropped_in"):
            said.append((Version(m["name_dropped_in"]), f"dropped `{m['name']}` from the file"))
    if said:
        release, how = min(said, key=lambda item: item[0])
        return "confirmed", f"{name} {release} ({upload_times(name, CACHE[0])[str(release)][:10]}) {how}"
    checked = first.get("checked") or []
    return "unconfirmed", f"no later release changed it (checked {', '.join(checked[:3])}{' ... ' + checked[-1] if len(checked) > 3 else ''})"


def _pin(row: dict) -> str:
    """What the downstream's requirement says of the pair: a break NEW's pin already excluded was known."""
    if not row.get("requires"):
        return ""
    said = {(True, True): "both", (True, False): "OLD only", (False, True): "NEW only", (False, False): "neither"}
    return f" (pin `{row['requires']}` admits {said[tuple(row['admits'])]})"


def _matches(wanted: str | None, row: dict, key: str) -> bool:
    if wanted is None:
        return True
    if key == "path":
        return row["site"].rsplit(":", 1)[0] == wanted
    if key == "contains":
        return wanted in row["message"]
    return row[key] == wanted


def _cell(text: str | None, limit: int) -> str:
    text = (text or "").replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("run", "evidence", "table"))
    parser.add_argument("--verdicts", type=Path, default=REPO / "bench" / "impact_history_verdicts.toml")
    parser.add_argument("--releases", default=DEFAULT_RELEASES, help="consecutive provider releases, comma-separated")
    parser.add_argument("--provider", default="vllm")
    parser.add_argument("--first", default="", help="pairs to run before the others: OLD-NEW,OLD-NEW")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    cache = Path(args.cache_dir or sources.default_cache_dir())
    CACHE.append(cache)
    if args.what == "run":
        first = [tuple(pair.split("-", 1)) for pair in args.first.split(",") if pair]
        run_pairs(args.releases.split(","), cache, args.provider, first)
    elif args.what == "evidence":
        gather_evidence(cache, args.releases.split(","), args.provider)
    else:
        write_table(cache, args.verdicts)


if __name__ == "__main__":
    main()
