"""The numbers in vLLM / vllm-ascend server logs: the periodic metric lines (throughput, running/waiting
requests, KV cache usage, speculative decoding acceptance, per-position acceptance), the start-up values
(KV cache size, max_model_len, parallel sizes, versions, the served model), EPLB lines, and the signals
derived from them over the whole bundle (per-position first/last, KV capacity against max_num_seqs, DP
engine imbalance, drift over a run). ``parsers/kinds/vllm.py`` reads the lines and calls ``extract_signals``; its
bundle pass calls ``derived_signals``.

Per-line work is polars expressions: one lazy query per family of lines (the periodic throughput and
speculative-decoding lines are most of a long log), each value with its own pattern.
"""

from __future__ import annotations

import polars as pl

from diagnose.model.series import compact, periodic_rows
from diagnose.scan.fastregex import dfa_safe
from diagnose.model import conform_signals
from diagnose.parsers.families.oom import oom_signals

KIND = "vllm"  # the source kind these signals belong to (declared in parsers/kinds/vllm.py)

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?|nan)"
# The head of upstream vLLM's EPLB line, generation 1 (no step number) or 2 and 3 (`N for model M: `).
_EPLB_STEP = r"EPLB step: (?:[0-9]+ for model .*?: )?"

# (signal, regex with one group, scale) for every number on the periodic and start-up lines.
_SIGNAL_PATTERNS: list[tuple[str, str, float]] = [
    ("prompt_throughput", r"Avg prompt throughput: " + _NUM, 1.0),
    ("gen_throughput", r"Avg generation throughput: " + _NUM, 1.0),
    ("running_reqs", r"Running: " + _NUM + r" reqs", 1.0),
    ("waiting_reqs", r"(?:Waiting|Pending): " + _NUM + r" reqs", 1.0),
    ("swapped_reqs", r"Swapped: " + _NUM + r" reqs", 1.0),
    ("kv_cache_usage_pct", r"(?:GPU|NPU) KV cache usage: " + _NUM + r"%", 1.0),
    ("prefix_cache_hit_pct", r"Prefix cache hit rate: (?:GPU: )?" + _NUM + r"%", 1.0),
    ("spec_acceptance_pct", r"Draft acceptance rate: " + _NUM + r"%", 1.0),
    ("spec_mean_acceptance_len", r"Mean acceptance length: " + _NUM, 1.0),
    ("spec_accepted_tokens", r"(?:Accepted|Number of accepted tokens): " + _NUM, 1.0),
    ("spec_drafted_tokens", r"(?:Drafted|Number of draft tokens): " + _NUM, 1.0),
    ("kv_cache_tokens", r"KV cache size: " + _NUM + r" tokens", 1.0),
    ("kv_blocks", r"# (?:npu|gpu|NPU|GPU) blocks: " + _NUM, 1.0),
    ("max_model_len", r"Maximum concurrency for " + _NUM + r" tokens per request", 1.0),
    ("max_concurrency", r"Maximum concurrency for [0-9,]+ tokens per request: " + _NUM + r"x", 1.0),
    ("weights_gb", r"(?:Loading model weights|Model loading) took " + _NUM + r" ?Gi?B", 1.0),
    ("kv_padding_waste_pct", r"padding layers, may waste at most " + _NUM + r"% KV cache memory", 1.0),
    # sglang's decode batch line (pasted beside vLLM logs often enough): accept len / rate of the drafter
    ("spec_mean_acceptance_len", r"Decode batch\..*?accept len: " + _NUM, 1.0),
    ("spec_acceptance_pct", r"Decode batch\..*?accept rate: " + _NUM, 100.0),
    # vllm-ascend worker: what is left for the KV cache after weights and the profiling peak (negative: none)
    ("available_kv_cache_gib", r"Available KV cache memory: (-?[0-9]+(?:\.[0-9]+)?) GiB", 1.0),
    ("available_kv_cache_gib", r"Available memory: (-?[0-9]+), total memory: [0-9]+", 1.0 / 2**30),
    ("max_model_len", r"""['"]?max_model_len['"]?\s*[:=]\s*([0-9]+)""", 1.0),
    ("max_model_len", r"max_seq_len=([0-9]+)", 1.0),
    ("tensor_parallel_size", r"""['"]?tensor_parallel_size['"]?\s*[:=]\s*([0-9]+)""", 1.0),
    ("num_speculative_tokens", r"""num_spec(?:ulative)?_tokens['"]?\s*[:=]\s*([0-9]+)""", 1.0),
    ("num_speculative_tokens", r"--num-speculative-tokens[ =]([0-9]+)", 1.0),
    ("max_num_seqs", r"""['"]?max_num_seqs['"]?\s*[:=]\s*([0-9]+)""", 1.0),
    ("max_num_seqs", r"--max-num-seqs[ =]([0-9]+)", 1.0),
    # EPLB: vllm-ascend `[Expert Hotness] Current: mean=, max=, Updated: ...` and `[eplb/worker] Expert hotness
    # imbalance, current: mean= max=, updated: ...`; upstream vLLM in three generations (vllm/distributed/eplb/
    # eplb_state.py): `EPLB step: avg_tokens=%.2f, max_tokens=%d, balancedness=%.4f` (@0014ec6c58e1, the first
    # release with EPLB), then `EPLB step: %d for model %s: avg_tokens=...` and the same with `, steps until the
    # next rearrangement: %d` (@50feac95f9e5). Some forks append `imbalanceness=...`; it is not balancedness.
    ("eplb_imbalance_current_mean", r"(?:Expert Hotness\] Current|Expert hotness imbalance, current): mean=" + _NUM, 1.0),
    ("eplb_imbalance_current_max", r"(?:Expert Hotness\] Current|Expert hotness imbalance, current): mean=[0-9.na]+,? max=" + _NUM, 1.0),
    ("eplb_imbalance_updated_mean", r"(?:Expert Hotness\] Current|Expert hotness imbalance, current).*?[Uu]pdated: mean=" + _NUM, 1.0),
    ("eplb_imbalance_updated_max", r"(?:Expert Hotness\] Current|Expert hotness imbalance, current).*?[Uu]pdated: mean=[0-9.na]+,? max=" + _NUM, 1.0),
    ("eplb_balancedness", _EPLB_STEP + r"avg_tokens=[0-9.na]+, max_tokens=[0-9]+, balancedness=" + _NUM, 1.0),
    ("eplb_avg_tokens", _EPLB_STEP + r"avg_tokens=" + _NUM + r", max_tokens=", 1.0),
    ("eplb_max_tokens", _EPLB_STEP + r"avg_tokens=[0-9.na]+, max_tokens=" + _NUM + r", balancedness=", 1.0),
    # SGLang's rank-0 line on every forward pass with expert-distribution metrics on
    # (sgl-project/sglang@02295fe5ac5c python/sglang/srt/eplb/expert_distribution.py, _append_utilization_rate):
    # `[Expert Balancedness] forward_pass_id=N current_pass_balancedness=0.xxx last_10_average_balancedness=0.xxx
    # last_100_... last_1000_...  gpu_physical_count_sum=N` (two spaces before the sum).
    ("eplb_pass_balancedness", r"\[Expert Balancedness\].*?current_pass_balancedness=" + _NUM, 1.0),
    ("eplb_balancedness_last_10", r"\[Expert Balancedness\].*?last_10_average_balancedness=" + _NUM, 1.0),
    ("eplb_balancedness_last_100", r"\[Expert Balancedness\].*?last_100_average_balancedness=" + _NUM, 1.0),
    ("eplb_balancedness_last_1000", r"\[Expert Balancedness\].*?last_1000_average_balancedness=" + _NUM, 1.0),
    ("eplb_gpu_physical_count_sum", r"\[Expert Balancedness\].*?gpu_physical_count_sum=" + _NUM, 1.0),
    ("eplb_steps_to_rearrangement", _EPLB_STEP + r".*?balancedness=[0-9.na]+, steps until the next rearrangement: "
     + _NUM, 1.0),
]

