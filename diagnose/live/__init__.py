"""While it happens: the programs that judge logs as they grow (``diagnose watch``, ``diagnose npd``).

Files are followed by ``diagnose/ingest/follow.py``; the window of their lines is judged by the application
service (``judge.py``: the batch read/judge split), findings open and resolve by fingerprint (``events.py``),
one tick at a time (``watcher.py``) with a state a restart resumes from (``state.py``), and the results go to
the live sinks (``sinks.py``): JSON lines, reports, the Prometheus textfile and ``/metrics``, MindCluster public
faults (``faults.py``), node-problem-detector's contract (``npd_plugin.py``). See docs/live.md.
"""
