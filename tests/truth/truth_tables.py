"""The hand-verified truth tables under tests/truth/<consumer>/truth.toml, and scoring a scan against them.

One layout for every table (README.md): `[scope]`, one `[[pair]]` per consumer x provider
release with its `[[pair.breaks]]`, `[[must_not_flag]]` lines, and `[[not_static]]` notes that
are not scored. Shared by the network test (test_truth_tables.py) and the score script
(score.py). The tables are data written from the sources of both sides (see each
EVIDENCE.md); nothing here may be tuned to what the engine reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import tomllib

from apiaudit.findings import Finding, Severity

TRUTH_DIR = Path(__file__).parent
KNOWN_GAPS = TRUTH_DIR / "known_gaps.toml"


class NotFlagKind(Enum):
    """Why a line must stay quiet; decides whether a *conditional* error there is tolerated."""

    DEAD = "dead"  # branch not taken on this release, decidable from the sources: no error at all
    RUNTIME = "runtime"  # behind a guard the sources cannot decide: a conditional finding is fair
    FINE = "fine"  # the use works on this release: no unconditional error


@dataclass(frozen=True)
class ExpectedBreak:
    path: str
    line: int
    rule: str
    callee: str
    name: str
    evidence: str
    conditional: bool = False  # the break sits behind a guard the sources cannot decide
    also: tuple[str, ...] = ()  # other rule ids naming the same mismatch at the same site
    provider_evidence: str = ""

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line} {self.rule}"

    @property
    def rules(self) -> frozenset[str]:
        return frozenset((self.rule, *self.also))


@dataclass(frozen=True)
class MustNotFlag:
    path: str
    line: int
    kind: NotFlagKind
    why: str


@dataclass(frozen=True)
class Pair:
    consumer_name: str  # the table it comes from ("trl")
    consumer: str  # "trl==0.27.2"
    provider: str  # "vllm==0.15.0"
    scope: tuple[str, ...]
    breaks: tuple[ExpectedBreak, ...]
    must_not_flag: tuple[MustNotFlag, ...]

    @property
    def id(self) -> str:
        return f"{self.consumer}@{self.provider}"


def load_pairs(root: Path = TRUTH_DIR) -> list[Pair]:
    """Every pair of every truth table under `root`, in file order."""
    pairs: list[Pair] = []
    for table_path in sorted(root.glob("*/truth.toml")):
        table = tomllib.loads(table_path.read_text())
        if "pair" not in table:
            raise ValueError(f"{table_path}: no [[pair]] (the layout is README.md's)")
        pairs.extend(_pairs_of(table, table_path))
    return pairs


def _pairs_of(table: dict, table_path: Path) -> list[Pair]:
    scopes: dict[str, list[str]] = table["scope"]
    providers_of: dict[str, list[str]] = {}
    for raw in table["pair"]:
        providers_of.setdefault(raw["consumer"], []).append(raw["provider"])
    pairs = []
    for raw in table["pair"]:
        consumer, provider = raw["consumer"], raw["provider"]
        if consumer not in scopes:
            raise ValueError(f"{table_path}: no [scope] entry for {consumer}")
        scope = tuple(scopes[consumer])
        breaks = tuple(
            ExpectedBreak(
                path=b["path"],
                line=b["line"],
                rule=b["rule"],
                callee=b.get("callee", ""),
                name=b["name"],
                evidence=b["evidence"],
                conditional=b.get("conditional", False),
                also=tuple(b.get("also", ())),
                provider_evidence=b.get("provider_evidence", ""),
            )
            for b in raw.get("breaks", [])
        )
        quiet = tuple(
            MustNotFlag(path=m["path"], line=m["line"], kind=NotFlagKind(m["kind"]), why=m["why"])
            for m in table.get("must_not_flag", [])
            if m["consumer"] == consumer and _names_provider(m["providers"], provider, providers_of[consumer])
        )
        for entry in (*breaks, *quiet):
            if entry.path not in scope:
                raise ValueError(f"{table_path}: {consumer} {entry.path} is outside its scope")
        pairs.append(Pair(table["consumer"], consumer, provider, scope, breaks, quiet))
    for entry in (*table.get("must_not_flag", []), *table.get("not_static", [])):
        if entry["consumer"] not in providers_of:
            raise ValueError(f"{table_path}: {entry['consumer']} has no pair")
        _names_provider(entry["providers"], "", providers_of[entry["consumer"]])
        if entry["path"] not in scopes[entry["consumer"]]:
            raise ValueError(f"{table_path}: {entry['consumer']} {entry['path']} is outside its scope")
    return pairs


def _names_provider(providers: str | list[str], provider: str, all_providers: list[str]) -> bool:
    if providers == "all":
        return True
    unknown = set(providers) - set(all_providers)
    if unknown:
        raise ValueError(f"must_not_flag names providers with no pair: {sorted(unknown)}")
    return provider in providers


@dataclass(frozen=True)
class Score:
    """How one scan compares with one pair's table (findings outside the scope are ignored)."""

    pair: Pair
    found: tuple[ExpectedBreak, ...]
    missed: tuple[ExpectedBreak, ...]
    false_errors: tuple[str, ...]  # "path:line rule" of unconditional errors the table does not expect
    violations: tuple[str, ...]  # "path:line rule" of errors on must_not_flag lines (as their kind forbids)
    # "path:line rule" of conditional errors in scope the table does not expect: counted apart
    # (not false errors: the engine says they may never run), reported so they cannot hide
    conditional_errors: tuple[str, ...] = ()

    @property
    def recall(self) -> float:
        expected = len(self.pair.breaks)
        return 1.0 if expected == 0 else len(self.found) / expected

    @property
    def expected_clean(self) -> bool:
        return not self.pair.breaks

    @property
    def found_clean(self) -> bool:
        """No unconditional error in scope: what the engine would call a clean pair."""
        return not self.false_errors and not any(not b.conditional for b in self.found)

    @property
    def gaps(self) -> frozenset[str]:
        """Everything the engine gets wrong on this pair, as the lines known_gaps.toml lists."""
        return frozenset(
            [f"missed {b.key}" for b in self.missed]
            + [f"false {key}" for key in self.false_errors]
            + [f"violation {key}" for key in self.violations]
        )


