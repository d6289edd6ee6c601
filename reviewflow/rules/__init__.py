"""Review rules: user layers (rules.json), embedded system rules, and the CI trust model."""

from reviewflow.ci import is_ci
from reviewflow.rules.loader import RuleSet, load_rules
from reviewflow.rules.models import ResolvedRule, RuleLayer, RuleOrigin
from reviewflow.rules.trust import choose_trusted_ref

__all__ = [
    "ResolvedRule",
    "RuleLayer",
    "RuleOrigin",
    "RuleSet",
    "choose_trusted_ref",
    "is_ci",
    "load_rules",
]
