"""The expert-load result: what ``diagnose expert-load`` measured, as typed values that every format renders.

The analysis (``diagnose/expertload/``) fills these structs with numbers and codes; the renderers
(``diagnose/report/load/``) put them in words in the language asked for. No sentence is stored here: a file's
first-window decision is a code (``FileStat.first``), a note is a catalog key with its values (``Note``), and the
placement's label is derived from its numbers at render time. Days are ISO strings (``2026-11-22``) so the JSON
format is the struct as it stands.
"""

from __future__ import annotations

import msgspec

# How a file's first window was decided (FileStat.first); the words for each are in messages.toml [expertload.why].
FIRST_WINDOW_CODES = ("start", "continues", "restart", "repeat", "service", "count", "whole", "mid-run", "gap",
                      "unknown", "slots", "skip")
COUNTED = ("start", "continues", "restart", "repeat", "service", "count", "whole")
# --first-window: how the first window of a chain is decided (expertload/windows.py)
FIRST_WINDOW_POLICIES = ("auto", "count", "skip")
# The answers of --advise (vllm-ascend RFC #16795 asks for the same three).
ADVICE_VERDICTS = ("recommend_trial", "not_recommended_now", "insufficient_evidence")


class FileStat(msgspec.Struct, kw_only=True):
    """One input file of loads: what it held and how its windows were counted (expertload/windows.py)."""

    path: str
    stage: str
    rank: int
    day: str | None
    blocks: int = 0
    resets: int = 0
    chained: bool = False  # the first window is tied to the previous dump (continues, restart, repeat)
    note: str = ""  # a key of the catalog's [input_note] table: "incomplete_block" (a write in progress)
    windows: int = 0  # one per complete block
    counted: int = 0  # windows whose load is counted
    first: str = ""  # how the first window was decided: one of FIRST_WINDOW_CODES ("" with no complete block)
    first_counted: bool = False
    ratio: float | None = None  # first window's total over the median increment (the size test only)
    previous: str | None = None  # the previous dump of the chain
    previous_day: str | None = None  # its day
    repeated: int = 0  # leading blocks that repeat the previous dump
    source: str = "mindie"  # the reader that read it (expertload/readers/)


class Note(msgspec.Struct, frozen=True):
    """A remark for the reader: a message key of ``[expertload]`` and its values."""

    key: str
    params: dict[str, str] = {}


class Refused(msgspec.Struct, frozen=True):
    """An input the readers did not count, with the reason as a code and its values (the words: report/load)."""

    path: str
    reason: str  # one of readers/base.py REFUSALS
    params: dict[str, str] = {}


class Window(msgspec.Struct, kw_only=True):
    since: str | None
    until: str | None
    stage: str
    layers: int
    ranks: int
    experts: int
    placement: str  # "map:<path>", "maps:<n>" (placements changed over the window), "contiguous", "logical"
    layers_source: str = ""  # "option", "map", "config" (model_gen_config.json), "detected", "logical"
    layers_votes: tuple[int, str] = (0, "")
    mtp_layers: int = 0  # trailing MTP layers in the dumps (model_gen_config.json), kept out of the measures
    shared_slots: int = 0  # slots that hold the shared expert (MindIE mix_shared_routing), out of the measures
    dangling_devices: int = 0  # leading devices holding only the shared expert (MindIE), out of the measures
    shared_tokens: int = 0  # tokens those slots and devices computed in the window (shown apart, never hot)
    rank_estimated: bool = False  # some loads came per logical expert: rank tokens split over replicas
    days_with_data: list[str] = []
    gauge_days: list[str] = []  # days no dump covers, whose per-layer rank max/mean come from the EPLB metrics
    tokens: int = 0
    previous_window_days: list[str] = []


class RankFile(msgspec.Struct, frozen=True):
    day: str
    stage: str
    rank: int


class Missing(msgspec.Struct):
    days: list[str] = []
    rank_files: list[RankFile] = []


class NotCounted(msgspec.Struct, kw_only=True):
    path: str
    day: str | None
    stage: str
    rank: int
    first: str
    ratio: float | None = None
    previous_day: str | None = None
    repeated: int = 0


class Counting(msgspec.Struct, kw_only=True):
    max_intervals: float
    first_window: str = "auto"  # one of FIRST_WINDOW_POLICIES
    files: int = 0
    windows: int = 0
    counted: int = 0
    not_counted: int = 0
    repeated: int = 0
    first_windows: dict[str, int] = {}
    first_windows_not_counted: list[NotCounted] = []


class DayLayer(msgspec.Struct, kw_only=True):
    """One layer's numbers over one day."""

    layer: int
    tokens: int
    prefill_tokens: int
    decode_tokens: int
    imbalance_max_over_mean: float | None
    cv: float | None
    rank_max_over_mean: float | None
    rank_cv: float | None


class LayerStats(DayLayer, kw_only=True):
    """One layer's numbers over the report window, with last week's rank max/mean beside them."""

    previous_rank_max_over_mean: float | None = None


class DayStats(msgspec.Struct, kw_only=True):
    day: str
    tokens: int
    rank_max_over_mean_layer_mean: float | None
    rank_max_over_mean_worst_layer: float | None
    layers: list[DayLayer]
    source: str = "dump"  # "gauge": from the EPLB metrics only (rank max/mean per layer; no tokens)


