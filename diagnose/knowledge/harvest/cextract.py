"""Messages a C/C++ source can print: the string literals of its error and warning macros.

Native code logs through macros (``ASCEND_LOGE``, ``HCCL_ERROR``, ``RT_LOG(RT_LOG_ERROR, ...)``,
``TORCH_CHECK(cond, "...", x)``, ``REPORT_INNER_ERROR("E19999", ...)``): rather than a list of names that goes
stale, a call counts when its name reads like an error, warning, check or report and one of its arguments is a
string literal. The level comes from a level argument when there is one (``RT_LOG_WARNING``), else from the
name (``..._LOGW``/``..._WARN...`` a warning; info, debug and event macros are skipped). A literal with printf
conversions is a printf format; without one, the macros of the torch family stream their arguments, so the
non-literal arguments after the message become text holes. An error-code argument (``"E19999"``,
``ErrCode::PARAM``) is kept as the site's code.

A small tokenizer blanks comments and the insides of literals first, so braces and parentheses are counted on
code alone; enclosing functions are found from ``name(...) {`` heads at the brace depth where they open.
"""

from __future__ import annotations

import bisect
import re
from typing import Iterator

from diagnose.knowledge.harvest.format_strings import has_printf, printf
from diagnose.knowledge.harvest.pyextract import MIN_LITERAL, Found
from diagnose.knowledge.templates import Hole, Piece, literal_length, merge, render

_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_SITE_NAME = re.compile(r"LOG|ERR|WARN|CHECK|REPORT|FAIL|THROW|RAISE|FATAL|ASSERT|PANIC|ABORT", re.I)
_QUIET_NAME = re.compile(r"INFO|DEBUG|TRACE|EVENT|LOGI$|LOGD$|LOGV$|LOG_I$|LOG_D$|_I$|_D$|VLOG|EXPECT_|STUB", re.I)
_LEVEL_ARG = re.compile(r"^\s*(?:\w+_)?(?:LOG_)?(ERROR|ERR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE|FATAL|CRITICAL)\s*$")
_STREAM_FAMILY = re.compile(r"^(?:TORCH_|AT_|C10_|REDUCER_CHECK)")
_CODE_LITERAL = re.compile(r"^[A-Z]{1,2}[A-Z0-9]?\d{4,6}$")
_CODE_IDENT = re.compile(r"\bErrCode::(\w+)")
_CODE_SUFFIX = re.compile(r"^\s*(?:PTA_ERROR|OPS_ERROR|DIST_ERROR|PROF_ERROR|GRAPH_ERROR)\s*\(")
_PRI = re.compile(r"^PRI([diouxX])(?:8|16|32|64|MAX|PTR)$")
# Names and punctuation that wrap or join text without adding to it: ``std::string("a") + x`` is "a" then x.
_WRAPPERS = frozenset({"std", "string", "c_str", "str", "data", "const", "char", "static_cast", "u8"})
_PUNCT = " \t\n\\()+<:>,*&.;=-"  # a backslash ends each line of a macro body
_KEYWORDS = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "defined", "do", "else"})
_QUALIFIERS = re.compile(r"(?:\s*(?:const|noexcept|override|final|->\s*[\w:<>*&]+))+$")
_IDENT_END = re.compile(r"([A-Za-z_~][\w:~]*)\s*$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "", "\\": "\\", '"': '"', "'": "'", "a": "", "b": "", "f": "",
            "v": "", "?": "?"}


def blank(source: str) -> str:
    """``source`` with comments and the insides of string and char literals replaced by spaces (newlines kept),
    so that offsets and line numbers still agree with the original."""
    out = list(source)
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "/" and source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif c == "/" and source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in source[i:j]]
            i = j
        elif c in "\"'":
            if c == '"' and i and source[i - 1] == "R" and source.startswith('R"', i - 1):
                close = source.find('(', i)
                tag = source[i + 1:close] if close > 0 else ""
                j = source.find(")" + tag + '"', close)
                j = n if j < 0 or close < 0 else j + len(tag) + 2
            else:
                j = i + 1
                while j < n and source[j] != c and source[j] != "\n":
                    j += 2 if source[j] == "\\" else 1
                j = min(j + 1, n)
            out[i + 1:j - 1] = [ch if ch == "\n" else " " for ch in source[i + 1:j - 1]]
            i = j
        else:
            i += 1
    return "".join(out)