def score(pair: Pair, findings: Iterable[Finding]) -> Score:
    errors = [f for f in findings if f.severity is Severity.ERROR and f.path in pair.scope]

    def matches(finding: Finding, expected: ExpectedBreak) -> bool:
        same_place = (finding.path, finding.line) == (expected.path, expected.line) and finding.rule in expected.rules
        # An unconditional break reported as "may never run" is not a hit: --fail-on would skip it.
        return same_place and (expected.conditional or not finding.conditional)

    found = tuple(b for b in pair.breaks if any(matches(f, b) for f in errors))
    missed = tuple(b for b in pair.breaks if b not in found)
    expected_places = {(b.path, b.line, rule) for b in pair.breaks for rule in b.rules}
    false_errors = sorted(
        {
            _key(f)
            for f in errors
            if not f.conditional and (f.path, f.line, f.rule) not in expected_places
        }
    )
    violations = sorted(
        {
            _key(f)
            for f in errors
            for quiet in pair.must_not_flag
            if (f.path, f.line) == (quiet.path, quiet.line)
            and (not f.conditional or quiet.kind is NotFlagKind.DEAD)
        }
    )
    conditional = sorted(
        {_key(f) for f in errors if f.conditional and (f.path, f.line, f.rule) not in expected_places}
    )
    return Score(pair, found, missed, tuple(false_errors), tuple(violations), tuple(conditional))


def _key(finding: Finding) -> str:
    return f"{finding.path}:{finding.line} {finding.rule}"


@dataclass(frozen=True)
class KnownGap:
    pair_id: str
    reason: str
    gaps: frozenset[str]


def load_known_gaps(path: Path = KNOWN_GAPS) -> dict[str, KnownGap]:
    if not path.exists():
        return {}
    known: dict[str, KnownGap] = {}
    for raw in tomllib.loads(path.read_text()).get("gap", []):
        pair_id = f"{raw['consumer']}@{raw['provider']}"
        gaps = frozenset(
            [f"missed {g}" for g in raw.get("missed", [])]
            + [f"false {g}" for g in raw.get("false_errors", [])]
            + [f"violation {g}" for g in raw.get("violations", [])]
        )
        known[pair_id] = KnownGap(pair_id, raw["reason"], gaps)
    return known


def summarize(scores: Sequence[Score]) -> list[dict[str, object]]:
    """One row per consumer table: pairs, recall, false errors, clean pairs expected vs found."""
    rows = []
    for name in dict.fromkeys(s.pair.consumer_name for s in scores):
        mine = [s for s in scores if s.pair.consumer_name == name]
        expected = sum(len(s.pair.breaks) for s in mine)
        found = sum(len(s.found) for s in mine)
        rows.append(
            {
                "consumer": name,
                "pairs": len(mine),
                "breaks_expected": expected,
                "breaks_found": found,
                "recall": 1.0 if expected == 0 else found / expected,
                "false_errors": sum(len(s.false_errors) for s in mine),
                "conditional_errors": sum(len(s.conditional_errors) for s in mine),
                "violations": sum(len(s.violations) for s in mine),
                "clean_expected": sum(s.expected_clean for s in mine),
                "clean_found": sum(s.found_clean for s in mine),
                "clean_both": sum(s.expected_clean and s.found_clean for s in mine),
            }
        )
    return rows
