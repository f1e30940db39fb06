"""Messages a Python module can print, read from its syntax tree (the code is parsed, never imported or run).

What counts as a message: ``raise X(msg)``, ``assert cond, msg``, a logger's ``error``/``warning``/
``exception``/``critical``/``fatal`` call (and vLLM's ``*_once`` variants), ``print(..., file=sys.stderr)`` and
``warnings.warn(msg, Category)``. The message expression becomes template pieces: a literal, an f-string (specs
and conversions typed), a ``%`` format (with a tuple, a dict or one value), a ``.format`` call, a concatenation
with ``+``, or a conditional of those (both branches kept). A message that is only a variable says nothing
about where it came from and is dropped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Iterator

from diagnose.knowledge.harvest.format_strings import brace, percent, spec_hole
from diagnose.knowledge.templates import Hole, Piece, literal_length, merge, render

# Receivers that are loggers: a bare name or an attribute of self/cls.
LOGGER_NAMES = frozenset({"logger", "log", "_logger", "LOGGER", "LOG", "_log", "logging", "_LOGGER", "LOGGING"})
# Logger methods and the level each one prints at; info and debug lines are not errors.
LOG_LEVELS = {"error": "ERROR", "exception": "ERROR", "critical": "CRITICAL", "fatal": "CRITICAL",
              "warning": "WARNING", "warn": "WARNING", "error_once": "ERROR", "warning_once": "WARNING",
              "warn_once": "WARNING"}
MAX_ALTERNATIVES = 4  # a message built from conditionals: at most this many variants kept
MIN_LITERAL = 6  # fewer fixed characters can never identify a message (the matcher needs 15)
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Warning|Exit|Interrupt|Fault)$")
Resolver = Callable[[str], "ast.expr | None"]


@dataclass(frozen=True)
class Found:
    """One message site: the exception class or log level, the template, where, and a native error code."""

    kind: str
    template: str
    holes: str
    function: str
    lineno: int
    code: str = ""


def extract(source: str, filename: str = "<module>") -> Iterator[Found]:
    """Every message site of a module's source; a module this Python cannot parse yields nothing (raises
    SyntaxError for the caller to count)."""
    tree = ast.parse(source, filename)
    yield from _Visitor().run(tree)


class _Visitor:
    """Walks the tree keeping the qualified name of the enclosing function (``Class.method``)."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.out: list[Found] = []
        self.assigned: list[dict[str, ast.expr]] = [{}]  # per scope: the last value bound to a plain name
        self.exception_class: list[str | None] = []  # per class: its name when it is an exception

    def run(self, tree: ast.AST) -> list[Found]:
        self._visit(tree)
        return self.out

    def _visit(self, node: ast.AST) -> None:
        scoped = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if scoped:
            self.scope.append(node.name)  # type: ignore[attr-defined]
            self.assigned.append({})
        if isinstance(node, ast.ClassDef):
            bases = [_name(b) or "" for b in node.bases]
            self.exception_class.append(node.name if any(_EXCEPTION_NAME.search(n) for n in [node.name, *bases])
                                        else None)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.assigned[-1][node.targets[0].id] = node.value
        self._site(node)
        for child in ast.iter_child_nodes(node):
            self._visit(child)
        if scoped:
            self.scope.pop()
            self.assigned.pop()
        if isinstance(node, ast.ClassDef):
            self.exception_class.pop()

    def resolve(self, name: str) -> ast.expr | None:
        """The value last bound to ``name`` in the enclosing function, or at module level: a message built in
        a variable first (``msg = f"..."; logger.error(msg)``) is that value's template."""
        return self.assigned[-1].get(name) or self.assigned[0].get(name)

    def pieces(self, node: ast.AST) -> list[list[Piece]]:
        return _pieces(node, self.resolve)

    def _emit(self, kind: str, alternatives: list[list[Piece]], lineno: int) -> None:
        function = ".".join(self.scope) or "<module>"
        for pieces in alternatives:
            if literal_length(pieces) < MIN_LITERAL:
                continue
            text, holes = render(pieces)
            self.out.append(Found(kind, text, holes, function, lineno))

    def _site(self, node: ast.AST) -> None:
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            self._emit(_name(node.exc.func) or "Exception", self.pieces(node.exc.args[0]), node.lineno)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            self._emit("AssertionError", self.pieces(node.msg), node.lineno)
        elif isinstance(node, ast.Call) and node.args:
            self._call(node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in LOG_LEVELS and _is_logger(func.value):
            self._emit(LOG_LEVELS[func.attr], _logged(node, self.resolve), node.lineno)
        elif (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
              and _name(func.value.func) == "super" and self.exception_class and self.exception_class[-1]):
            # An exception's own default message: ``super().__init__("EngineCore encountered an issue...")``.
            self._emit(self.exception_class[-1], self.pieces(node.args[0]), node.lineno)
        elif isinstance(func, ast.Attribute) and func.attr == "warn" and _name(func.value) == "warnings":
            category = _name(node.args[1]) if len(node.args) > 1 else None
            for kw in node.keywords:
                if kw.arg == "category":
                    category = _name(kw.value)
            self._emit(category or "UserWarning", self.pieces(node.args[0]), node.lineno)
        elif isinstance(func, ast.Name) and func.id == "print" and _to_stderr(node):
            pieces = self.pieces(node.args[0]) if len(node.args) == 1 else [_joined(node.args, self.resolve)]
            self._emit("STDERR", pieces, node.lineno)


def _name(node: ast.AST) -> str | None:
    """The last component of a name or attribute (``torch.cuda.OutOfMemoryError`` -> ``OutOfMemoryError``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def _is_logger(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in LOGGER_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in LOGGER_NAMES and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
    return False


def _to_stderr(node: ast.Call) -> bool:
    return any(kw.arg == "file" and isinstance(kw.value, ast.Attribute) and kw.value.attr == "stderr"
               for kw in node.keywords)


def _logged(node: ast.Call, resolve: Resolver) -> list[list[Piece]]:
    """A logging call's message: with arguments, the first one is a ``%`` format; without, it is printed as is."""
    first = node.args[0]
    if len(node.args) > 1 and isinstance(first, ast.Name):
        bound = resolve(first.id)
        first = bound if isinstance(bound, ast.Constant) else first
    if len(node.args) > 1 and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return [percent(first.value)]
    return _pieces(first, resolve)


def _joined(args: list[ast.expr], resolve: Resolver) -> list[Piece]:
    """``print(a, b, c)``: the arguments' texts separated by spaces (the first alternative of each)."""
    out: list[Piece] = []
    for i, arg in enumerate(args):
        if i:
            out.append(" ")
        out.extend(_pieces(arg, resolve)[0])
    return merge(out)


def _pieces(node: ast.AST, resolve: Resolver = lambda name: None, depth: int = 0) -> list[list[Piece]]:
    """The alternatives of pieces an expression formats to; a name is followed to the value last bound to it
    (a few steps at most: ``msg = msg + "..."`` must not loop)."""
    if depth > 3:
        return [[Hole("s")]]
    if isinstance(node, ast.Name):
        bound = resolve(node.id)
        return _pieces(bound, resolve, depth + 1) if bound is not None else [[Hole("s")]]
    if isinstance(node, ast.Constant):
        return [[node.value]] if isinstance(node.value, str) else [[Hole("s")]]
    if isinstance(node, ast.JoinedStr):
        return [_fstring(node)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pieces(node.left, resolve, depth + 1), _pieces(node.right, resolve, depth + 1)
        return [merge(a + b) for a in left for b in right][:MAX_ALTERNATIVES]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = node.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return [percent(left.value)]
    if isinstance(node, ast.IfExp):
        return (_pieces(node.body, resolve, depth + 1) + _pieces(node.orelse, resolve, depth + 1))[:MAX_ALTERNATIVES]
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format":
            target = func.value
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                return [brace(target.value)]
        if isinstance(func, ast.Name) and func.id in ("repr", "ascii"):
            return [[Hole("r")]]
    return [[Hole("s")]]


def _fstring(node: ast.JoinedStr) -> list[Piece]:
    out: list[Piece] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            out.append(value.value)
        elif isinstance(value, ast.FormattedValue):
            conversion = chr(value.conversion) if value.conversion and value.conversion > 0 else None
            spec = ""
            if isinstance(value.format_spec, ast.JoinedStr):
                spec = "".join(v.value for v in value.format_spec.values
                               if isinstance(v, ast.Constant) and isinstance(v.value, str))
            out.append(spec_hole(spec, conversion))
    return merge(out)
