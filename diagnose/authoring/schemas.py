"""docs/schemas.md and the JSON report's JSON Schema, generated from the typed structs themselves.

The structs in ``diagnose/model/`` are the contract; a hand-written page drifts from them. So the page is built
from what msgspec knows of each struct (fields, types, defaults), the struct's docstring and the comment written
beside (or just above) each field, and the JSON Schema from ``msgspec.json.schema_components`` with two
corrections for what the JSON report really holds: ``Words`` (diagnose/messages.py) are said as strings in the
output's language, and times are ``YYYY-MM-DD HH:MM:SS[.ffffff]``. Fields a struct keeps ``INTERNAL`` are not in
the report and not on the page. ``tests/test_schemas_doc.py`` fails when docs/schemas.md is stale and checks a
real report against the schema.

The fleet dataset's tables are handed in by the command (``diagnose rules schemas``): they live in ``fleet/``,
a room on this one's layer, which this module does not import.
"""

from __future__ import annotations

import ast
import enum
import inspect
import io
import json
import textwrap
import tokenize
import types
import typing
from datetime import datetime
from types import ModuleType
from typing import Any, Iterator

import msgspec

from diagnose import __version__
from diagnose.messages import Words
from diagnose.model import Document, frames
from diagnose.model.expertload import ExpertLoadResult
from diagnose.model.live import LiveEvent

TIME_PATTERN = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$"
_DEFS = "#/$defs/{name}"


# --- what a struct says of itself -------------------------------------------------------------------------------

def _internal(cls: type) -> tuple[str, ...]:
    return tuple(getattr(cls, "INTERNAL", ()))


def field_comments(cls: type) -> dict[str, str]:
    """The comment of each field in ``cls``'s source: the one on its line, after the lines of comment just
    above it (a comment that heads a group of fields, ``# Not in the JSON report``, is one of those, and is
    left out when the field is internal)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    lines = source.splitlines()
    out: dict[str, str] = {}
    body = ast.parse(source).body[0]
    for node in getattr(body, "body", []):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above, n = [], node.lineno - 1
        while n >= 1 and lines[n - 1].strip().startswith("#"):
            above.insert(0, comments.get(n, ""))
            n -= 1
        beside = [comments[i] for i in range(node.lineno, (node.end_lineno or node.lineno) + 1) if i in comments]
        text = " ".join(t for t in above + beside if t)
        if text:
            out[node.target.id] = text
    return out


def _doc(cls: type) -> str:
    """The struct's own docstring (not an inherited one), as one paragraph per blank-line block."""
    doc = cls.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


# --- types in words ---------------------------------------------------------------------------------------------

def _anchor(cls: type) -> str:
    return cls.__name__.lower()


def _args(t: Any) -> tuple[Any, ...]:
    return typing.get_args(t)


def _is_struct(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, msgspec.Struct)


def type_words(t: Any) -> str:
    """A field's type as the JSON reader sees it: ``string``, ``integer | null``, ``list of [Finding](#finding)``
    (``Words``, and ``Words | str``, are *text*: said in the output's language)."""
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null", datetime: "time",
              Any: "any"}
    if t in simple:
        return simple[t]
    if isinstance(t, type) and issubclass(t, Words):
        return "text"
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return " \\| ".join(f'`"{m.value}"`' for m in t)
    if _is_struct(t):
        return f"[{t.__name__}](#{_anchor(t)})"
    origin = typing.get_origin(t)
    if origin in (list, tuple, set, frozenset):
        items = [a for a in _args(t) if a is not Ellipsis]
        return "list of " + (" \\| ".join(dict.fromkeys(type_words(a) for a in items)) or "any")
    if origin is dict:
        key, value = _args(t)
        return f"object of {type_words(key)} → {type_words(value)}"
    if origin in (typing.Union, types.UnionType):
        words = [type_words(a) for a in _args(t) if a is not msgspec.UnsetType]
        if "text" in words:
            words = [w for w in words if w != "string"]
        return " \\| ".join(dict.fromkeys(words))
    return getattr(t, "__name__", str(t))


def _structs_in(t: Any) -> Iterator[type]:
    if _is_struct(t):
        yield t
    for arg in _args(t):
        yield from _structs_in(arg)


def reachable(root: type) -> list[type]:
    """Every struct the root holds, the root first, then in the order a reader of its fields meets them."""
    seen: list[type] = []
    queue = [root]
    while queue:
        cls = queue.pop(0)
        if cls in seen:
            continue
        seen.append(cls)
        internal = _internal(cls)
        for f in msgspec.structs.fields(cls):
            if f.name not in internal:
                queue.extend(_structs_in(f.type))
    return seen


