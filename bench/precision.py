"""Precision on real consumers: errors on pairs that cannot fail (issue 27's corpus).

    python bench/precision.py [--corpus bench/precision_corpus.toml] [--only NAME]...
                              [--cache-dir DIR] [--cold] [--out FILE] [--compare FILE] [--show-errors]

Each consumer of the corpus is scanned (`apiaudit scan`, one whole process of this checkout)
against the provider release it pins or declares as its upper bound (else the newest release
published before it), a pair its own CI passed on: every error reported there is a real break
or a false error. Prints one row per consumer: files scanned, errors (unconditional),
conditional errors (behind a guard the engine could not decide), warnings, seconds; then how
many of the errors bench/precision_adjudication.toml has judged real or false, and how many are
not judged yet (`new`).

`--out FILE` writes the rows and every error (path, line, rule, message) as JSON;
`--compare FILE` prints, per consumer, the counts of an earlier `--out` beside this run's.
Fetched releases come from `--cache-dir`, else $APIAUDIT_TEST_CACHE, else apiaudit's own
cache. A scan whose engine, consumer and provider are unchanged is answered from the whole-scan
cache in a fraction of a second; `--cold` scans with a private cache that shares only the
fetched releases (no provider index, consumer or whole-scan cache), so `seconds` is a cold scan.
Exit 0 unless a scan could not run (exit 1); errors are data here, not failures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apiaudit.infra.tomlcompat import tomllib  # noqa: E402
from apiaudit.sources.cache import default_cache_dir, releases_dir  # noqa: E402

CORPUS = REPO / "bench" / "precision_corpus.toml"
ADJUDICATION = REPO / "bench" / "precision_adjudication.toml"


@dataclass
class Row:
    consumer: str
    provider: str
    files: int = 0
    errors: int = 0
    conditional_errors: int = 0
    warnings: int = 0
    seconds: float = 0.0
    failed: str = ""
    real: int = 0
    false: int = 0
    new: int = 0
    findings: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.consumer.partition("==")[0]


def releases_of(cache: Path | None) -> Path:
    """The fetched releases of `cache`, else of apiaudit's own cache (what `scan` uses by default)."""
    return releases_dir(cache or default_cache_dir())


def load_corpus(path: Path) -> list[dict]:
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("consumer", [])
    for entry in entries:
        for key in ("consumer", "provider", "reason"):
            if not entry.get(key):
                raise SystemExit(f"precision: {path}: an entry has no {key!r}: {entry}")
    return entries


Verdict = tuple[str, str]  # ('real' | 'false', the cause of a false one)


def load_verdicts(path: Path) -> dict[tuple[str, str, int, str], Verdict]:
    """(consumer, path, line, rule) -> (verdict, cause), from the adjudication file; the consumer
    as the entry names it: a distribution name, or `name==version` for one release of it."""
    if not path.exists():
        return {}
    verdicts: dict[tuple[str, str, int, str], Verdict] = {}
    for entry in tomllib.loads(path.read_text(encoding="utf-8")).get("error", []):
        if entry.get("verdict") not in ("real", "false"):
            raise SystemExit(f"precision: {path}: verdict must be 'real' or 'false': {entry}")
        for line in entry.get("lines", [entry.get("line")]):
            key = (entry["consumer"], entry["path"], int(line), entry["rule"])
            verdicts[key] = (entry["verdict"], str(entry.get("cause", "")))
    return verdicts