# Which family of lines each signal is read from (default: the rare start-up and event lines).
_FAMILY = {
    **{n: "throughput" for n in ("prompt_throughput", "gen_throughput", "running_reqs", "waiting_reqs",
                                 "swapped_reqs", "kv_cache_usage_pct", "prefix_cache_hit_pct", "decode_token_ms")},
    **{n: "spec" for n in ("spec_acceptance_pct", "spec_mean_acceptance_len", "spec_accepted_tokens",
                           "spec_drafted_tokens")},
    # SGLang prints its balancedness line on every forward pass: one pass over those lines for all its values
    **{n: "balancedness" for n in ("eplb_pass_balancedness", "eplb_balancedness_last_10", "eplb_balancedness_last_100",
                                   "eplb_balancedness_last_1000", "eplb_gpu_physical_count_sum")},
}

# Printed every logging interval by every engine: most of a long log's signals. Their lines are not kept
# in memory unless a rule can quote them (diagnose/model/series.py).
PERIODIC_SIGNALS = frozenset(n for n, f in _FAMILY.items() if f != "balancedness") | {"spec_pos_acceptance"}

# V0 prints the acceptance rate as a fraction (0.550); scale it to percent.
_V0_SPEC = r"Speculative metrics: Draft acceptance rate: " + _NUM

