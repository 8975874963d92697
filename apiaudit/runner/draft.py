"""Loading a trained draft back as a speculators EAGLE-3 model.

speculators' `Eagle3DraftModel.from_pretrained` (0.3-0.4) forwards a `verifier`
argument to a constructor that does not take one, so a checkpoint is loaded the way
speculators' own checkpointer resumes training: build the model from the saved config
and vocabulary mapping, then load the saved weights (the verifier's embedding, norm and
LM head are rebuilt from the verifier named in the config, not stored).
"""

from __future__ import annotations

from pathlib import Path

from apiaudit.errors import InputError


def load_draft(checkpoint: Path | str, *, device: str = "cpu"):
    """The EAGLE-3 draft saved in `checkpoint` (a folder with config.json and model.safetensors)."""
    import torch
    from safetensors.torch import load_file
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig

    from apiaudit.runner.train_worker import use_draft_attention

    folder = Path(checkpoint)
    weights = folder / "model.safetensors"
    if not (folder / "config.json").is_file() or not weights.is_file():
        raise InputError(f"{folder} is not a draft checkpoint (config.json and model.safetensors expected)")
    config = Eagle3SpeculatorConfig.from_pretrained(str(folder))
    use_draft_attention(config.transformer_layer_config, device=device)
    state = load_file(str(weights))
    t2d, d2t = state.get("t2d"), state.get("d2t")
    model = Eagle3DraftModel(
        config=config,
        t2d=t2d.to(torch.bool) if t2d is not None else None,
        d2t=d2t,
    )
    result = model.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        raise InputError(f"{weights}: weights the draft does not have: {', '.join(result.unexpected_keys)}")
    not_restored = set(result.missing_keys) - set(Eagle3DraftModel._keys_to_ignore_on_save)
    if not_restored:
        raise InputError(f"{weights}: missing draft weights: {', '.join(sorted(not_restored))}")
    return model.to(device).eval()