def scan(entry: dict, cache: Path | None, workdir: Path) -> Row:
    row = Row(entry["consumer"], entry["provider"])
    report = workdir / "report.json"
    report.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "apiaudit", "scan", "--consumer", row.consumer, "--provider", row.provider,
            "--format", "json", "-o", str(report), "--fail-on", "never", "--no-progress"]  # fmt: skip
    if cache is not None:
        argv += ["--cache-dir", str(cache)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True)
    row.seconds = round(time.perf_counter() - started, 1)
    if done.returncode != 0 or not report.exists():
        lines = (done.stderr or done.stdout).strip().splitlines()
        row.failed = f"exit {done.returncode}: {lines[-1] if lines else 'no output'}"
        return row
    data = json.loads(report.read_text(encoding="utf-8"))
    row.files = data["summary"]["files_scanned"]
    for f in data.get("findings", []):
        if f["severity"] == "warning":
            row.warnings += 1
        elif f["severity"] == "error":
            if f.get("conditional"):
                row.conditional_errors += 1
            else:
                row.errors += 1
            keep = ("rule", "path", "line", "column", "callee", "param", "message", "conditional", "guard")
            row.findings.append({k: f.get(k) for k in keep})
    row.findings.sort(key=lambda f: (f["path"], f["line"], f["column"], f["rule"]))
    return row


def judge(row: Row, verdicts: dict[tuple[str, str, int, str], Verdict]) -> None:
    for f in row.findings:
        # an entry naming the release (`name==version`) judges that release only; a bare name, every one
        at = (f["path"], f["line"], f["rule"])
        verdict, f["cause"] = verdicts.get((row.consumer, *at)) or verdicts.get((row.name, *at), ("new", ""))
        f["verdict"] = verdict
        if verdict == "real":
            row.real += 1
        elif verdict == "false":
            row.false += 1
        else:
            row.new += 1


def table(rows: list[Row]) -> str:
    head = ("consumer", "provider", "files", "errors", "cond", "warnings", "seconds", "real", "false", "new")
    body = []
    for r in rows:
        if r.failed:
            body.append((r.consumer, r.provider, "-", "-", "-", "-", f"{r.seconds:.1f}", "-", "-", r.failed[:60]))
        else:
            body.append((r.consumer, r.provider, str(r.files), str(r.errors), str(r.conditional_errors), str(r.warnings),
                         f"{r.seconds:.1f}", str(r.real), str(r.false), str(r.new)))  # fmt: skip
    ok = [r for r in rows if not r.failed]
    body.append(("total", f"{len(ok)} scanned", str(sum(r.files for r in ok)), str(sum(r.errors for r in ok)),
                 str(sum(r.conditional_errors for r in ok)), str(sum(r.warnings for r in ok)),
                 f"{sum(r.seconds for r in rows):.1f}", str(sum(r.real for r in ok)), str(sum(r.false for r in ok)),
                 str(sum(r.new for r in ok))))  # fmt: skip
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]
    fmt = lambda line: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))  # noqa: E731
    return "\n".join([fmt(head), fmt(tuple("-" * w for w in widths)), *(fmt(line) for line in body)])


def by_cause(rows: list[Row]) -> str:
    """False errors per cause (unconditional and conditional apart), over every consumer."""
    counts: dict[str, list[int]] = {}
    for r in rows:
        for f in r.findings:
            if f["verdict"] == "false":
                counts.setdefault(f["cause"], [0, 0])[1 if f["conditional"] else 0] += 1
    order = sorted(counts, key=lambda c: (-sum(counts[c]), c))
    lines = ["false errors by cause: " + ", ".join(f"{c}: {counts[c][0]}+{counts[c][1]}c" for c in order)]
    return "\n".join(lines)


def gone(rows: list[Row], verdicts: dict[tuple[str, str, int, str], Verdict]) -> str:
    """Judged errors of the scanned consumers that this run no longer reports: a real one gone is lost recall."""
    scanned = {key for r in rows if not r.failed for key in (r.name, r.consumer)}
    seen = {(key, f["path"], f["line"], f["rule"]) for r in rows for key in (r.name, r.consumer) for f in r.findings}
    missing = [(k, v) for k, v in verdicts.items() if k[0] in scanned and k not in seen]
    real = [k for k, (verdict, _) in missing if verdict == "real"]
    text = f"judged errors no longer reported: {len(missing) - len(real)} false, {len(real)} real"
    return text + "".join(f"\n  real break no longer reported: {k[0]} {k[1]}:{k[2]} {k[3]}" for k in sorted(real))