_TEXT_PATTERNS: list[tuple[str, str]] = [
    ("speculative_method", r"""speculative[_-]config['"]?\s*[:=]\s*['"]?\{?[^}]*?['"]?method['"]?\s*[:=]\s*['"]?(\w+)"""),
    ("speculative_method", r"""SpeculativeConfig\([^)]*?method=['"]?(\w+)"""),
    ("quantization", r"""['"]?quantization['"]?\s*[:=]\s*['"]?([A-Za-z][\w-]*)"""),
    ("vllm_version", r"(?:Initializing a V1 LLM engine \(v|vLLM API server version |Initializing an LLM engine \(v)([\w.+-]+?)\)?(?:\s|$)"),
    # model served (non-default args, engine config); compare.py checks benchmark model names against it
    ("served_model", r"""(?:^|[\s{(,])['"]?model['"]?\s*[:=]\s*['"]([^'"]+)['"]"""),
    ("served_model", r"""served_model_name['"]?\s*[:=]\s*\[?['"]([^'"]+)"""),
    # versions printed at start-up (collect_env style or plugin logs); see parsers/kinds/versions.py
    ("vllm_ascend_version", r"(?i)vllm[-_ ]ascend(?: plugin)? version\s*[:=]?\s*v?(\d[\w.+-]*)"),
    ("torch_npu_version", r"torch[-_]npu(?: version|\.__version__|==)\s*[:=]?\s*(\d[\w.+-]*)"),
    ("cann_version", r"\bCANN(?: toolkit)? [Vv]ersion\s*[:=]?\s*\[?(\d+\.\d+\.(?:RC\d+|T\d+|\d+)(?:\.\w+)?)"),
]

# Only lines holding one of these literals can carry a signal: one cheap scan rejects the rest.
_PREFILTER = (
    r"throughput:|acceptance|Speculative metrics|KV cache size|blocks:|Maximum concurrency|weights took|"
    r"loading took|Available KV cache memory|Available memory: |padding layers|accept len|max_model_len|max_seq_len|tensor_parallel_size|speculative|quantization|max_num_seqs|max-num-seqs|"
    r"num-speculative-tokens|LLM engine \(v|server version|Expert Hotness|Expert hotness|EPLB step|Expert Balancedness"
    r"|'model'|model='|served_model_name"
    r"|[Aa]scend(?: plugin)? [Vv]ersion|torch[-_]npu|CANN(?: toolkit)? [Vv]ersion"
)


