"""Messages of CANN's error-code catalogs (``error_code.json``): each entry pairs a code (``EJ0002``) with the
printf format the error manager fills and prints after it (``The network port is down.Suggest: %s``). Such a
line names its code first, so the entry is a site with that code; the catalog's line of the code is its line.
"""

from __future__ import annotations

import json
from typing import Iterator

from diagnose.knowledge.harvest.format_strings import printf
from diagnose.knowledge.harvest.pyextract import MIN_LITERAL, Found
from diagnose.knowledge.templates import literal_length, render

CATALOG_NAME = "error_code.json"


def extract(text: str) -> Iterator[Found]:
    """Every coded message of a catalog; a file that is not one yields nothing."""
    try:
        data = json.loads(text)
    except ValueError:
        return
    items = data.get("error_info_list", []) if isinstance(data, dict) else []
    for item in items:
        code, message = item.get("ErrCode"), item.get("ErrMessage")
        if not isinstance(code, str) or not isinstance(message, str):
            continue
        pieces = printf(message)
        if literal_length(pieces) < MIN_LITERAL:
            continue
        at = text.find(f'"{code}"')
        template, holes = render(pieces)
        yield Found("ERROR", template, holes, item.get("errTitle", ""), text.count("\n", 0, at) + 1, code)
