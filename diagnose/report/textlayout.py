"""Layout pieces of the terminal report: text with a hanging indent, a heading rule, trimmed blocks.

Rich wraps a Text at word boundaries inside the width it is given; a hanging indent (first line at one
column, the lines after it further in) is what makes a long log line or summary read as one item under its
heading, at 80 columns as at 160.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MIN_BODY = 20  # narrowest column a hanging text is wrapped to, however deep its indent


def clean(text: str) -> str:
    """Log text as inert text: no control characters (a log line must not restyle or move the terminal)."""
    return _CONTROL.sub("", text.replace("\t", "    "))


class Hanging:
    """``text`` wrapped to the width it is rendered in: the first line starts at column ``indent``, every
    further line at ``hang``. Words are never split; a token longer than the line (a path) is folded."""

    def __init__(self, text: Text | str, indent: int = 0, hang: int | None = None, style: str = ""):
        self.text = text if isinstance(text, Text) else Text(text, style=style)
        self.indent = indent
        self.hang = indent + 2 if hang is None else hang

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        first_width = max(options.max_width - self.indent, MIN_BODY)
        rest_width = max(options.max_width - self.hang, MIN_BODY)
        text = break_long_words(self.text, max(first_width, rest_width), min(first_width, rest_width))
        lines = text.wrap(console, first_width, overflow="fold")
        if len(lines) > 1 and rest_width != first_width:
            # The first line is as wide as its indent allows; the rest is wrapped again at the hanging indent.
            rest = text[len(lines[0].plain):]
            skip = len(rest.plain) - len(rest.plain.lstrip(" "))
            rest = rest[skip + (1 if rest.plain[skip:skip + 1] == "\n" else 0):]
            lines = [lines[0], *rest.wrap(console, rest_width, overflow="fold")]
        out = Text(no_wrap=True, overflow="ignore")
        for i, line in enumerate(lines):
            if i:
                out.append("\n")
            out.append(" " * (self.indent if i == 0 else self.hang))
            out.append_text(line)
        yield out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(MIN_BODY, options.max_width), options.max_width)


class Heading:
    """A bold heading followed by a thin rule to the right edge: the start of one finding's details."""

    def __init__(self, text: Text):
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        head = self.text.copy()
        head.no_wrap, head.overflow = False, "fold"
        room = options.max_width - head.cell_len - 1
        if room >= 3:
            head.append(" " + "─" * room, style="dim")
        yield head


_BREAK_AFTER = ("/\\!", "-_.,:;=")  # where a long path or identifier reads best when it must be broken: folders first


def break_long_words(text: Text, longest: int, piece: int | None = None) -> Text:
    """Break every run of non-blanks longer than ``longest`` into pieces of at most ``piece`` (default
    ``longest``), after a ``/`` where there is one, else after ``-``, ``_``, ``.``...: a path folded at any
    character is hard to read."""
    piece = piece or longest
    plain = text.plain
    cuts: list[int] = []
    for m in re.finditer(r"\S{%d,}" % (longest + 1), plain):
        if not m.group().isascii():
            continue  # Chinese text has no blanks between words: rich folds it at any character, as it should
        pos, end = m.span()
        while end - pos > piece:
            window = plain[pos:pos + piece]
            step = piece
            for chars in _BREAK_AFTER:
                k = max(window.rfind(c) for c in chars)
                if k >= piece // 3:
                    step = k + 1
                    break
            cuts.append(pos + step)
            pos += step
    if not cuts:
        return text
    out = Text(style=text.style, end=text.end)
    prev = 0
    for cut in cuts:
        out.append_text(text[prev:cut])
        out.append("\n")
        prev = cut
    out.append_text(text[prev:])
    return out


class Trimmed:
    """A renderable without its leading and trailing blank lines (rich's Markdown opens a list with one)."""

    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options, pad=False)
        blank = [not "".join(seg.text for seg in line).strip() for line in lines]
        start = next((i for i, b in enumerate(blank) if not b), len(lines))
        end = len(lines) - next((i for i, b in enumerate(reversed(blank)) if not b), len(lines))
        for line in lines[start:end]:
            yield from line
            yield Segment.line()