def compare(before_path: Path, rows: list[Row]) -> str:
    rows_before = json.loads(before_path.read_text(encoding="utf-8"))["rows"]
    # the same release, else (a consumer whose release changed since) the one row of that name
    before = {r["consumer"]: r for r in rows_before}
    names = [r["consumer"].partition("==")[0] for r in rows_before]
    before.update({n: r for n, r in zip(names, rows_before) if names.count(n) == 1})
    scanned = {r.consumer for r in rows}
    lines = [f"{'consumer':32} {'errors':>15} {'cond':>11} {'warnings':>11} {'false':>11} {'new':>11}"]

    def cell(old: dict | None, new: Row, key: str) -> str:
        now = getattr(new, key)
        if old is None or old.get("failed"):
            return f"- -> {now}"
        return f"{old[key]} -> {now}"

    for r in rows:
        old = before.get(r.consumer)
        if old is None and before.get(r.name, {}).get("consumer") not in scanned:
            old = before.get(r.name)  # the same consumer at another release than last time
        lines.append(f"{r.consumer:32} {cell(old, r, 'errors'):>15} {cell(old, r, 'conditional_errors'):>11} "
                     f"{cell(old, r, 'warnings'):>11} {cell(old, r, 'false'):>11} {cell(old, r, 'new'):>11}")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--adjudication", type=Path, default=ADJUDICATION)
    ap.add_argument("--only", action="append", default=[], help="a consumer name (repeatable)")
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--cold", action="store_true", help="no index, consumer or whole-scan cache: releases only")
    ap.add_argument("--out", type=Path, default=None, help="write the rows and errors as JSON")
    ap.add_argument("--compare", type=Path, default=None, help="an earlier --out to print beside this run")
    ap.add_argument("--show-errors", action="store_true", help="list every error with its verdict")
    args = ap.parse_args()

    entries = load_corpus(args.corpus)
    if args.only:
        entries = [e for e in entries if e["consumer"].partition("==")[0] in args.only]
        if not entries:
            print(f"precision: no consumer named {', '.join(args.only)} in {args.corpus}", file=sys.stderr)
            return 2
    cache = args.cache_dir or (Path(os.environ["APIAUDIT_TEST_CACHE"]) if os.environ.get("APIAUDIT_TEST_CACHE") else None)
    verdicts = load_verdicts(args.adjudication)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="apiaudit-precision-") as work:
        releases = releases_of(cache)
        for n, entry in enumerate(entries):
            where = cache
            if args.cold:  # a fresh cache per scan, holding only the fetched releases
                where = Path(work) / f"cache-{n}"
                where.mkdir()
                releases.mkdir(parents=True, exist_ok=True)
                (where / releases.name).symlink_to(releases.resolve(), target_is_directory=True)
            row = scan(entry, where, Path(work))
            if where is not cache:
                shutil.rmtree(where, ignore_errors=True)
            judge(row, verdicts)
            rows.append(row)
            state = row.failed or f"{row.errors} errors, {row.conditional_errors} conditional, {row.warnings} warnings"
            print(f"  {row.consumer} x {row.provider}: {state} ({row.seconds:.1f} s)", file=sys.stderr)
    print(table(rows))
    print(by_cause(rows))
    print(gone(rows, verdicts))
    if args.show_errors:
        for r in rows:
            for f in r.findings:
                cond = " (conditional)" if f["conditional"] else ""
                cause = f" cause {f['cause']}" if f["cause"] else ""
                print(f"{r.name}  {f['path']}:{f['line']}  {f['rule']}{cond}  [{f['verdict']}{cause}]  {f['message']}")
    if args.compare:
        print()
        print(compare(args.compare, rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"corpus": str(args.corpus.name), "rows": [asdict(r) for r in rows]}
        args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 1 if any(r.failed for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