def _unescape(body: str) -> str:
    def sub(m: re.Match[str]) -> str:
        s = m.group(1)
        if s[0] == "x" or s[0].isdigit():
            return ""  # byte escapes: control characters, not text a reader sees
        return _ESCAPES.get(s[0], s[0])
    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", sub, body)


def _arguments(code: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of the top-level arguments of the call whose ``(`` is at ``start``, and the end offset."""
    depth, spans, begin = 0, [], start + 1
    for i in range(start, min(len(code), start + 20000)):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                spans.append((begin, i))
                return spans, i
        elif c == "," and depth == 1:
            spans.append((begin, i))
            begin = i + 1
        elif c == ";" and depth <= 1:
            break
    return [], start


_TOKEN = re.compile(r'(?:u8|[uUL])?"|[A-Za-z_]\w*')


def _arg_pieces(source: str, code: str, lo: int, hi: int) -> tuple[list[Piece], bool]:
    """An argument as pieces: its string literals as text (adjacent ones joined, ``PRIu64`` read as ``lu``),
    anything else as a text hole; and whether it held a literal at all."""
    if "?" in code[lo:hi]:  # a conditional picks one of its literals: the argument is a value, not text
        return [Hole("s")], False
    pieces: list[Piece] = []
    has_literal, other = False, False
    i = lo
    while i < hi:
        m = _TOKEN.search(code, i, hi)
        if not m:
            other = other or bool(code[i:hi].strip(_PUNCT))
            break
        if code[i:m.start()].strip(_PUNCT):
            other = True
        if m.group().endswith('"'):
            q = m.end() - 1
            end = code.find('"', q + 1, hi)
            if end < 0:
                break
            if other:
                pieces.append(Hole("s"))
                other = False
            pieces.append(_unescape(source[q + 1:end]))
            has_literal = True
            i = end + 1
        else:
            pri = _PRI.match(m.group())
            if pri:
                pieces.append("l" + pri.group(1))
            elif m.group() not in _WRAPPERS:
                other = True
            i = m.end()
    if other:
        pieces.append(Hole("s"))
    return merge(pieces), has_literal


class _Functions:
    """Enclosing function names by offset: each ``name(...) {`` head whose body encloses the offset."""

    def __init__(self, code: str) -> None:
        self.spans: list[tuple[int, int, str]] = []
        stack: list[tuple[int, str | None]] = []
        last = 0
        for m in re.finditer(r"[{};]", code):
            c, pos = m.group(), m.start()
            if c == "{":
                stack.append((pos, _head_name(code[last:pos])))
            elif c == "}" and stack:
                begin, name = stack.pop()
                if name:
                    self.spans.append((begin, pos, name))
            last = pos + 1

    def _innermost(self, offset: int) -> tuple[int, str]:
        best, size = (0, ""), None
        for begin, end, name in self.spans:
            if begin <= offset <= end and (size is None or end - begin < size):
                best, size = (begin, name), end - begin
        return best

    def at(self, offset: int) -> str:
        """The name of the function around ``offset`` ('' at file level)."""
        return self._innermost(offset)[1]

    def start(self, offset: int) -> int:
        """Where the body of the function around ``offset`` opens (0 at file level)."""
        return self._innermost(offset)[0]


def _head_name(segment: str) -> str | None:
    """The function a block opens when the code before its ``{`` reads ``name(...) [const] [noexcept]``."""
    seg = _QUALIFIERS.sub("", segment.rstrip()[-300:])
    if not seg.endswith(")"):
        return None
    depth = 0
    for i in range(len(seg) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(seg[i], 0)
        if depth == 0:
            m = _IDENT_END.search(seg[max(0, i - 200):i])
            if m and m.group(1).split("::")[-1] not in _KEYWORDS:
                return m.group(1)
            return None
    return None


def _level(name: str, args: list[str]) -> str | None:
    """ERROR or WARNING for a site, None for info/debug ones."""
    for arg in args[:2]:
        m = _LEVEL_ARG.match(arg)
        if m:
            word = m.group(1)
            return "WARNING" if word.startswith("WARN") else "ERROR" if word in ("ERROR", "ERR", "FATAL",
                                                                               "CRITICAL") else None
    if _QUIET_NAME.search(name):
        return None
    return "WARNING" if re.search(r"WARN|LOGW$|LOG_W$", name, re.I) else "ERROR"


def extract(source: str) -> Iterator[Found]:
    """Every error or warning message site of a C/C++ source."""
    code = blank(source)
    lines = [m.start() for m in re.finditer("\n", source)]
    functions: _Functions | None = None
    for m in _CALL.finditer(code):
        name = m.group(1)
        if not _SITE_NAME.search(name) or name in _KEYWORDS or not (name.isupper() or "_" in name):
            continue
        spans, _ = _arguments(code, m.end() - 1)
        if not spans:
            continue
        texts = [code[a:b] for a, b in spans]
        level = _level(name, texts)
        if level is None:
            continue
        found = _message(name, source, code, spans)
        if found is None or literal_length(found[0]) < MIN_LITERAL:
            functions = functions or _Functions(code)
            found = _indirect(source, code, spans, m.start(), functions.start(m.start())) or found
        if found is None:
            continue
        pieces, site_code = found
        if literal_length(pieces) < MIN_LITERAL:
            continue
        if functions is None:
            functions = _Functions(code)
        text, holes = render(pieces)
        yield Found(level, text, holes, functions.at(m.start()), bisect.bisect_right(lines, m.start()) + 1,
                    site_code)


def _message(name: str, source: str, code: str, spans: list[tuple[int, int]]) -> tuple[list[Piece], str] | None:
    """The message pieces of a site's arguments and its error code."""
    site_code = ""
    for a, b in spans:
        ident = _CODE_IDENT.search(code, a, b)
        if ident:
            site_code = "ErrCode::" + ident.group(1)
    for k, (a, b) in enumerate(spans):
        pieces, has_literal = _arg_pieces(source, code, a, b)
        if not has_literal:
            continue
        first = pieces[0] if pieces else ""
        if isinstance(first, str) and len(pieces) == 1 and _CODE_LITERAL.match(first):
            site_code = first
            continue
        fmt = "".join(p if not isinstance(p, Hole) else "%s" for p in pieces)
        if has_printf("".join(p for p in pieces if not isinstance(p, Hole))):
            return printf(fmt), site_code
        if _STREAM_FAMILY.match(name):
            streamed: list[Piece] = list(pieces)
            for a2, b2 in spans[k + 1:]:
                if _CODE_SUFFIX.match(code[a2:b2]):
                    continue
                more, _ = _arg_pieces(source, code, a2, b2)
                streamed.extend(more)
            return merge(streamed), site_code
        return pieces, site_code
    return None


_BARE = re.compile(r"\s*([A-Za-z_]\w*)(?:\s*\.\s*c_str\s*\(\s*\)|\s*\.\s*str\s*\(\s*\))?\s*$")


def _indirect(source: str, code: str, spans: list[tuple[int, int]], at: int,
              floor: int) -> tuple[list[Piece], str] | None:
    """A message built in a variable first (``auto msg = std::string("NPU out of memory...") + ...;`` or
    ``oss << "..." << x;``, then ``TORCH_CHECK(false, msg)``): the statements that build the variable, within
    the enclosing function before the site (at most a few thousand characters), joined in order."""
    for a, b in spans:
        bare = _BARE.match(code, a, b)
        if not bare:
            continue
        var = re.escape(bare.group(1))
        window = max(floor, at - 4000)
        pieces: list[Piece] = []
        for st in re.finditer(rf"\b{var}\s*(?:\+=|=(?!=)|<<|\()", code[window:at]):
            lo = window + st.end()
            hi = code.find(";", lo, at)
            if hi < 0:
                continue
            more, has_literal = _arg_pieces(source, code, lo, hi)
            if has_literal:
                pieces.extend(more)
        if pieces:
            return merge(pieces), ""
    return None
