"""From lines to records and signals. ``kinds/`` holds one module per source kind (each declares its
``SOURCE``, a ``diagnose.parsers.kind.SourceKind``); ``families/`` the line families any kind may carry (CANN
error blocks, tracebacks, out-of-memory numbers); ``registry`` collects the kinds; ``lineframe`` the pieces
every parser uses. A parser maps a lines frame to (records, signals); see diagnose.model."""
