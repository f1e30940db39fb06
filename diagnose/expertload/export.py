"""Writers for the tools users feed next: the suggested placement as SGLang's ``--init-expert-location`` JSON, and
the measured load as an msit-ready folder. (The vllm-ascend / MindIE expert map is the result's own
``recommendation.expert_map``, written by ``--map-out``.)

* SGLang (``sgl-project/sglang python/sglang/srt/eplb/expert_location.py``, ``compute_initial_expert_location_metadata``):
  a ``.json`` holding ``physical_to_logical_map`` is passed whole to ``init_by_mapping(**data)``, so it must hold
  that one key: ``[layers][physical experts]``, physical expert ``p`` living on GPU ``p // (physical / ep_size)``.
  SGLang numbers every decoder layer (DeepSeek ``get_model_config_for_expert_location``: ``num_layers =
  num_hidden_layers``), dense ones included, and ``physical = logical + --ep-num-redundant-experts``. The map is the
  suggested one, devices concatenated in order; dense layers get SGLang's trivial placement (``p % logical``, as
  ``init_trivial``). Layers come in SGLang's numbering when the loads did (SGLang sources); for loads in MoE-layer
  numbering (MindIE, vllm-ascend, MindSpeed-RL) ``dense_layers`` trivial rows go first (DeepSeek-V3/R1: 3).
* msit ``elb`` (``Ascend/msit@6e3e88732929 msit/components/expert_load_balancing/elb``): a folder with
  ``model_gen_config.json`` is read as MindIE "split" CSVs (``data_loader/mindie_csv_loader.py``): files matching
  ``<stage>_(\\d+).csv`` in that one folder, no header, blocks of ``num_moe_layers`` rows of running totals; the
  runner concatenates the rank files along the slots, reshapes to ``[iterations, layers, slots]``, differences
  consecutive blocks and drops iterations whose total is at most ``2 x ranks x k x collection_Interval x layers``
  (``algorithm_runner/speculative_moe_runner.py:199-216``); it needs two iterations or more. Without
  ``eplb_expert_map_file`` a slot is the logical expert of its column. So each stage gets one block per day of the
  window (the day's load per logical expert, cumulated), after a block of zeros (an iteration msit drops), split
  into rank files of ``experts / ranks`` columns; loads that come without a stage (SGLang, MindSpeed-RL) go to
  ``decode``. The config carries the layers (MTP included), the experts, ``num_of_selected_experts`` (from the
  dumps' config, else 8, DeepSeek-V3/R1's top-k) and ``collection_Interval`` 8.
"""

from __future__ import annotations

import json
from datetime import date

import polars as pl

from diagnose.expertload.load import Loaded
from diagnose.expertload.metrics import Frames
from diagnose.model.expertload import ExpertLoadResult

TOP_K = 8  # DeepSeek-V3/R1 num_experts_per_tok, when no model_gen_config.json says
DEEPSEEK_DENSE = 3  # DeepSeek-V3/R1 first_k_dense_replace: 61 decoder layers, 58 MoE layers


def routed_maps(result: ExpertLoadResult) -> list[list[list[int]]]:
    """The suggested placement per layer and device, routed experts only (the shared expert and dangling
    devices of a MindIE map left out)."""
    rec = result.recommendation
    if rec.expert_map is None:
        return []
    out = []
    for layer in rec.expert_map.layer_list:
        devs = sorted(layer.device_list, key=lambda d: d.device_id)[rec.dangling:]
        out.append([[e for e in d.device_expert if e != rec.shared_id] for d in devs])
    return out


def sglang_location(result: ExpertLoadResult, dense_layers: int = 0) -> dict | None:
    """``{"physical_to_logical_map": [...]}`` of the suggested placement; None without one."""
    maps = routed_maps(result)
    if not maps:
        return None
    n_logical = result.window.experts
    rows = [[e for dev in layer for e in dev] for layer in maps]
    n_physical = len(rows[0])
    trivial = [p % n_logical for p in range(n_physical)]
    return {"physical_to_logical_map": [list(trivial) for _ in range(dense_layers)] + rows}


def msit_folder(loaded: Loaded, result: ExpertLoadResult) -> dict[str, str]:
    """File name -> text of the msit-ready folder for the report window (module docstring); empty without load."""
    w = result.window
    if not w.since or not w.until or not w.days_with_data:
        return {}
    since, until = date.fromisoformat(w.since), date.fromisoformat(w.until)
    fr = Frames(loaded)
    phys = loaded.loads.filter(pl.col("day").is_between(since, until))
    logi = loaded.logical.filter(pl.col("day").is_between(since, until))
    if w.stage != "all":
        phys, logi = phys.filter(pl.col("stage") == w.stage), logi.filter(pl.col("stage") == w.stage)
    tokens = fr.expert_tokens(phys, logi, ("stage", "day")).with_columns(
        stage=pl.when(pl.col("stage") == "prefill").then(pl.lit("prefill")).otherwise(pl.lit("decode")))
    n_layers, n_exp = w.layers, w.experts
    ranks = w.ranks if w.ranks and n_exp % w.ranks == 0 else 1
    width = n_exp // ranks
    files: dict[str, str] = {}
    for (stage,), part in tokens.group_by(["stage"], maintain_order=True):
        days = sorted(set(part["day"].to_list()))
        grid = {(li, e): 0 for li in range(n_layers) for e in range(n_exp)}
        blocks = [dict(grid)]
        for day in days:
            for li, e, v in part.filter(pl.col("day") == day).select("layer", "expert", "tokens").iter_rows():
                if 0 <= li < n_layers and 0 <= e < n_exp:
                    grid[(li, e)] += int(round(v))
            blocks.append(dict(grid))
        for r in range(ranks):
            cols = range(r * width, (r + 1) * width)
            files[f"{stage}_{r}.csv"] = "".join(",".join(str(b[(li, e)]) for e in cols) + "\n"
                                                for b in blocks for li in range(n_layers))
    config = {"num_moe_layers": n_layers, "collection_Interval": 8, "num_of_experts": n_exp,
              "num_of_selected_experts": [int(loaded.config.get("num_of_selected_experts") or TOP_K)],
              "num_dangling_shared_experts": 0}
    files["model_gen_config.json"] = json.dumps(config, indent=4) + "\n"
    return dict(sorted(files.items()))