def _always(f: msgspec.structs.FieldInfo) -> bool:
    """Whether the field is always written: a field that may be ``UNSET`` is left out when it is."""
    return f.default is not msgspec.UNSET and msgspec.UnsetType not in _args(f.type) and f.type is not msgspec.UnsetType


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def struct_section(cls: type) -> list[str]:
    out = [f'<a id="{_anchor(cls)}"></a>', f"### {cls.__name__}", ""]
    config = cls.__struct_config__
    if config.tag_field is not None:
        out += [f'Tagged: `{config.tag_field}` is `"{config.tag}"`.', ""]
    if doc := _doc(cls):
        out += [_md(doc), ""]
    comments = field_comments(cls)
    out += ["| field | type | present | meaning |", "|---|---|---|---|"]
    internal = _internal(cls)
    for f in msgspec.structs.fields(cls):
        if f.name in internal:
            continue
        present = "always" if _always(f) else "when set"
        out.append(f"| `{f.encode_name}` | {type_words(f.type)} | {present} | {_cell(_md(comments.get(f.name, '')))} |")
    return out + [""]


# --- the JSON Schema ---------------------------------------------------------------------------------------------

def _hook(t: type) -> dict[str, Any]:
    if isinstance(t, type) and issubclass(t, Words):
        return {"type": "string", "description": "said in the output's language (--lang)"}
    raise NotImplementedError


def _time_property(t: Any) -> dict[str, Any] | None:
    """The schema of a time field as the report writes it (``builtins``: ``YYYY-MM-DD HH:MM:SS[.ffffff]``,
    not RFC 3339), or None for a field that holds no time."""
    args = _args(t)
    if t is not datetime and datetime not in args:
        return None
    time = {"type": "string", "pattern": TIME_PATTERN}
    return {"anyOf": [time, {"type": "null"}]} if type(None) in args else time


def json_schema(root: type = Document) -> dict[str, Any]:
    """The JSON Schema (2020-12) of what ``root`` is written as: internal fields left out, a field required
    when it is always written. Unknown fields are allowed: fields are only ever added."""
    (schema,), defs = msgspec.json.schema_components([root], schema_hook=_hook, ref_template=_DEFS)
    by_name = {cls.__name__: cls for cls in reachable(root)}
    for name, body in defs.items():
        cls = by_name.get(name)
        if cls is None or body.get("type") != "object":
            continue
        internal = _internal(cls)
        for field in internal:
            body.get("properties", {}).pop(field, None)
        for f in msgspec.structs.fields(cls):
            if f.name not in internal and (time := _time_property(f.type)) is not None:
                body["properties"][f.encode_name] = time
        always = [f.encode_name for f in msgspec.structs.fields(cls) if f.name not in internal and _always(f)]
        if cls.__struct_config__.tag_field is not None:
            always.insert(0, cls.__struct_config__.tag_field)
        body["required"] = always
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "$defs": defs}


# --- tables -----------------------------------------------------------------------------------------------------

def _dtype(dtype: Any) -> str:
    return str(dtype).replace("String", "str")


def dict_comments(module: ModuleType, name: str) -> dict[str, str]:
    """The comment lines just above each key of the dict literal ``name`` in ``module``'s source."""
    source = inspect.getsource(module)
    comments = {t.start[0]: t.string.lstrip("#").strip()
                for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT}
    out: dict[str, str] = {}
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if not (isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict)):
            continue
        taken: set[int] = set()
        for key in node.value.keys:
            if not isinstance(key, ast.Constant):
                continue
            above, n = [], key.lineno - 1
            while n in comments and n not in taken:
                above.insert(0, comments[n])
                taken.add(n)
                n -= 1
            if above:
                out[key.value] = " ".join(above)
    return out


def tables_section(fleet: ModuleType) -> list[str]:
    """The fleet dataset's tables (``fleet/schema.py`` ``TABLES``): one Parquet table each, its columns; the
    records and signals (and the series, the signals' compact twin) with the meanings frames.py gives."""
    comments = dict_comments(fleet, "TABLES")
    meanings = frame_columns(frames.__doc__ or "")
    meanings["series"] = {**meanings.get("records", {}), **meanings.get("signals", {})}
    out: list[str] = []
    for name, columns in fleet.TABLES.items():
        out += [f"### `{name}`", ""]
        if name in comments:
            out += [_md(comments[name][0].upper() + comments[name][1:]) + ".", ""]
        known = meanings.get(name, {})
        if known:
            out += ["| column | type | meaning |", "|---|---|---|"]
            out += [f"| `{col}` | {_dtype(dtype)} | {_cell(_md(known.get(col, '')))} |"
                    for col, dtype in columns.items()]
        else:
            out += ["| column | type |", "|---|---|"]
            out += [f"| `{col}` | {_dtype(dtype)} |" for col, dtype in columns.items()]
        out.append("")
    return out


