"""Linear time on large generated consumer files: the consumer stage's cost per MB must stay flat.

    python bench/large_file.py [--sizes 0.7,1.4,2.7] [--provider PATH]

Builds, in a private temp folder, a provider package and job scripts of the given sizes (MB)
made of many small functions that call the provider (keywords, attributes, guards, dict splats),
scans each, and prints the time per MB and the spread (issue target: flat within 25%).
Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apiaudit.audit import scan  # noqa: E402
from apiaudit.policy import Settings  # noqa: E402

PROVIDER = '''\
__version__ = "2.0.0"


class Engine:
    def __init__(self, model, *, seed=0, **kwargs):
        self.model = model

    def generate(self, prompts, *, progress=False):
        return prompts


def make(a, b=1, *, c=None):
    return a
'''

FUNCTION = '''
def job_{n}(path, flag):
    engine = genprov.Engine(path, seed={n})
    options = {{"progress": True}}
    if flag:
        options["progress"] = False
    out = engine.generate([path], **options)
    total = genprov.make({n}, b={n} + 1, c=out) + {n} * 2 - {n} // 3
    if hasattr(engine, "shutdown"):
        engine.shutdown()
    if Version(genprov.__version__) >= Version("1.{m}"):
        return genprov.make(total)
    return genprov.make(total, c=[{n}, {n} + 1, {n} + 2])
'''


def build(folder: Path, megabytes: float) -> Path:
    (folder / "genprov").mkdir(parents=True, exist_ok=True)
    (folder / "genprov" / "__init__.py").write_text(PROVIDER)
    parts = ["import genprov\nfrom packaging.version import Version\n"]
    size, n = len(parts[0]), 0
    while size < megabytes * 1_000_000:
        text = FUNCTION.format(n=n, m=n % 10)
        parts.append(text)
        size += len(text)
        n += 1
    job = folder / f"job_{megabytes}.py"
    job.write_text("".join(parts))
    return job


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="0.7,1.4,2.7")
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="apiaudit-bench-large-") as tmp:
        root = Path(tmp)
        for mb in sizes:
            job = build(root / f"s{mb}", mb)
            started = time.process_time()
            report = scan([str(job)], str(root / f"s{mb}" / "genprov"), cache_dir=root / "cache", use_index_cache=False, settings=Settings())
            seconds = time.process_time() - started
            rows.append((mb, job.stat().st_size / 1e6, seconds, report.calls_checked, len(report.findings)))
    per_mb = [s / size for _, size, s, _, _ in rows]
    print(f"{'file MB':>8} {'CPU s':>7} {'s per MB':>9} {'uses checked':>13} {'findings':>9}")
    for (_, size, seconds, uses, findings), each in zip(rows, per_mb):
        print(f"{size:8.2f} {seconds:7.2f} {each:9.2f} {uses:13d} {findings:9d}")
    spread = (max(per_mb) - min(per_mb)) / min(per_mb)
    print(f"time per MB spread: {spread:.0%} (target: flat within 25%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
