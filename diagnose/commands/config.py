"""The configuration file: a team's defaults for ``diagnose check`` and ``diagnose rules list``.

Where it is found (as ruff, sqlfluff and shellcheck look for theirs): in the working directory, then in each
folder above it, up to the file system root or the first folder that holds ``.git`` (the repository root),
whichever comes first. In each folder ``.diagnose.toml`` comes before ``pyproject.toml``, and a
``pyproject.toml`` counts only when it has a ``[tool.diagnose]`` table. ``--config FILE`` names the file (a
``pyproject.toml`` is read from its ``[tool.diagnose]`` table, any other file from its top level);
``--no-config`` reads none.

    # .diagnose.toml (in pyproject.toml the same keys go under [tool.diagnose])
    fail-on = "warning"
    fail-on-unrecognised = true            # errors no rule explains fail even a run that did not end abnormally
    select = ["ALL"]
    ignore = ["PRF", "MTP004"]
    rules = ["ci/diagnose-rules"]          # extra rule folders, relative to this file
    lang = "zh"
    output-lang = { sarif = "en", html = "zh" }   # one format's language; lang is the others'
    budget = { max_file_bytes = "8G", max_members = 500000 }

    [[suppress]]                           # a finding: rule id or name, optionally narrowed
    rule = "KV005"
    reason = "the bench cluster runs with a small KV pool on purpose"
    node = "bench-*"                       # optional: node globs (a string or a list)
    path = "node-*/vllm-serve*.log"        # optional: path globs (a string or a list)

    [[suppress]]                           # an unrecognised-error signature, as printed; * = any text
    signature = "[WARNING] ASCENDCL(<N>,python): * deprecated"
    reason = "CANN 8.0 prints it on every start; harmless"

Command-line options win over the file: ``--fail-on``, ``--lang``, each ``--output-lang FORMAT=`` and each
``--budget KEY=`` replace the file's value (a format named in ``output-lang``, by the file or the command
line, is said in that language whatever ``--lang`` says: the one language is the default of the others); ``--rules`` adds folders to the file's; ``--select`` starts a new selection (the file's
``select`` and ``ignore`` no longer apply) and ``--ignore`` takes rules out of whatever is selected (see
engine/rule_selection.py). Unknown keys and wrong values are errors naming the file and the key (exit 2).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose.bounded import SMALL_FILE, Malformed, NotRegular, read_capped, toml_loads
from diagnose.engine.selection import split_selectors
from diagnose.ingest.budget import parse_budget
from diagnose.model import SEVERITIES
from diagnose.analysis.suppression import Suppression
from diagnose.report.formats import names

FILE_NAMES = (".diagnose.toml", "pyproject.toml")
LANGS = ("en", "zh")
KEYS = ("fail-on", "fail-on-unrecognised", "select", "ignore", "rules", "lang", "output-lang", "budget", "suppress")
SUPPRESS_KEYS = ("rule", "signature", "reason", "path", "node")


class ConfigError(ValueError):
    """Every problem of one configuration file, each as ``file: key: message``."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


@dataclass(frozen=True)
class FileConfig:
    """What the configuration file sets; None / empty: not set. ``path`` is None without a file."""

    path: Path | None = None
    fail_on: str | None = None
    fail_on_unrecognised: bool | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    rule_dirs: tuple[Path, ...] = ()
    lang: str | None = None
    output_lang: tuple[tuple[str, str], ...] = ()  # (format, language), as --output-lang FORMAT=LANG gives them
    budget: tuple[str, ...] = ()  # KEY=VALUE items, as --budget takes them
    suppressions: tuple[Suppression, ...] = ()

    @property
    def origin(self) -> str:
        return str(self.path) if self.path else "the configuration"