def _md(text: str) -> str:
    """reStructuredText literals (the docstrings' ``x``) as Markdown's."""
    return text.replace("``", "`")


def frame_columns(doc: str) -> dict[str, dict[str, str]]:
    """The column meanings a frames docstring lays out (diagnose/model/frames.py): ``{frame: {column:
    meaning}}``, a block per frame headed by its name at the margin, a column a line (name, type, meaning),
    longer meanings continued on deeper-indented lines."""
    out: dict[str, dict[str, str]] = {}
    frame, last = None, None
    for line in doc.splitlines():
        if line and not line.startswith(" "):
            frame = line.split(",")[0].split()[0] if line.split() else None
            last = None
            if frame in ("records", "signals"):
                out[frame] = {}
            else:
                frame = None
            continue
        if frame is None or not line.strip():
            continue
        parts = line.split(None, 2)
        if line.startswith("    ") and not line.startswith("     ") and len(parts) >= 2 and parts[0].isidentifier():
            last = parts[0]
            out[frame][last] = parts[2] if len(parts) == 3 else ""
        elif last is not None:
            out[frame][last] += " " + line.strip()
    return out


# --- the page ---------------------------------------------------------------------------------------------------

_INTRO = """\
# Schemas

<!-- Generated from the structs in diagnose/model/ and the tables of diagnose/fleet/schema.py by
`diagnose rules schemas -o docs/schemas.md`; tests/test_schemas_doc.py fails when this page is stale. -->

What diagnose writes for machines, as the code declares it: the JSON report, the live events, the expert-load
result and the fleet dataset's tables. Each struct's table gives its fields in the order they are written, the
type a JSON reader sees, whether the field is always written or only when it has a value, and what it means.
A *text* is said in the output's language (`--lang en|zh`); a *time* is the node's wall clock,
`YYYY-MM-DD HH:MM:SS[.ffffff]`."""

_REPORT = """\
## JSON report (`--format json`)

The document `diagnose PATH... --format json` writes (`diagnose.model.Document`). **Stable: fields are only ever
added**, never renamed, retyped or removed, so a reader should ignore fields it does not know. `version` names
the diagnose release that wrote it; this page describes the document of diagnose {version}. Findings are in
ranked order (the most likely root cause first); a field shown *when set* is left out otherwise. The JSON Schema
at the end of this page checks a report (`diagnose rules schemas --json-schema` prints it)."""

_LIVE = """\
## Live events (`diagnose watch --json-lines`)

One JSON object a line, a finding opened or resolved (`diagnose.model.live.LiveEvent`): the event's `seq`,
`event` and `at`, then the fields of its finding (`Tracked`) side by side, except `refreshed`; `title` and
`summary` are said as text."""

_LOAD = """\
## Expert-load result (`diagnose expert-load --format json`)

The typed result (`diagnose.model.expertload.ExpertLoadResult`); the JSON adds the words the reader needs
beside the numbers (`lang`, each file's and window's `why`, the counting `rule`, the placements' `label`s,
`notes` and `refused` said as text)."""

_FLEET = """\
## Fleet dataset (`diagnose extract`, schema version {version})

One Parquet table per name, hive-partitioned by date, cluster and node (docs/fleet.md). A dataset written with
another schema version is refused with both versions named."""


def schemas_markdown(fleet: ModuleType) -> str:
    """The whole of docs/schemas.md; ``fleet`` is diagnose.fleet.schema (its ``TABLES`` and ``SCHEMA_VERSION``)."""
    out = [_INTRO, "", _REPORT.format(version=__version__), ""]
    out += [line for cls in reachable(Document) for line in struct_section(cls)]
    out += [_LIVE, ""]
    out += [line for cls in reachable(LiveEvent) for line in struct_section(cls)]
    out += [_LOAD, ""]
    out += [line for cls in reachable(ExpertLoadResult) for line in struct_section(cls)]
    out += [_FLEET.format(version=fleet.SCHEMA_VERSION), ""]
    out += tables_section(fleet)
    out += ["## JSON Schema of the report", "", "```json", json.dumps(json_schema(Document), indent=1), "```", ""]
    return "\n".join(out)
