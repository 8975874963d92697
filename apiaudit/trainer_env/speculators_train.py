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
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from speculators.train.config import TrainConfig

    cfg = TrainConfig.resolve(argv)
    try:
        from speculators.train.cli import main as train  # speculators 0.8+: `speculators train`
    except ImportError:
        # 0.7: run by path (or by torchrun), this script's folder is first on sys.path.
        from speculators_train_0_7 import train_0_7 as train  # type: ignore[import-not-found]
    train(cfg)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
