"""Reading the values of launch flags the way vLLM reads them, and saying which one could not be read.

A value that does not parse is never taken as "not set": a ``--speculative-config`` whose JSON lost its
quotes in the shell (``{method:deepseek_mtp,num_speculative_tokens:1}``) would otherwise read as
"speculative decoding off", and every check after it would be about a launch that does not exist. Each
reader returns ``(value, problem)``; the problem names the flag and what was wrong with its value.

vLLM's own parsing (vllm/engine/arg_utils.py, vllm/utils/argparse_utils.py): JSON-valued flags go through
``json.loads``; ``--max-model-len`` (and token counts) take ``human_readable_int`` (``16k`` = 16000, ``16K`` =
16384; ``auto`` / ``-1``: the largest length the memory allows).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
NO_VALUE = "has no value (the next word is another flag, or the line ends)"


def flag_name(key: str, cli: bool) -> str:
    """``--speculative-config`` for a command line, ``speculative_config`` for vLLM's args dict."""
    return "--" + key.replace("_", "-") if cli else key


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= 120 else text[:119] + "…")


def read_int(value: Any, name: str, minimum: int = 1) -> tuple[int | None, str | None]:
    if value is None:
        return None, None
    if value is True:
        return None, f"{name} {NO_VALUE}"
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None, f"{name} {_shown(value)} is not a whole number"
    if number < minimum:
        return None, f"{name} {number} is below {minimum}"
    return number, None


def read_length(value: Any, name: str) -> tuple[int | None, str | None]:
    """A token count as vLLM takes it: ``16384``, ``16k``, ``16K``; ``auto`` and ``-1`` leave it to vLLM."""
    if value is None:
        return None, None
    if value is True:
        return None, f"{name} {NO_VALUE}"
    text = str(value).strip()
    if text.lower() == "auto" or text == "-1":
        return None, None
    m = _HUMAN_INT.fullmatch(text)
    if m:
        number, suffix = m.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix]), None
        if "." not in number:
            return int(number) * _BINARY[suffix], None
    return read_int(text, name)


def read_fraction(value: Any, name: str) -> tuple[float | None, str | None]:
    """A share of device memory: above 0, at most 1."""
    if value is None:
        return None, None
    if value is True:
        return None, f"{name} {NO_VALUE}"
    try:
        number = float(str(value).strip())
    except (TypeError, ValueError):
        return None, f"{name} {_shown(value)} is not a number"
    if not 0 < number <= 1:
        return None, f"{name} {number:g} is not a fraction between 0 and 1"
    return number, None


def read_object(value: Any, name: str) -> tuple[dict | None, str | None]:
    """A JSON object (or, in vLLM's args dict, a dict already). A Python dict literal is taken as well: it
    says what was meant, though vLLM itself wants JSON."""
    if value is None:
        return None, None
    if isinstance(value, dict):
        return value, None
    if value is True:
        return None, f"{name} {NO_VALUE}"
    text = str(value).strip()
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            hint = _quote_hint(name, text)
            return None, f"{name} {_shown(text)} is not JSON" + (hint or f" ({exc})")
    if not isinstance(parsed, dict):
        return None, f"{name} {_shown(text)} is not a JSON object"
    return parsed, None


def _quote_hint(name: str, text: str) -> str:
    """When the shell ate the quotes (``{method:mtp,num_speculative_tokens:1}``), show the value quoted."""
    if '"' in text or not text.startswith("{"):
        return ""
    keyed = re.sub(r"([{,]\s*)([A-Za-z_][\w.\-]*)\s*:", r'\1"\2":', text)
    quoted = re.sub(r':\s*([A-Za-z_][\w.\-/]*)\s*(?=[,}])',
                    lambda m: ":" + (m.group(1) if m.group(1) in ("true", "false", "null") else f'"{m.group(1)}"'),
                    keyed)
    try:
        json.loads(quoted)
    except ValueError:
        return ""
    flag = name if name.startswith("--") else "--" + name.replace("_", "-")
    return f"; the shell removed its quotes: write {flag} '{quoted}'"
