"""One module per source kind, each declaring its ``SOURCE`` (or ``SOURCES``); ``diagnose.parsers.registry``
collects them. Helper modules of a kind (``vllm_signals``, ``bench_console``) declare none."""
