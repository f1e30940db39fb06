"""One reader per real source of expert load (the table below is the registry; inputs.py routes each file).

| reader      | reads                                                                    | unit                       |
|-------------|--------------------------------------------------------------------------|----------------------------|
| mindie_dumps | ``<dump>/<stage>/<stage>_<rank>.csv`` hotspot dumps, ``model_gen_config.json`` | running totals per slot |
| maps        | the expert map JSON of vllm-ascend and MindIE, and its records over time | placement                  |
| sglang      | ``expert_distribution_recorder_*.pt`` (stat and per-pass dumps), read without unpickling, and the ``{"logical_count": ...}`` JSON | counts per logical expert, one window each |
| mindspeed   | MindSpeed-RL ``token_collects_all.json`` / ``eplb_token_collects_<rank>.json`` | running totals per logical expert |

Each returns plain values and ``Refused`` entries (base.py); none imports another room. The EPLB lines and
metrics are signals of the parsers (parsers/kinds/vllm_signals.py, mindie.py, prometheus_eplb.py), read by the
command through the pipeline; expertload/gauges.py turns the per-layer ones into a trend.
"""
