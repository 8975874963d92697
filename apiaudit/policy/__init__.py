"""Policy: what a project says about its findings (config, suppressions, baseline, delta).

Applied to a finished `Report` by `apiaudit.audit.scan`, the one place scan, preflight, fix
and matrix all go through; the formats render the result.
"""

from __future__ import annotations

from apiaudit.policy.apply import ConsumerFiles, apply_policy, excluded
from apiaudit.policy.config import Settings, find_config, load_settings

__all__ = ["ConsumerFiles", "Settings", "apply_policy", "excluded", "find_config", "load_settings"]
