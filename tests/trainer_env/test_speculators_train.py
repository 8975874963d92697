"""The trainer entry's own logic (it runs in the trainer's environment; no speculators here)."""

from __future__ import annotations

from apiaudit.trainer_env.speculators_train import IF_KNOWN, keep_known


def test_flags_after_the_marker_pass_only_where_the_parser_has_them(capsys):
    argv = ["--epochs", "1", "--target-layer-ids", "2", "4", IF_KNOWN, "--noise-std", "0.05", "--lr", "-0.5"]
    assert keep_known(argv, {"--epochs", "--target-layer-ids", "--lr"}) == [
        "--epochs", "1", "--target-layer-ids", "2", "4", "--lr", "-0.5"]
    assert capsys.readouterr().out == "speculators' trainer here has no --noise-std: not passed\n"
    assert keep_known(argv, {"--noise-std", "--lr"})[-4:] == ["--noise-std", "0.05", "--lr", "-0.5"]


def test_an_argv_without_the_marker_is_passed_as_it_is():
    assert keep_known(["--epochs", "1"], set()) == ["--epochs", "1"]