def extract_signals(records: pl.DataFrame) -> pl.DataFrame:
    base = records.filter(pl.col("message").str.contains(_PREFILTER)).select(
        "file", "line", "source", "node", "ts", "proc", "message"
    )
    if base.height == 0:
        return conform_signals(oom_signals(records))
    # One lazy query for every pattern: many small files must not pay a query per pattern each.
    base = base.lazy()
    # The engine a value belongs to: `Engine 000:` on the line, else the process, per node.
    engine_no = pl.col("message").str.extract(r"Engine (\d+):", 1)
    base = base.with_columns(
        _engine=pl.when(engine_no.is_not_null())
        .then(pl.format("Engine {}", engine_no))
        .otherwise(None)
    ).with_columns(
        # SpecDecoding lines follow their engine's throughput line in the same process.
        _engine=pl.col("_engine").forward_fill().over(pl.col("proc").fill_null(""), order_by="line")
    )
    # The periodic lines are most of the input: run each pattern only on its own family of lines.
    is_tp = pl.col("message").str.contains("Avg prompt throughput:", literal=True)
    is_spec = pl.col("message").str.contains("acceptance|Speculative metrics|accept len")
    is_bal = pl.col("message").str.contains("[Expert Balancedness]", literal=True)
    families = {
        "throughput": base.filter(is_tp),
        "spec": base.filter(~is_tp & is_spec),
        "balancedness": base.filter(~is_tp & ~is_spec & is_bal),
        "other": base.filter(~is_tp & ~is_spec & ~is_bal),
    }
    def number(pattern: str, scale: float) -> pl.Expr:
        return pl.col("message").str.extract(pattern, 1).str.replace_all(",", "").cast(pl.Float64, strict=False) * scale

    periodic, other = [], []
    wide: dict[str, dict[str, pl.Expr]] = {"throughput": {}, "spec": {}, "balancedness": {}}
    for name, pattern, scale in _SIGNAL_PATTERNS:
        family = _FAMILY.get(name, "other")
        if family == "other":
            other.append(families[family].select(*_keys(), signal=pl.lit(name), value=number(pattern, scale),
                                                 text=pl.lit(None, pl.String)))
        elif name in wide[family]:  # another wording of the same value (sglang's decode batch line)
            wide[family][name] = pl.coalesce(wide[family][name], number(pattern, scale))
        else:
            wide[family][name] = number(pattern, scale)
    # V0 prints the acceptance rate as a fraction (no % sign, so the V1 pattern never matches it too).
    wide["spec"]["spec_acceptance_pct"] = pl.coalesce(wide["spec"]["spec_acceptance_pct"], number(_V0_SPEC, 100.0))
    # A paste cut before the rate still has the counts it is made of (vllm/v1/spec_decode/metrics.py: accepted over
    # drafted tokens of the interval, in percent).
    accepted, drafted = wide["spec"]["spec_accepted_tokens"], wide["spec"]["spec_drafted_tokens"]
    wide["spec"]["spec_acceptance_pct"] = pl.coalesce(
        wide["spec"]["spec_acceptance_pct"], pl.when(drafted > 0).then(100.0 * accepted / drafted))
    # The periodic lines are most rows: every value of a line in one pass, then one row per value.
    keys = ["file", "line", "source", "node", "ts", "engine"]
    for family, values in wide.items():
        frame = families[family].select(*_keys(), **values)
        if family == "throughput":
            frame = frame.with_columns(decode_token_ms=_decode_token_ms())
        periodic.append(
            frame.unpivot(index=keys, variable_name="signal", value_name="value")  # every value column
            .with_columns(text=pl.lit(None, pl.String))
        )
    for name, pattern in _TEXT_PATTERNS:
        text = pl.col("message").str.extract(dfa_safe(pattern), 1)
        if name == "quantization":  # `quantization=None`: started without a method; said as `none`, not Python's None
            text = pl.when(text == "None").then(pl.lit("none")).otherwise(text)
        other.append(families["other"].select(*_keys(), signal=pl.lit(name), value=pl.lit(None, pl.Float64), text=text))
    positions = _per_position(families["spec"])
    found = pl.col("value").is_not_null() & pl.col("value").is_not_nan() | pl.col("text").is_not_null()
    # Several start-up patterns can read the same number; the periodic families cannot repeat a signal.
    other_frame = pl.concat(other, how="vertical_relaxed").filter(found)
    other_frame = other_frame.unique(subset=["line", "signal", "engine", "value", "text"], keep="first", maintain_order=True)
    frames = pl.collect_all([pl.concat(periodic + [positions], how="vertical_relaxed").filter(found), other_frame])
    frame = pl.concat(frames, how="vertical_relaxed")
    frame = pl.concat([conform_signals(frame), oom_signals(records)], how="vertical_relaxed")
    return conform_signals(frame.sort("line", maintain_order=True))


