"""The tests' tiny model: the builder the examples document (apiaudit/runner/tiny_model.py)."""

from apiaudit.runner.tiny_model import (
    CHAT_TEMPLATE,
    SPECIALS,
    build_model_dir,
    build_tokenizer,
    words_of,
)

__all__ = ["CHAT_TEMPLATE", "SPECIALS", "build_model_dir", "build_tokenizer", "words_of"]
