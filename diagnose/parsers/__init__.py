"""One module per source kind. A parser maps a lines frame to (records, signals); see diagnose.model. Each
module declares its kind once (``SOURCE``, a ``diagnose.parsers.kind.SourceKind``); ``registry`` collects
them."""