def _decode_token_ms() -> pl.Expr:
    """How long each running request waits for its next token, in ms: a decode step gives every running request
    one token (more with speculative decoding), so over an interval without prefill it is ``Running`` over the
    generation throughput. The server's throughput alone hides a slow step behind many requests: 40 requests
    at 30 tokens/s is 1.3 s a token each. Null where something was prefilled, nothing ran or nothing came out."""
    run, gen, prompt = pl.col("running_reqs"), pl.col("gen_throughput"), pl.col("prompt_throughput")
    decoding = (run > 0) & (gen > 0) & (prompt.fill_null(0) == 0)
    return pl.when(decoding).then(1000.0 * run / gen)


def derived_signals(signals: pl.DataFrame, series: pl.DataFrame | None = None) -> pl.DataFrame:
    """Signals computed from the vLLM signals of the whole bundle (after all chunks of a file are parsed):
    first/last draft position acceptance, KV capacity against max_num_seqs, data-parallel engine imbalance per
    logging round, and drift over a run. Documented in model.SIGNALS; returns only the new rows.

    ``series`` holds every periodic row (diagnose/model/series.py); ``signals`` then holds only some of them. The
    work runs on the compact form (categorical names) and only the rows returned become strings. Each signal's
    rows are taken from the series on their own (``rows``), never the whole series at once: a copy of it joined
    with the signals was most of the memory of a run over a dense metric log."""
    frame = signals.filter(pl.col("source") == KIND)
    rows = _named(frame)
    if series is not None and series.height:
        few = compact(frame.filter(~periodic_rows({KIND: PERIODIC_SIGNALS})))
        many = series.lazy().filter(pl.col("source") == KIND)
        rows = _named(few, many)
    out = []
    pos = rows("spec_pos_acceptance").with_columns(
        _base=pl.col("engine").cast(pl.String).str.replace(r"#[0-9]+$", ""),
        _pos=pl.col("engine").cast(pl.String).str.extract(r"#([0-9]+)$", 1).cast(pl.Int32, strict=False),
    )
    if pos.height:
        per = pos.sort("_pos").group_by(["file", "line", "_base"], maintain_order=True).agg(
            pl.col("source", "node", "ts").first(), pl.col("value").first().alias("_f"),
            pl.col("value").last().alias("_l"), pl.len().alias("_n"),
        ).filter(pl.col("_n") >= 2)
        for name, col in (("spec_first_pos_acceptance", "_f"), ("spec_last_pos_acceptance", "_l")):
            out.append(per.select("file", "line", "source", "node", "ts", engine=pl.col("_base"),
                                  signal=pl.lit(name), value=pl.col(col), text=pl.lit(None, pl.String)))
    seqs = rows("max_num_seqs").group_by("file").agg(pl.col("value").last().alias("_seqs"))
    conc = rows("max_concurrency").join(seqs, on="file", how="inner")
    if conc.height:
        out.append(conc.filter(pl.col("_seqs") > 0).select(
            "file", "line", "source", "node", "ts", "engine", signal=pl.lit("kv_concurrency_vs_max_num_seqs"),
            value=pl.col("value") / pl.col("_seqs"), text=pl.lit(None, pl.String)))
    # DP engines (`Engine 000:` ...) print one throughput line each per interval: the k-th line of every
    # engine in a file is one round; the busiest engine of a round carries the imbalance.
    run = rows("running_reqs")  # then the engine test, on those rows only
    run = run.filter(pl.col("engine").cast(pl.String).str.contains(r"^Engine \d+$"))
    if run.height and run.select("engine").n_unique() >= 2:
        kv = rows("kv_cache_usage_pct").select("file", "line", "engine", pl.col("value").alias("_kv"))
        run = run.join(kv.unique(["file", "line", "engine"]), on=["file", "line", "engine"], how="left").sort("line")
        run = run.with_columns(_round=pl.int_range(pl.len()).over(["file", "node", "engine"]))
        g = ["file", "node", "_round"]
        run = run.with_columns(
            _n=pl.len().over(g), _mean=pl.col("value").mean().over(g), _max=pl.col("value").max().over(g),
            _kvsum=pl.col("_kv").sum().over(g), _kvn=pl.col("_kv").count().over(g),
        ).filter((pl.col("_n") >= 2) & (pl.col("value") == pl.col("_max")) & (pl.col("_mean") > 0))
        run = run.unique(g, keep="first", maintain_order=True)
        gap = pl.col("_kv") - (pl.col("_kvsum") - pl.col("_kv")) / (pl.col("_kvn") - 1)
        for name, value in (("dp_running_imbalance", pl.col("_max") / pl.col("_mean")),
                            ("dp_kv_usage_gap", pl.when(pl.col("_kvn") >= 2).then(gap).otherwise(None))):
            out.append(run.select("file", "line", "source", "node", "ts", "engine", signal=pl.lit(name),
                                  value=value.cast(pl.Float64), text=pl.lit(None, pl.String)))
    out += _drift(rows)
    if not out:
        return conform_signals(frame.clear())
    return conform_signals(pl.concat(out, how="vertical_relaxed")).filter(pl.col("value").is_not_null())


