"""Which node a file belongs to, read from its path."""

from __future__ import annotations

import re
from diagnose.model.memberpath import segments

# Folder names that collectors and people use for one machine of a cluster.
_NODE_DIR = re.compile(
    r"""^(?:
        (?:node|host|worker|server|machine)(?:[-_.][A-Za-z0-9][\w.-]*|\d[\w.-]*)       # node-1, host_a, worker3
      | \d{1,3}(?:\.\d{1,3}){3}                                                        # 10.0.0.12
      | \d{1,3}(?:_\d{1,3}){3}                                                         # 10_0_0_12
      | [A-Za-z][\w-]*?-(?:node|host)[-_]?\d+                                            # dsr1-node-0
    )$""",
    re.IGNORECASE | re.VERBOSE,
)


def node_from_path(path: str) -> str | None:
    """The last folder (or archive member folder) of ``path`` that names a node, if any."""
    parts = segments(path)[:-1]
    for part in reversed(parts):
        name = part
        for suffix in (".tar.gz", ".tgz", ".tar", ".zip"):
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
        if _NODE_DIR.match(name):
            return name
    return None
