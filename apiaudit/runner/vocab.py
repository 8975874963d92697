"""Stage 3, vocab: token frequencies over the trainable tokens -> the draft vocabulary mapping.

Counting and mapping are speculators' own (`save_token_frequency_distribution`,
`build_vocab_mappings_from_distribution`); the mapping is saved as the `d2t.npy` /
`t2d.npy` pair its training script loads.
"""

from __future__ import annotations

from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import StageContext, StageResult

TOKEN_FREQ_FILE = "token_freq.pt"
D2T_FILE = "d2t.npy"
T2D_FILE = "t2d.npy"


def vocab_config(config: RunConfig) -> dict:
    return {"vocab": config.section("vocab"), "target_vocab_size": config.target.vocab_size}


def run_vocab(ctx: StageContext) -> StageResult:
    import numpy as np
    import torch
    from speculators.train.vocab_mapping import (
        build_vocab_mappings_from_distribution,
        save_token_frequency_distribution,
    )

    from apiaudit.runner.prepare import load_prepared

    config = ctx.config
    prepared = load_prepared(ctx.upstream("prepare"))
    ctx.reporter.stage_started("vocab", len(prepared), "samples")
    out = ctx.stage_dir
    out.mkdir(parents=True, exist_ok=True)
    freq_path = out / TOKEN_FREQ_FILE
    # speculators keeps an existing frequency file as is; this stage runs only when its inputs changed.
    freq_path.unlink(missing_ok=True)
    samples = [prepared.sample(i) for i in range(len(prepared))]
    save_token_frequency_distribution(dataset=samples, output_path=str(freq_path))
    ctx.reporter.advance(len(prepared))
    token_freq = torch.load(freq_path, weights_only=True)

    d2t, t2d = build_vocab_mappings_from_distribution(
        token_freq_dict=token_freq,
        draft_vocab_size=config.vocab.draft_vocab_size,
        target_vocab_size=config.target.vocab_size,
    )
    np.save(out / D2T_FILE, d2t.numpy())
    np.save(out / T2D_FILE, t2d.numpy())
    seen = len(token_freq)
    ctx.log.info("%d distinct trainable tokens; draft vocabulary %d of %d", seen, config.vocab.draft_vocab_size,
                 config.target.vocab_size)
    return StageResult(
        outputs=[freq_path, out / D2T_FILE, out / T2D_FILE],
        counts={"distinct_tokens": seen, "draft_vocab_size": config.vocab.draft_vocab_size},
        summary=f"draft vocabulary {config.vocab.draft_vocab_size} of {config.target.vocab_size} "
        f"({seen} distinct trainable tokens seen)",
    )
