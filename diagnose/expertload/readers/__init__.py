"""One reader per real source of expert load (the table below is the registry; inputs.py routes each file).

| reader      | reads                                                                    | unit                       |
|-------------|--------------------------------------------------------------------------|----------------------------|
| mindie      | ``<dump>/<stage>/<stage>_<rank>.csv`` hotspot dumps, ``model_gen_config.json`` | running totals per slot |
| maps        | the expert map JSON of vllm-ascend and MindIE, and its records over time | placement                  |
| sglang      | ``expert_distribution_recorder_*.pt`` (stat and per-pass dumps), read without unpickling | counts per logical expert |

Each returns plain values and ``Refused`` entries (base.py); none imports another room. Not read yet: MindSpeed-RL's
``eplb_token_collects_<rank>.json`` (running totals per logical expert, also across runs: reference
profiling-and-expert-load.md §D9), which would be a reader here and a chain of snapshots like windows.py's.
"""
