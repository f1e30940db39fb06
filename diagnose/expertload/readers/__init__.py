"""One reader per real source of expert load (the table below is the registry; inputs.py routes each file).

| reader      | reads                                                                    | unit                       |
|-------------|--------------------------------------------------------------------------|----------------------------|
| mindie      | ``<dump>/<stage>/<stage>_<rank>.csv`` hotspot dumps, ``model_gen_config.json`` | running totals per slot |
| maps        | the expert map JSON of vllm-ascend and MindIE, and its records over time | placement                  |
| sglang      | ``expert_distribution_recorder_*.pt`` (stat and per-pass dumps), read without unpickling | counts per logical expert |
| mindspeed   | MindSpeed-RL ``eplb_token_collects_<rank>.json`` / ``token_collects_all.json`` | running totals per logical expert |

Each returns plain values and ``Refused`` entries (base.py); none imports another room.
"""
