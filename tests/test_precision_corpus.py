"""The precision corpus (bench/precision_corpus.toml) and its adjudication stay consistent."""

from __future__ import annotations

from pathlib import Path

from apiaudit.infra.tomlcompat import tomllib

BENCH = Path(__file__).resolve().parents[1] / "bench"
# Issue 27's causes 1-10 and issue 37's causes 1-12 ("37.1" .. "37.12").
ISSUE_CAUSES = {str(n) for n in range(1, 11)} | {f"37.{n}" for n in range(1, 13)}
# The vLLM plugin kinds the corpus must cover with at least three consumers each (issue 37).
# No published package is a LoRA resolver: the corpus file says what was searched.
VLLM_PLUGIN_KINDS = ("platform", "quantization", "kv-connector", "kv-offload", "model-registration",
                     "logits-processor", "runtime-patcher", "speculative-decoding")  # fmt: skip


def load(name: str) -> dict:
    return tomllib.loads((BENCH / name).read_text(encoding="utf-8"))


def test_every_consumer_names_a_release_pair_and_why() -> None:
    entries = load("precision_corpus.toml")["consumer"]
    releases = [e["consumer"] for e in entries]
    assert len(releases) == len(set(releases)), "one row per consumer release"
    assert len(entries) >= 25 and sum(not e.get("truth") for e in entries) >= 16
    for e in entries:
        assert "==" in e["consumer"] and "==" in e["provider"], e
        assert e["reason"].strip(), e


def test_the_corpus_covers_every_plugin_kind_and_other_ecosystems() -> None:
    entries = load("precision_corpus.toml")["consumer"]
    assert len(entries) >= 60
    assert all(isinstance(e.get("kind"), str) and e["kind"].strip() for e in entries), "every entry has a kind"
    vllm_kinds = [e["kind"] for e in entries if e["family"] == "vllm"]
    for kind in VLLM_PLUGIN_KINDS:
        assert vllm_kinds.count(kind) >= 3, kind
    other_plugins = [e for e in entries if e["family"] != "vllm" and e["kind"] != "library"]
    assert len(other_plugins) >= 10 + 8, "ten more plugins of other ecosystems beside issue 27's eight"


def test_every_verdict_is_real_with_evidence_or_false_with_a_known_cause() -> None:
    data = load("precision_adjudication.toml")
    # an entry names a consumer, or one release of it (`name==version`) where the corpus holds several
    releases = [e["consumer"] for e in load("precision_corpus.toml")["consumer"]]
    corpus = set(releases) | {r.partition("==")[0] for r in releases}
    causes = [c["id"] for c in data["cause"]]
    assert len(causes) == len(set(causes))
    seen: set[tuple[str, str, int, str]] = set()
    for entry in data["error"]:
        assert entry["consumer"] in corpus, entry
        assert entry["verdict"] in ("real", "false"), entry
        assert entry["evidence"].strip() and entry["why"].strip(), entry
        if entry["verdict"] == "false":
            assert entry["cause"] in ISSUE_CAUSES | set(causes), entry
        for line in entry["lines"]:
            key = (entry["consumer"], entry["path"], line, entry["rule"])
            assert key not in seen, f"judged twice: {key}"
            seen.add(key)
    for cause in data["cause"]:
        assert cause["title"].strip() and cause["consumer"].strip() and cause["reported"].strip(), cause