_DRIFT_MIN_SAMPLES = 8


def _named(few: pl.DataFrame, many: pl.LazyFrame | None = None):
    """``rows(name)``: the rows of one signal, of ``few`` then of ``many`` (the series, filtered lazily: only
    that signal's rows are made)."""
    def rows(name: str) -> pl.DataFrame:
        mine = few.filter(pl.col("signal") == name)
        if many is None:
            return mine
        return pl.concat([mine, many.filter(pl.col("signal") == name).collect()])
    return rows


def _drift(rows) -> list[pl.DataFrame]:
    """Over one engine's run (8+ periodic lines): first quarter against last quarter. ``gen_throughput_drop_pct``
    only where requests were running and the last quarter ran at least as many of them as the first;
    ``spec_acceptance_drop_pts`` from the acceptance percentages. Both sit on the engine's last line."""
    g = ["file", "node", "engine"]
    out = []
    tp = rows("gen_throughput").select(*g, "line", "source", "ts", pl.col("value").alias("_tp"))
    run = rows("running_reqs").select(*g, "line", pl.col("value").alias("_run"))
    both = tp.join(run.unique(g + ["line"]), on=g + ["line"], how="inner", nulls_equal=True).filter(pl.col("_run") >= 1)
    acc = rows("spec_acceptance_pct").select(*g, "line", "source", "ts", pl.col("value").alias("_acc"))
    for data, col, name in ((both, "_tp", "gen_throughput_drop_pct"), (acc, "_acc", "spec_acceptance_drop_pts")):
        if data.height < _DRIFT_MIN_SAMPLES:
            continue
        data = data.sort("line").with_columns(_i=pl.int_range(pl.len()).over(g), _n=pl.len().over(g))
        data = data.filter(pl.col("_n") >= _DRIFT_MIN_SAMPLES).with_columns(_q=pl.col("_n") // 4)
        first, last = pl.col("_i") < pl.col("_q"), pl.col("_i") >= pl.col("_n") - pl.col("_q")
        aggs = [pl.col(col).filter(first).mean().alias("_a"), pl.col(col).filter(last).mean().alias("_b"),
                pl.col("line").last(), pl.col("source").last(), pl.col("ts").last()]
        if col == "_tp":
            aggs += [pl.col("_run").filter(first).mean().alias("_ra"), pl.col("_run").filter(last).mean().alias("_rb")]
        per = data.group_by(g, maintain_order=True).agg(aggs)
        if col == "_tp":
            per = per.filter((pl.col("_rb") >= pl.col("_ra")) & (pl.col("_a") > 0))
            value = (1 - pl.col("_b") / pl.col("_a")) * 100
        else:
            value = pl.col("_a") - pl.col("_b")
        out.append(per.select("file", "line", "source", "node", "ts", "engine", signal=pl.lit(name),
                              value=value.cast(pl.Float64), text=pl.lit(None, pl.String)))
    return out


def _keys() -> list[pl.Expr]:
    engine = pl.coalesce(pl.col("_engine"), pl.col("proc"), pl.lit("engine"))
    return [
        pl.col("file"),
        pl.col("line"),
        pl.col("source"),
        pl.col("node"),
        pl.col("ts"),
        engine.alias("engine"),
    ]


def _per_position(base: pl.DataFrame) -> pl.DataFrame:
    """`Per-position acceptance rate: 0.739, 0.478, ...` → one row per position, engine ``<engine>#<pos>``."""
    lists = base.with_columns(
        _pos=pl.col("message")
        .str.extract(r"Per-position acceptance rate: ([0-9., ]+?)(?:,\s*[A-Z]|$)", 1)
        .str.split(",")
    ).filter(pl.col("_pos").is_not_null())
    exploded = lists.with_columns(_idx=pl.int_ranges(1, pl.col("_pos").list.len() + 1)).explode("_pos", "_idx")
    engine = pl.coalesce(pl.col("_engine"), pl.col("proc"), pl.lit("engine"))
    return exploded.select(
        "file",
        "line",
        "source",
        "node",
        "ts",
        engine=pl.format("{}#{}", engine, pl.col("_idx")),
        signal=pl.lit("spec_pos_acceptance"),
        value=pl.col("_pos").str.strip_chars().cast(pl.Float64, strict=False),
        text=pl.lit(None, pl.String),
    )


SIGNALS: dict[str, str] = {
    "kv_cache_usage_pct": "KV cache usage in percent (vLLM throughput line `GPU KV cache usage`)",
    "running_reqs": "requests running in the engine",
    "waiting_reqs": "requests waiting (V1 `Waiting`, V0 `Pending`)",
    "swapped_reqs": "requests swapped out (V0)",
    "prompt_throughput": "average prompt throughput, tokens/s",
    "gen_throughput": "average generation throughput, tokens/s",
    "decode_token_ms": "derived on each throughput line without prefill: `Running` / generation throughput, ms: how "
    "long each running request waits for a token",
    "prefix_cache_hit_pct": "prefix cache hit rate in percent",
    "spec_acceptance_pct": "speculative decoding draft acceptance rate in percent (V0 fractions scaled)",
    "spec_mean_acceptance_len": "mean acceptance length (1.00 = no draft token accepted)",
    "spec_accepted_tokens": "draft tokens accepted in the interval",
    "spec_drafted_tokens": "draft tokens proposed in the interval",
    "spec_pos_acceptance": "acceptance at one draft position (fraction); `engine` carries `#<pos>`",
    "spec_first_pos_acceptance": "derived: acceptance at draft position 1 (fraction), on lines with 2+ positions",
    "spec_last_pos_acceptance": "derived: acceptance at the last draft position (fraction), on lines with 2+ positions",
    "max_num_seqs": "max_num_seqs configured (`--max-num-seqs`, args/config)",
    "kv_concurrency_vs_max_num_seqs": "derived: `Maximum concurrency` at max_model_len divided by max_num_seqs",
    "dp_running_imbalance": "derived: max/mean `Running` across DP engines (`Engine NNN`) in one logging round; on the busiest engine",
    "dp_kv_usage_gap": "derived: KV usage of that busiest engine minus the mean of the other engines, points",
    "gen_throughput_drop_pct": "derived: generation throughput of an engine's last quarter of periodic lines below its first quarter, % (only when as many requests run)",
    "spec_acceptance_drop_pts": "derived: draft acceptance of an engine's first quarter of metric lines minus its last quarter, points",
    "kv_cache_tokens": "KV cache capacity in tokens (`GPU KV cache size`)",
    "kv_blocks": "KV cache blocks (`# npu blocks`)",
    "max_concurrency": "maximum concurrency at max_model_len (`Maximum concurrency for N tokens`)",
    "max_model_len": "maximum model length configured (from the concurrency line or args)",
    "weights_gb": "memory taken by model weights per rank (`Loading model weights took`)",
    "kv_padding_waste_pct": "share of KV cache memory the allocator's padding layers may waste, % (`Add N padding layers, may waste at most X%`)",
    "available_kv_cache_gib": "memory left for the KV cache per rank, GiB (vllm-ascend `Available KV cache memory`, "
    "older `Available memory: <bytes>`); negative: the weights and the profiling peak took it all",
    "speculative_method": "speculative decoding method configured (text: mtp, deepseek_mtp, eagle, ...)",
    "num_speculative_tokens": "speculative tokens per step configured",
    "quantization": "quantization method configured (text)",
    "vllm_version": "vLLM version printed at start-up (text)",
    "tensor_parallel_size": "tensor-parallel size configured",
    "served_model": "model path or served model name the vLLM server was started with (text)",
    "vllm_ascend_version": "vllm-ascend version printed at start-up (text)",
    "torch_npu_version": "torch_npu version printed at start-up (text)",
    "cann_version": "CANN version printed at start-up (text)",
    "eplb_imbalance_current_mean": "vllm-ascend EPLB: mean over layers of per-layer rank max/mean, current placement",
    "eplb_imbalance_current_max": "vllm-ascend EPLB: max over layers of per-layer rank max/mean, current placement",
    "eplb_imbalance_updated_mean": "vllm-ascend EPLB: mean over layers of rank max/mean after the planned rebalance",
    "eplb_imbalance_updated_max": "vllm-ascend EPLB: max over layers of rank max/mean after the planned rebalance",
    "eplb_balancedness": "upstream vLLM EPLB balancedness = avg/max tokens per EP rank (1.0 = perfect)",
    "eplb_avg_tokens": "upstream vLLM EPLB avg_tokens per EP rank",
    "eplb_max_tokens": "upstream vLLM EPLB max_tokens on one EP rank",
    "eplb_steps_to_rearrangement": "upstream vLLM EPLB: steps until the next rearrangement (generation 3 line)",
    "eplb_pass_balancedness": "SGLang EPLB: balancedness of one forward pass, the mean over layers of (mean+1e-5)/(max+1e-5) "
    "of the tokens per GPU (1.0 = even; `[Expert Balancedness] current_pass_balancedness`)",
    "eplb_balancedness_last_10": "SGLang EPLB: mean balancedness of the last 10 forward passes",
    "eplb_balancedness_last_100": "SGLang EPLB: mean balancedness of the last 100 forward passes",
    "eplb_balancedness_last_1000": "SGLang EPLB: mean balancedness of the last 1000 forward passes (the window its "
    "rebalancer compares with --eplb-min-rebalancing-utilization-threshold)",
    "eplb_gpu_physical_count_sum": "SGLang EPLB: expert selections counted in the forward pass, all GPUs and layers",
}


