"""speculators' own trainer, run in the trainer's environment (the server line's train stage).

Run by path, not as part of apiaudit: ``PYTHON speculators_train.py FLAGS`` (or under
torchrun), where PYTHON is `[train] python`, an environment with speculators 0.7+ that
need not have apiaudit. It imports nothing of apiaudit. FLAGS are `speculators train`'s own
(`TrainConfig.resolve`):

* speculators 0.8+ ship the trainer in the wheel: `speculators.train.cli.main`, what
  `speculators train` and `python -m speculators.train` run. That is called as it is.
* speculators 0.7 ships it outside the wheel, as the repository's `scripts/train.py`;
  speculators_train_0_7.py beside this file makes the calls that script makes, from the
  wheel's API (`TrainConfig`, `SpeculatorModel.registry`, `from_training_args`,
  `create_train_val_loaders`, `Trainer`), for an EAGLE-3 draft from the verifier's shape.

Flags after ``--if-known`` are passed on only where this trainer's parser has them (one line
names each one dropped): the runner's config holds keys a later release removed.
"""

from __future__ import annotations

import sys


IF_KNOWN = "--if-known"


def flags_the_trainer_has(argv: list[str]) -> list[str]:
    """argv for speculators' own parser (`speculators train`'s, built from the config schema)."""
    if IF_KNOWN not in argv:
        return argv
    from speculators.train.config.resolution import build_parser

    return keep_known(argv, {option for action in build_parser()._actions for option in action.option_strings})


def keep_known(argv: list[str], known: set[str]) -> list[str]:
    """argv up to ``--if-known``, then those of the flags after it (each with its values) in `known`."""
    if IF_KNOWN not in argv:
        return argv
    at = argv.index(IF_KNOWN)
    kept, optional = argv[:at], argv[at + 1 :]
    i = 0
    while i < len(optional):
        end = i + 1
        while end < len(optional) and not optional[end].startswith("--"):
            end += 1
        if optional[i] in known:
            kept += optional[i:end]
        else:
            print(f"speculators' trainer here has no {optional[i]}: not passed", flush=True)
        i = end
    return kept


def main(argv: list[str]) -> int:
    from speculators.train.config import TrainConfig

    cfg = TrainConfig.resolve(flags_the_trainer_has(argv))
    try:
        from speculators.train.cli import main as train  # speculators 0.8+: `speculators train`
    except ImportError:
        # 0.7: run by path (or by torchrun), this script's folder is first on sys.path.
        from speculators_train_0_7 import train_0_7 as train  # type: ignore[import-not-found]
    train(cfg)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
