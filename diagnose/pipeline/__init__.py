"""The one-way flow: paths → read (ingest, parse) → date → derived inputs → bundle passes → validate → rules
→ rank → root cause → timeline → signatures → Report. The stages are listed once, in ``stages``.

    settings = Settings(lang="zh")
    report = analyze(["logs/"], settings)
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from diagnose.engine import Rule, builtin_rules_dir, load_rules
from diagnose.engine.filters import RuleFilters
from diagnose.engine.selection import RuleKey, select_rules
from diagnose.model import Report
from diagnose.parsers import registry
from diagnose.pipeline.reading import Parsed, Progress
from diagnose.pipeline.settings import Settings
from diagnose.pipeline.stages import diagnose, read, read_facts, read_paths
from diagnose.analysis.ending import END_ID, END_NAME
from diagnose.analysis.gate import UNRECOGNISED_ID, UNRECOGNISED_NAME
from diagnose.analysis.rootcause import ROOT_ID, ROOT_NAME
from diagnose.analysis.silence import CATEGORY as SILENCE_CATEGORY, SILENCE_ID, SILENCE_NAME

# Findings that come from a pass rather than a rule file, which --select/--ignore and suppressions may name.
SYNTHETIC_RULES = (RuleKey(ROOT_ID, ROOT_NAME, "communication"), RuleKey(SILENCE_ID, SILENCE_NAME, SILENCE_CATEGORY),
                   RuleKey(END_ID, END_NAME, "engine"), RuleKey(UNRECOGNISED_ID, UNRECOGNISED_NAME, "engine"))


def load_catalog(settings: Settings) -> tuple[list[Rule], list[str]]:
    """The built-in catalog (unless turned off) and the user's rule folders, narrowed to the rules that
    ``settings.selection`` selects; errors as text. Raises UnknownSelector for a selector naming no rule."""
    rules, errors = load_all_rules(settings)
    return select_rules(rules, settings.selection, SYNTHETIC_RULES), errors


def load_all_rules(settings: Settings) -> tuple[list[Rule], list[str]]:
    """Every rule of the built-in catalog (unless turned off) and of the user's folders, before selection."""
    dirs = ([builtin_rules_dir()] if settings.builtin_rules else []) + list(settings.rule_dirs)
    rules, errors = load_rules(dirs, trusted=builtin_rules_dir())
    return rules, [str(e) for e in errors]


def filters_for(rules: list[Rule]) -> RuleFilters:
    """The filters that keep memory bounded to what these rules can use (engine/filters.py), and the lines
    that say a process stopped (``SourceKind.stops``), which the silence pass reads."""
    prefiltered = [k.name for k in registry.KINDS if k.line_heads and k.hints]
    filters = RuleFilters.from_rules(rules, prefiltered, registry.periodic_signals())
    stops = [pl.col("text").str.contains(p) for p in registry.stops().values()]
    if stops and filters.keep is not None:
        filters = replace(filters, keep=pl.any_horizontal([filters.keep, *stops]))
    return filters


def read_signals(sources: list, names: tuple[str, ...]) -> pl.DataFrame:
    """The signals ``names`` of these files (``ts``, ``signal``, ``value``, ``file``, ``engine``: the per-layer
    EPLB metrics name their layer and rank there) in time order, read and dated as a batch run reads them, nothing
    filtered out: expert-load's EPLB lines and metrics. A file that cannot be read adds no line (the dumps beside
    it still count)."""
    empty = pl.DataFrame(schema={"ts": pl.Datetime("us"), "signal": pl.String, "value": pl.Float64, "file": pl.String,
                                 "engine": pl.String})
    if not sources:
        return empty
    try:
        parsed = read(sources, Settings(), RuleFilters())
    except Exception:  # noqa: BLE001 - see the docstring
        return empty
    found = parsed.signals.filter(pl.col("signal").cast(pl.String).is_in(list(names)))
    return found.select("ts", pl.col("signal").cast(pl.String), "value", pl.col("file").cast(pl.String),
                        pl.col("engine").cast(pl.String)).sort("ts", nulls_last=True)


def analyze(paths: list[str], settings: Settings, progress: Progress | None = None) -> Report:
    rules, rule_errors = load_catalog(settings)
    filters = filters_for(rules)
    parsed = read_paths(paths, settings, filters, progress)
    return diagnose(parsed, rules, rule_errors, settings, filters, progress)


__all__ = ["SYNTHETIC_RULES", "Parsed", "Progress", "RuleFilters", "Settings", "analyze", "diagnose", "filters_for",
           "load_all_rules", "load_catalog", "read", "read_facts", "read_paths", "read_signals"]
