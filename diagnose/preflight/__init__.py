"""Preflight: check a model directory and a launch configuration before the service starts.

The flow mirrors the log pipeline. ``modelcard`` reads the model's small JSON files (metadata only, never
``.safetensors`` data), ``launch`` reads the launch command (a ``vllm serve`` command line or script, the
``non-default args`` line vLLM prints, or a MindIE ``config.json``), and ``checks`` turns both into *facts*:
one ``key = value  # how it was computed`` line each. Facts are an input kind of their own (``preflight``,
``diagnose.parsers.kinds.preflight_facts``): a run takes them as values (``factsource``), a facts file written
by ``--facts`` or a rule's fixture is read as text into the same records, so the checks themselves are ordinary
rule files with fixtures (rules/mtp, rules/quantization, rules/config, rules/kv-cache with
``sources = ["preflight"]``).
``command`` is ``diagnose preflight``; ``tap`` finds the same inputs inside a log bundle for ``diagnose PATH``.
"""

KIND = "preflight"