def discover(start: Path | None = None) -> Path | None:
    """The configuration file that applies in ``start`` (default: the working directory), or None."""
    try:
        here = (start or Path.cwd()).resolve()
    except OSError:  # the working directory was removed under us: there is nothing to find
        return None
    for folder in (here, *here.parents):
        for name in FILE_NAMES:
            candidate = folder / name
            # A link or a FIFO under a config name is found too, and refused by load() with its name (exit 2).
            if (candidate.is_file() or (os.path.lexists(candidate) and not candidate.is_dir())) and (
                    name != "pyproject.toml" or _has_table(candidate)):
                # relative to the working directory: reports name it without the machine's folders
                return Path(os.path.relpath(candidate)) if start is None else candidate
        if (folder / ".git").exists():  # the repository root: a file above it belongs to something else
            return None
    return None


def _has_table(pyproject: Path) -> bool:
    try:
        text = read_capped(pyproject, SMALL_FILE, follow=True).decode("utf-8")
    except NotRegular:
        return True  # a FIFO, a device or a huge file under that name: load() refuses it with its name
    except (OSError, UnicodeDecodeError):
        return False
    if "tool.diagnose" not in text and "[tool]" not in text:  # cheap: most pyproject.toml files are not ours
        return False
    try:
        data = toml_loads(text)
    except Malformed:
        return "[tool.diagnose" in text  # ours but broken: load() reports where
    tool = data.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("diagnose"), dict)


def find(config: str | None = None, no_config: bool = False, start: Path | None = None) -> FileConfig:
    """The configuration that applies: ``--config FILE``, else the discovered file, else none."""
    if no_config:
        return FileConfig()
    path = Path(config) if config else discover(start)
    return load(path) if path else FileConfig()


