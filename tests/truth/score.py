"""Score the current engine against the truth tables: `python tests/truth/score.py [-v]`.

Scans every pair of tests/truth/<consumer>/truth.toml (real wheels, through the test release
cache: $APIAUDIT_TEST_CACHE or ~/.cache/apiaudit-test) and prints, per consumer: pairs,
recall, false errors, must_not_flag violations and clean pairs (expected clean vs found
clean). `-v` adds one line per pair and every gap. Exit status 0 whatever the score: this is
a measurement, the network test is the gate.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from truth_tables import load_pairs, score, summarize  # noqa: E402

from apiaudit import scan  # noqa: E402


def _release_cache() -> Path:
    root = Path(os.environ.get("APIAUDIT_TEST_CACHE") or Path.home() / ".cache" / "apiaudit-test")
    root.mkdir(parents=True, exist_ok=True)
    return root


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    cache_dir = _release_cache()
    scores = []
    for pair in load_pairs():
        result = score(pair, scan([pair.consumer], pair.provider, cache_dir=cache_dir).findings)
        scores.append(result)
        if verbose:
            clean = "clean" if result.found_clean else "not clean"
            print(
                f"{pair.id:32} recall {len(result.found)}/{len(pair.breaks)}"
                f"  false {len(result.false_errors)} (+{len(result.conditional_errors)} conditional)"
                f"  violations {len(result.violations)}"
                f"  expected {'clean' if result.expected_clean else 'breaks'}, found {clean}"
            )
            for gap in sorted(result.gaps):
                print(f"    {gap}")
    header = ("consumer", "pairs", "recall", "false errors", "conditional", "violations", "clean expected", "clean found", "clean both")
    rows = [
        (
            str(row["consumer"]),
            str(row["pairs"]),
            f"{row['breaks_found']}/{row['breaks_expected']} ({row['recall']:.0%})",
            str(row["false_errors"]),
            str(row["conditional_errors"]),
            str(row["violations"]),
            str(row["clean_expected"]),
            str(row["clean_found"]),
            str(row["clean_both"]),
        )
        for row in summarize(scores)
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    for line in (header, *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
