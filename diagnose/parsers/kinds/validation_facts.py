"""Validation facts: the tiny line format in which ``diagnose.compare`` states what it found by comparing
this run's benchmark and accuracy results with a baseline (and the bundle's own server logs).

The comparison (``diagnose/validation/compare.py``) hands its facts to ``from_facts`` as values; they join the
bundle as a derived input (``<validation>``) before the rules run, so baseline-dependent rules are ordinary
threshold rules on the signals below, and their evidence lines quote the numbers. Rule fixtures write the same
facts as text, read by ``parse``; both give the same frames. One fact per line::

    # diagnose validation facts v1                      (comments and blank lines are ignored)
    compare metric=p99_tpot_ms run=bench-c64 baseline=52.1 this=67.73 change=+30.0% tolerance=10% verdict=regressed
    compare metric=accuracy dataset=aime2024 baseline=80 this=76 change=-4.00pt tolerance=3pt verdict=regressed
    not-comparable what=quantization baseline=W8A8 this=FP8
    mismatch what=tp bench=8 server=16

Values are single tokens or double-quoted strings. Signals emitted (``engine`` in brackets):

    regression_pct                 [metric]   worsening in percent, on `compare` lines with verdict=regressed
                                              and a relative change (`change=+30.0%`; failed requests are absolute)
    accuracy_drop_points           [dataset]  accuracy lost in points, on regressed accuracy lines
    comparison_not_comparable      [what]     1 per difference that makes the comparison not like for like
    bench_server_mismatch          [what]     1 per benchmark set-up value that differs from the server's
"""

from __future__ import annotations

import polars as pl

from diagnose.model import conform_records, conform_signals, empty_signals
from diagnose.parsers.lineframe import FileContext
from diagnose.parsers.kind import SourceKind

KIND = "validation-facts"

VERBS = ("compare", "not-comparable", "mismatch")
LINE = r"^(compare|not-comparable|mismatch)\s+\w+="
# The fields a fact may name (``name=value``); a fact names some of them.
FIELDS = ("metric", "run", "dataset", "what", "baseline", "this", "bench", "server", "change", "tolerance", "verdict")


def field(name: str) -> pl.Expr:
    """The value of ``name=`` on the line: a bare token or a double-quoted string."""
    raw = pl.col("text").str.extract(rf'(?:^|\s){name}=("[^"]*"|\S+)', 1)
    return raw.str.strip_chars('"')


def parse(lines: pl.DataFrame, ctx: FileContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Facts written as text (a rule's fixture): each line's verb and fields read back."""
    frame = lines.with_columns(verb=pl.col("text").str.extract(LINE, 1), file=pl.lit(ctx.path),
                               **{f"_{name}": field(name) for name in FIELDS})
    return _frames(frame, ctx.node)


def from_facts(path: str, facts: list[tuple[str, dict[str, str], str]], node: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The facts the comparison derives itself, as values: ``(verb, {field: value as written}, line)`` each,
    numbered 1.. in ``path``. The same frames as ``parse`` gives for those lines, so the rules' fixtures test
    what a run sees."""
    frame = pl.DataFrame(
        {"line": list(range(1, len(facts) + 1)), "text": [t for _, _, t in facts], "verb": [v for v, _, _ in facts],
         "file": [path] * len(facts), **{f"_{name}": [f.get(name) for _, f, _ in facts] for name in FIELDS}},
        schema={"line": pl.UInt32, "text": pl.String, "verb": pl.String, "file": pl.String,
                **{f"_{name}": pl.String for name in FIELDS}},
    )
    return _frames(frame, node)


def _num(name: str) -> pl.Expr:
    return pl.col(f"_{name}").str.extract(r"^([+-]?\d+(?:\.\d+)?)", 1).cast(pl.Float64, strict=False)


def _frames(frame: pl.DataFrame, node: str | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Records and signals of fact rows (``file``, ``line``, ``text``, ``verb`` and a column ``_<field>`` per
    field)."""
    f = lambda name: pl.col(f"_{name}")  # noqa: E731 - a field's column
    records = conform_records(
        frame.with_columns(
            source=pl.lit(KIND), node=pl.lit(node, pl.String),
            message=pl.col("text"), parsed=pl.col("verb").is_not_null() | pl.col("text").str.contains(r"^\s*(?:#|$)"),
            year_known=pl.lit(False), event=pl.col("line"),
            level=pl.when(pl.col("verb").is_null()).then(None)
            .when((f("verdict") == "regressed") | pl.col("verb").is_in(["mismatch", "not-comparable"]))
            .then(pl.lit("WARNING")).otherwise(pl.lit("INFO")),
        )
    )
    facts = frame.filter(pl.col("verb").is_not_null())
    if facts.height == 0:
        return records, empty_signals()
    regressed = f("verdict") == "regressed"
    is_acc = f("metric") == "accuracy"
    compare = facts.filter((pl.col("verb") == "compare") & regressed)
    parts = [
        compare.filter(~is_acc & f("change").str.ends_with("%")).select(
            "file", "line", signal=pl.lit("regression_pct"), engine=f("metric"), value=_num("change").abs(), text=f("run")),
        compare.filter(is_acc).select("file", "line", signal=pl.lit("accuracy_drop_points"), engine=f("dataset"),
                                      value=-_num("change"), text=pl.lit(None, pl.String)),
        facts.filter(pl.col("verb") == "not-comparable").select(
            "file", "line", signal=pl.lit("comparison_not_comparable"), engine=f("what"), value=pl.lit(1.0),
            text=pl.format("baseline {} vs this run {}", f("baseline"), f("this"))),
        facts.filter(pl.col("verb") == "mismatch").select(
            "file", "line", signal=pl.lit("bench_server_mismatch"), engine=f("what"), value=pl.lit(1.0),
            text=pl.format("benchmark {} vs server {}", f("bench"), f("server"))),
    ]
    signals = pl.concat(parts, how="vertical_relaxed").drop_nulls("value").with_columns(
        source=pl.lit(KIND), node=pl.lit(node, pl.String)
    ).sort("line")
    return records, conform_signals(signals)


SOURCE = SourceKind(
    name=KIND,
    parse=parse,
    summary="validation facts of a comparison with --baseline (derived by diagnose, not a file on disk)",
    signals={
        "regression_pct": "how much worse than the baseline a performance metric is, % (only beyond tolerance); "
        "engine = metric",
        "accuracy_drop_points": "accuracy lost against the baseline, points (only beyond tolerance); engine = dataset",
        "comparison_not_comparable": "1 per difference (quantization, concurrency, ...) that makes the baseline "
        "comparison not like for like",
        "bench_server_mismatch": "1 per benchmark set-up value (tp, model) that differs from the server log's",
    },
    sniff_rank=130,
)
