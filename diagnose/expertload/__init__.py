"""`diagnose expert-load`: the load of each expert and rank over a week, and a better placement.

readers/ read each real source (MindIE dumps and their config, expert maps, SGLang recorder dumps); inputs.py
routes the files; windows.py counts MindIE's running totals; load.py assembles; metrics.py measures into the typed
result of model/expert_load.py; placement.py suggests a map; advise.py answers whether an EPLB trial is worth it.
The words are report/load/'s; the command (commands/expert_load.py) wires reading, analysis and rendering.
"""