def load(path: Path) -> FileConfig:
    """Read and check one configuration file; raises ConfigError listing every problem."""
    try:  # bounded (diagnose/bounded.py): a regular file of at most SMALL_FILE bytes, nested at most MAX_DEPTH
        data = toml_loads(read_capped(path, SMALL_FILE, follow=True).decode("utf-8"), "invalid TOML")
    except NotRegular as exc:
        raise ConfigError([f"{path}: cannot read: {exc} (a configuration file is a regular file of at most "
                           f"{SMALL_FILE} bytes)"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}"]) from None
    except Malformed as exc:
        raise ConfigError([f"{path}: {exc}"]) from None
    prefix = ""
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("diagnose") if isinstance(data.get("tool"), dict) else None
        if not isinstance(table, dict):
            raise ConfigError([f"{path}: no [tool.diagnose] table"])
        data, prefix = table, "tool.diagnose."
    return _Reader(path, prefix).read(data)


class _Reader:
    """Checks the keys of one file, collecting every problem before it raises."""

    def __init__(self, path: Path, prefix: str):
        self.path, self.prefix = path, prefix
        self.errors: list[str] = []

    def fail(self, key: str, message: str) -> None:
        self.errors.append(f"{self.path}: {self.prefix}{key}: {message}")

    def unknown(self, keys, allowed, where: str = "") -> None:
        for key in sorted(set(keys) - set(allowed)):
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
            self.fail(f"{where}{key}", f"unknown key{hint}")

    def strings(self, value: Any, key: str) -> tuple[str, ...] | None:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a string or a list of strings")
            return None
        return tuple(value)

    def read(self, data: dict[str, Any]) -> FileConfig:
        self.unknown(data, KEYS)
        values: dict[str, Any] = {"path": self.path}
        if "fail-on" in data:
            if data["fail-on"] in SEVERITIES:
                values["fail_on"] = data["fail-on"]
            else:
                self.fail("fail-on", f"{data['fail-on']!r} is not one of {', '.join(SEVERITIES)}")
        if "fail-on-unrecognised" in data:
            if isinstance(data["fail-on-unrecognised"], bool):
                values["fail_on_unrecognised"] = data["fail-on-unrecognised"]
            else:
                self.fail("fail-on-unrecognised", "must be true or false")
        for key in ("select", "ignore"):
            if key in data:
                items = self.strings(data[key], key)
                if items is not None:
                    values[key] = split_selectors(items)
        if "rules" in data:
            values["rule_dirs"] = self.rule_dirs(data["rules"])
        if "lang" in data:
            if data["lang"] in LANGS:
                values["lang"] = data["lang"]
            else:
                self.fail("lang", f"{data['lang']!r} is not one of {', '.join(LANGS)}")
        if "output-lang" in data:
            values["output_lang"] = self.output_lang(data["output-lang"])
        if "budget" in data:
            values["budget"] = self.budget(data["budget"])
        if "suppress" in data:
            values["suppressions"] = self.suppressions(data["suppress"])
        if self.errors:
            raise ConfigError(self.errors)
        return FileConfig(**values)

    def rule_dirs(self, value: Any) -> tuple[Path, ...]:
        out = []
        for item in self.strings(value, "rules") or ():
            folder = Path(item).expanduser()
            folder = folder if folder.is_absolute() else self.path.parent / folder
            if not folder.exists():
                self.fail("rules", f"{item!r}: no such rule file or folder (relative to {self.path.parent})")
            out.append(folder)
        return tuple(out)

    def output_lang(self, value: Any) -> tuple[tuple[str, str], ...]:
        if not isinstance(value, dict):
            self.fail("output-lang", "must be a table, e.g. output-lang = { html = \"zh\", sarif = \"en\" }")
            return ()
        out = []
        for fmt, lang in value.items():
            if fmt not in names():
                self.fail(f"output-lang.{fmt}", f"unknown format (formats: {', '.join(names())})")
            elif lang not in LANGS:
                self.fail(f"output-lang.{fmt}", f"{lang!r} is not one of {', '.join(LANGS)}")
            else:
                out.append((fmt, lang))
        return tuple(out)

    def budget(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, dict):
            self.fail("budget", "must be a table, e.g. budget = { max_file_bytes = \"8G\" }")
            return ()
        items = []
        for key, size in value.items():
            if isinstance(size, bool) or not isinstance(size, (str, int, float)):
                self.fail(f"budget.{key}", "must be a number or a size like \"8G\"")
                continue
            try:
                parse_budget([f"{key}={size}"])
            except ValueError as exc:
                self.fail(f"budget.{key}", str(exc))
                continue
            items.append(f"{key}={size}")
        return tuple(items)

    def suppressions(self, value: Any) -> tuple[Suppression, ...]:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.fail("suppress", "must be an array of tables: [[suppress]] with rule or signature, and reason")
            return ()
        out = []
        for i, entry in enumerate(value):
            where = f"suppress[{i}]"
            before = len(self.errors)
            self.unknown(entry, SUPPRESS_KEYS, f"{where}.")
            reason = entry.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                self.fail(f"{where}.reason", "missing: every suppression says why (reason = \"...\")")
            rule, signature = entry.get("rule"), entry.get("signature")
            if (rule is None) == (signature is None):
                self.fail(where, "give exactly one of `rule` (a rule id or name) or `signature` (as printed)")
            for key, given in (("rule", rule), ("signature", signature)):
                if given is not None and (not isinstance(given, str) or not given.strip()):
                    self.fail(f"{where}.{key}", "must be a non-empty string")
            paths = self.strings(entry["path"], f"{where}.path") if "path" in entry else ()
            nodes = self.strings(entry["node"], f"{where}.node") if "node" in entry else ()
            if signature is not None and (paths or nodes):
                self.fail(where, "`path` and `node` narrow a rule suppression; a signature is the same everywhere")
            if len(self.errors) == before:
                out.append(Suppression(reason=reason.strip(), rule=rule.strip() if rule else None,
                                       signature=signature if signature else None, paths=paths or (),
                                       nodes=nodes or (), origin=f"{self.path}: {self.prefix}{where}"))
        return tuple(out)