class TrendCell(msgspec.Struct, frozen=True):
    day: str
    layer: int
    rank_max_over_mean: float | None
    imbalance_max_over_mean: float | None
    source: str = "dump"  # "gauge": a day no dump covers, from the EPLB metrics (expertload/gauges.py)


class Summary(msgspec.Struct, kw_only=True):
    rank_max_over_mean_layer_mean: float | None = None
    rank_max_over_mean_worst_layer: float | None = None
    previous_week_rank_max_over_mean_layer_mean: float | None = None
    previous_week_rank_max_over_mean_worst_layer: float | None = None
    layers_over_target: list[int] = []


class HotExpert(msgspec.Struct, kw_only=True):
    layer: int
    expert: int
    tokens: int
    share: float | None
    load_over_mean: float | None
    hot: bool
    ranks: list[int]
    prefill_tokens: int
    decode_tokens: int
    days_hot: int
    days_seen: int
    previous_load_over_mean: float | None = None


class RankTokens(msgspec.Struct, frozen=True):
    rank: int
    tokens: int
    prefill_tokens: int
    decode_tokens: int


class Ratios(msgspec.Struct, kw_only=True):
    max_over_mean_layer_mean: float | None
    max_over_mean_worst_layer: float | None
    measured: bool
    redundant_experts: int | None = None


class Tried(msgspec.Struct, frozen=True):
    redundant_experts: int
    max_over_mean_worst_layer: float
    max_over_mean_layer_mean: float


class LayerAfter(msgspec.Struct, frozen=True):
    layer: int
    before: float | None
    after: float | None


class Device(msgspec.Struct, frozen=True):
    device_id: int
    device_expert: list[int]


class MapLayer(msgspec.Struct, frozen=True):
    layer_id: int
    device_count: int
    device_list: list[Device]


class ExpertMap(msgspec.Struct, frozen=True):
    """The map schema vllm-ascend (``expert_map_path``) and MindIE (``expert_map_file``) read."""

    moe_layer_count: int
    layer_list: list[MapLayer]


class Recommendation(msgspec.Struct, kw_only=True):
    target: float
    reached: bool = False
    reason: str | None = None  # "no_data" when nothing could be placed
    current_redundant_experts: int = 0
    redundant_experts: int | None = None
    slots_per_rank: int | None = None
    before: Ratios | None = None
    after: Ratios | None = None
    current: Ratios | None = None
    per_layer: list[LayerAfter] = []
    tried: list[Tried] = []
    expert_map: ExpertMap | None = None
    shared_id: int | None = None  # the shared expert's id the map carries on every device (MindIE), else None
    dangling: int = 0  # leading devices of the map that hold only the shared expert (MindIE)


class EplbSignal(msgspec.Struct, frozen=True):
    count: int
    last: float | None
    worst: float | None


class EplbPoint(msgspec.Struct, frozen=True):
    ts: str | None
    signal: str
    value: float | None


class Eplb(msgspec.Struct):
    signals: dict[str, EplbSignal] = {}
    series: list[EplbPoint] = []


class PlacementSpan(msgspec.Struct, frozen=True):
    """One placement in force over some days (a recorded map, or the one given)."""

    source: str  # the map file
    since: str | None  # first day it applies to (None: from the start)
    until: str | None  # last day (None: to the end)
    redundant_experts: int = 0


class AdviceCheck(msgspec.Struct, frozen=True):
    """One piece of evidence behind the advice: a code, whether it points to a trial, and its numbers."""

    code: str  # "windows", "rank_imbalance", "hot_overlap", "today", "phases", "holdout", "eplb_running"
    supports_trial: bool | None  # None: not enough data to say
    values: dict[str, float] = {}


class AdviceOption(msgspec.Struct, frozen=True):
    """One redundancy tried by ``--advise``: a placement fitted on each day, scored on the next (held out)."""

    redundant_experts: int
    measured: float  # the held-out days' measured rank max/mean, mean over layers
    estimated: float  # the same with the fitted placement
    worst: float  # its worst layer
    gain: float  # percent lower than measured


class Advice(msgspec.Struct, kw_only=True):
    """``--advise``: is an EPLB trial worth running on this load? (``ADVICE_VERDICTS``)"""

    verdict: str
    windows: int
    checks: list[AdviceCheck] = []
    options: list[AdviceOption] = []
    conditions: list[AdviceCheck] = []  # what would change the verdict, with its levels
    redundant_experts: int | None = None  # the smallest redundancy whose holdout estimate reaches the target


class ExpertLoadResult(msgspec.Struct, kw_only=True):
    window: Window
    notes: list[Note] = []
    refused: list[Refused] = []
    files: list[FileStat] = []
    resets: int = 0
    counting: Counting | None = None
    layers: list[LayerStats] = []
    summary: Summary | None = None
    hot_experts: list[HotExpert] = []
    days: list[DayStats] = []
    trend: list[TrendCell] = []
    over_threshold: list[TrendCell] = []
    ranks: list[RankTokens] = []
    heatmap: list[list[int]] = []
    rank_heatmap: list[list[int]] = []
    recommendation: Recommendation
    eplb: Eplb = msgspec.field(default_factory=Eplb)
    missing: Missing = msgspec.field(default_factory=Missing)
    placements: list[PlacementSpan] = []
    advice: Advice | None = None
