"""Rule data meets findings: recipes explain and make fixable what the engine found;
patterns add drift that signatures cannot show.

Pattern matches are cached per consumer file (`PatternCache`): keyed by the sha256 of the
text matched and by the rulebook (its fingerprint and the patterns in force), so a warm scan
parses no consumer file for them. Entries are data only (`apiaudit.cachefmt`).
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from apiaudit import cachefmt
from apiaudit.atomic import is_disk_full
from apiaudit.consumer.model import ConsumerFile
from apiaudit.findings import Finding
from apiaudit.recipes import RuleBook
from apiaudit.recipes.patterns import Match, findings_of_matches, pattern_matches
from apiaudit.sources.base import CodeTree


def apply_recipes(
    book: RuleBook, findings: list[Finding], files: tuple[ConsumerFile, ...], tree: CodeTree, provider: CodeTree,
    consumer: str | None = None, cache_dir: Path | None = None,
) -> list[Finding]:
    """`cache_dir`: where pattern matches are cached per consumer file (None: matched afresh)."""
    out = [_explain(book, f) for f in findings]
    patterns = book.patterns
    if not patterns:
        return out
    cache = PatternCache(cache_dir, tree, book, provider.packages) if cache_dir is not None else None
    for file in files:
        if file.error is not None or not file.lines or not (file.imports or file.uses):
            continue  # patterns only matter where the provider is used
        source = "\n".join(file.lines) + "\n"
        # One match per file, whatever number of top-level packages the provider has.
        matches = cache.get(file.path, source) if cache is not None else None
        if matches is None:
            matches = pattern_matches(source, patterns, provider.packages)
            if cache is not None:
                cache.put(file.path, source, matches)
        out.extend(findings_of_matches(matches, source.splitlines(), file.path, patterns, consumer=consumer or tree.name))
    if cache is not None:
        cache.save()
    return out


class PatternCache:
    """Per consumer tree: file path -> (sha256 of its text, the matches of the patterns in force).

    The entry's key names the matcher's code, Python, the rulebook's fingerprint, the patterns
    themselves and the provider's packages; any other key, or a changed file, is matched afresh.
    """

    FORMAT = 2  # 1 refused every entry with a match (it checked for 5 fields, a match has 6)
    KIND = "pattern-matches"

    def __init__(self, cache_dir: Path, tree: CodeTree, book: RuleBook, provider_packages: Sequence[str]):
        here = Path(__file__).resolve().parents[1] / "recipes" / "patterns.py"
        digest = hashlib.sha256(f"{self.FORMAT}\0{cachefmt.environment_key()}\0{book.fingerprint}\0".encode())
        digest.update(repr((tuple(book.patterns), tuple(provider_packages))).encode())
        digest.update(here.read_bytes())
        digest.update(Path(__file__).read_bytes())
        self.key = digest.hexdigest()[:16]
        where = hashlib.sha256(str(Path(tree.root).resolve()).encode()).hexdigest()[:12]
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in tree.name)
        self.path = cache_dir / "patterns" / f"{safe}-{where}.json"
        self.entries: dict[str, tuple[str, tuple[Match, ...]]] = {}
        self.used: set[str] = set()
        self.dirty = False
        try:
            data = cachefmt.read(self.path, self.KIND)
            if isinstance(data, dict) and data.get("key") == self.key and isinstance(data.get("entries"), dict):
                self.entries = {k: v for k, v in data["entries"].items() if _valid(k, v, len(book.patterns))}
        except FileNotFoundError:
            pass
        except (OSError, cachefmt.CacheFormatError) as exc:
            print(f"apiaudit: the pattern cache {self.path.name} failed its check ({exc}); rebuilding it", file=sys.stderr)
            self.path.unlink(missing_ok=True)

    @staticmethod
    def _sha(source: str) -> str:
        return hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).hexdigest()

    def get(self, path: str, source: str) -> tuple[Match, ...] | None:
        entry = self.entries.get(path)
        self.used.add(path)
        if entry is not None and entry[0] == self._sha(source):
            return entry[1]
        return None

    def put(self, path: str, source: str, matches: tuple[Match, ...]) -> None:
        self.entries[path] = (self._sha(source), tuple(matches))
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return  # a warm scan rewrites nothing
        kept = {k: v for k, v in self.entries.items() if k in self.used}  # files gone from the tree are dropped
        try:
            cachefmt.write(self.path, self.KIND, {"key": self.key, "entries": kept})
        except OSError as exc:
            if is_disk_full(exc):
                print(f"apiaudit: warning: no space left on device writing {self.path}; the pattern cache was not saved", file=sys.stderr)
        except cachefmt.CacheFormatError:
            pass


def _valid(path: object, entry: object, count: int) -> bool:
    """The shape `PatternCache` stores; anything else in a (hand-edited) file is matched afresh."""
    if not isinstance(path, str) or not isinstance(entry, tuple) or len(entry) != 2:
        return False
    sha, matches = entry
    return (
        isinstance(sha, str)
        and isinstance(matches, tuple)
        and all(
            isinstance(m, tuple) and len(m) == 6 and all(type(x) is int for x in m[:5]) and 0 <= m[0] < count and m[1] >= 1
            and isinstance(m[5], tuple) and all(isinstance(f, tuple) and len(f) == 2 and all(isinstance(x, str) for x in f) for f in m[5])
            for m in matches
        )
    )


def _explain(book: RuleBook, finding: Finding) -> Finding:
    for recipe in book.recipes:
        if recipe.explains(finding):
            advice, details = recipe.change.advice()
            return replace(
                finding,
                advice=f"{advice} ({recipe.rationale})",
                details=finding.details + (("recipe", recipe.id),) + details,
            )
    return finding


__all__ = ["PatternCache", "apply_recipes"]
