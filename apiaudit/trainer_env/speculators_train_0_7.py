"""speculators 0.7's trainer, which that release ships outside its wheel (scripts/train.py).

Imported by speculators_train.py only when the trainer's speculators has no
`speculators.train.cli` (0.7.x): for an EAGLE-3 draft built from the verifier's shape (no
`--from-pretrained`, no `--draft-config`) it makes the calls that script's `main` makes,
from the wheel's API. Audited against speculators 0.7 by the runner's preflight.
"""

from __future__ import annotations

import argparse


def draft_layer_config(verifier_path: str, args: argparse.Namespace):
    """The draft decoder's LlamaConfig from the verifier's shape (speculators 0.7's
    scripts/train.py `create_transformer_layer_config`, for a Llama-shaped draft)."""
    from copy import deepcopy

    import transformers
    from packaging import version
    from speculators.models.utils import resolve_draft_intermediate_size
    from transformers import AutoConfig, LlamaConfig

    verifier = AutoConfig.from_pretrained(verifier_path)
    verifier = getattr(verifier, "text_config", verifier)
    full = list(args.full_attention_indices or [])
    layer_types = ["full_attention" if i in full else "sliding_attention" for i in range(args.num_layers)]
    config = LlamaConfig(
        vocab_size=verifier.vocab_size,
        hidden_size=verifier.hidden_size,
        intermediate_size=resolve_draft_intermediate_size(verifier),
        num_hidden_layers=args.num_layers,
        num_attention_heads=verifier.num_attention_heads,
        num_key_value_heads=verifier.num_key_value_heads,
        hidden_act=args.draft_hidden_act or getattr(verifier, "hidden_act", "silu"),
        max_position_embeddings=verifier.max_position_embeddings,
        initializer_range=verifier.initializer_range,
        rms_norm_eps=verifier.rms_norm_eps,
        head_dim=getattr(verifier, "head_dim", None),
        tie_word_embeddings=False,
        sliding_window=args.sliding_window,
        use_sliding_window="sliding_attention" in layer_types,
        layer_types=layer_types,
    )
    if version.parse(transformers.__version__) >= version.parse("5.0.0"):
        if isinstance(getattr(verifier, "rope_parameters", None), dict):
            config.rope_parameters = deepcopy(verifier.rope_parameters)
    else:
        if isinstance(getattr(verifier, "rope_scaling", None), dict):
            config.rope_scaling = deepcopy(verifier.rope_scaling)
        config.rope_theta = getattr(verifier, "rope_theta", 10000.0)
    return config


def train_0_7(cfg) -> None:
    """speculators 0.7's scripts/train.py `main`, for an EAGLE-3 draft from the verifier's shape."""
    import gc
    import random

    import numpy as np
    import torch
    from speculators._vendor.hs_connectors import HiddenStatesBackend
    from speculators.model import SpeculatorModel
    from speculators.models.eagle3.data import shift_batch
    from speculators.train.dataloader import create_train_val_loaders
    from speculators.train.distributed import get_rank, maybe_destroy_distributed, maybe_setup_distributed
    from speculators.train.logger import setup_metric_logger, setup_root_logger
    from speculators.train.trainer import Trainer, TrainerConfig
    from speculators.train.utils import resolve_mask_token_id

    args = argparse.Namespace(**cfg.flatten())
    if args.speculator_type != "eagle3" or args.from_pretrained or args.draft_config:
        raise SystemExit("apiaudit's speculators 0.7 trainer builds EAGLE-3 drafts from the verifier's shape only")
    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002 - as speculators seeds
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    setup_root_logger()
    setup_metric_logger(loggers=args.logger, run_name=args.run_name, output_dir=args.log_dir)
    maybe_setup_distributed()
    if get_rank() == 0:
        cfg.save(args.save_path)
    hidden_states_dtype = getattr(torch, args.hidden_states_dtype)

    d2t = torch.from_numpy(np.load(args.d2t_path))
    t2d = torch.from_numpy(np.load(args.t2d_path))
    model_class = SpeculatorModel.registry[args.speculator_type]
    layer_config = draft_layer_config(args.verifier_name_or_path, args)
    args.mask_token_id = resolve_mask_token_id(args.verifier_name_or_path, layer_config.vocab_size, args.mask_token_id,
                                               trust_remote_code=args.trust_remote_code)
    args.draft_vocab_size = d2t.shape[0]
    draft = model_class.from_training_args(verifier_config=layer_config, t2d=t2d, d2t=d2t, **vars(args))

    transfer = HiddenStatesBackend.registry[args.hidden_states_backend].from_train_args(args, args.data_path)
    train_loader, val_loader = create_train_val_loaders(
        data_path=args.data_path, total_seq_len=args.total_seq_len, hidden_states_dtype=hidden_states_dtype,
        noise_std=args.noise_std, legacy_data=args.legacy_data, transfer=transfer, vllm_endpoint=args.vllm_endpoint,
        on_missing=args.on_missing, on_generate=args.on_generate, verifier_name_or_path=args.verifier_name_or_path,
        request_timeout=args.request_timeout, max_retries=args.max_retries,
        hidden_size=draft.config.transformer_layer_config.hidden_size,
        num_target_layers=len(draft.target_layer_ids), num_workers=args.num_workers,
        prefetch_factor=args.prefetch_factor, preprocess=shift_batch, train_data_ratio=args.train_data_ratio,
    )
    train_kwargs, val_kwargs = model_class.get_trainer_kwargs(**vars(args))
    trainer_config = TrainerConfig(
        num_epochs=args.epochs, save_path=args.save_path, lr=args.lr,
        resume_from_checkpoint=not args.no_resume_from_checkpoint,
        train_call_kwargs=train_kwargs, val_call_kwargs=val_kwargs,
        optimizer=args.optimizer, weight_decay=args.weight_decay, muon_lr=args.muon_lr,
        muon_momentum=args.muon_momentum, muon_weight_decay=args.muon_weight_decay, muon_ns_steps=args.muon_ns_steps,
        muon_adjust_lr_fn=args.muon_adjust_lr_fn, scheduler_type=args.scheduler_type,
        scheduler_warmup_steps=args.scheduler_warmup_steps, scheduler_warmup_ratio=args.scheduler_warmup_ratio,
        scheduler_total_steps=args.scheduler_total_steps, scheduler_num_cosine_cycles=args.scheduler_num_cosine_cycles,
        checkpoint_freq=args.checkpoint_freq, save_best=args.save_best, hidden_states_dtype=hidden_states_dtype,
        log_freq=args.log_freq, fsdp_shard=args.fsdp_shard, max_steps=args.max_steps,
    )
    Trainer(draft, trainer_config, train_loader, val_loader).run_training()
    gc.collect()
    maybe_destroy_distributed()
