"""The rule engine: load rule files, compile their match kinds to polars expressions, run them."""

from diagnose.engine.rulefile import Rule, RuleError, builtin_rules_dir, load_rules
from diagnose.engine.run import run_rules

__all__ = ["Rule", "RuleError", "builtin_rules_dir", "load_rules", "run_rules"]
