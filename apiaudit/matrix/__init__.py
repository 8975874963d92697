"""The compatibility matrix over provider releases, and `explain`, which dates each finding.

`run_matrix` scans a consumer against every release in a range; `explain` bisects
releases to find where each finding landed and what changed there.
"""

from __future__ import annotations

from apiaudit.matrix.explain import Change, ExplainResult, Explanation, explain
from apiaudit.matrix.ranges import (
    DeclaredRequirement,
    ProviderRange,
    as_requirement,
    declared_requirements,
)
from apiaudit.matrix.sweep import MatrixResult, MatrixRow, run_matrix

__all__ = [
    "Change",
    "DeclaredRequirement",
    "ExplainResult",
    "Explanation",
    "MatrixResult",
    "MatrixRow",
    "ProviderRange",
    "as_requirement",
    "declared_requirements",
    "explain",
    "run_matrix",
]
