"""The message catalog (diagnose/messages.toml): every message in both languages with the same placeholders,
Chinese text that is Chinese, every key the code asks for present, no key the code never asks for."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

from diagnose.messages import LANGS, Messages, catalog, messages
from diagnose.model import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _texts(value) -> list[str]:
    return value if isinstance(value, list) else [value]


def test_every_message_has_both_languages_with_the_same_placeholders():
    problems = []
    for key, entry in catalog().items():
        for lang in LANGS:
            if not entry.get(lang) or not all(isinstance(t, str) and t for t in _texts(entry[lang])):
                problems.append(f"{key}: no {lang} text")
        if set(entry) - {*LANGS, "term"}:
            problems.append(f"{key}: unknown fields {sorted(set(entry) - {*LANGS, 'term'})}")
        if problems and problems[-1].startswith(key):
            continue
        en = set().union(*(_fields(t) for t in _texts(entry["en"])))
        zh = set().union(*(_fields(t) for t in _texts(entry["zh"])))
        if en != zh:
            problems.append(f"{key}: placeholders differ, en {sorted(en)} zh {sorted(zh)}")
        if isinstance(entry["en"], list) and len(entry["en"]) != 2:
            problems.append(f"{key}: an English [one, other] pair needs two texts")
    assert not problems, "\n".join(problems)


def test_chinese_texts_are_chinese_unless_marked_as_a_term():
    untranslated = [key for key, entry in catalog().items()
                    if not entry.get("term") and not any(CJK.search(t) for t in _texts(entry["zh"]))]
    assert not untranslated, f"no Chinese in the zh text of: {untranslated} (translate it, or mark term = true)"
    needless = [key for key, entry in catalog().items() if entry.get("term") and entry["zh"] != entry["en"]
                and CJK.search(str(entry["zh"]))]
    assert not needless, f"term = true on messages whose Chinese differs from the English: {needless}"


_LOOKUPS = {"msg", "html", "get", "template"}


def _code_strings() -> tuple[set[str], set[str], set[str]]:
    """String constants of the package, the keys passed to a lookup (``msg("page.title")``), and the literal
    heads of f-string keys (``f"page.col.{c}"``)."""
    whole, asked, heads = set(), set(), set()
    for path in (ROOT / "diagnose").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside_f = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_f:
                whole.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                heads.add(node.values[0].value)
            if isinstance(node, ast.Call) and node.args:
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id == "messages":
                    name = "msg"
                if name in _LOOKUPS and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    asked.add(node.args[0].value)
    return whole, asked, heads


def test_every_key_the_code_names_is_in_the_catalog_and_every_entry_is_used():
    whole, asked, heads = _code_strings()
    keys = set(catalog())
    tables = {k.split(".")[0] for k in keys}
    asked = {s for s in asked if "." in s and s.split(".")[0] in tables}
    missing = sorted(s for s in asked if s not in keys)
    assert not missing, f"keys the code looks up that the catalog lacks: {missing}"
    prefixes = {h for h in heads | whole if h.endswith((".", "_")) and h.split(".")[0] in tables}
    unused = sorted(k for k in keys if k not in whole and not any(k.startswith(p) for p in prefixes))
    assert not unused, f"catalog entries no code asks for: {unused}"


def test_data_driven_names_have_messages():
    from diagnose.parsers import registry

    keys = catalog()
    for cat in CATEGORIES:
        assert f"category.{cat}" in keys, cat
    for sev in ("critical", "error", "warning", "info"):
        assert f"severity.{sev}" in keys
    for panel in registry.panels():
        assert f"panel.{panel.signals[0]}" in keys, panel
        assert f"unit.{panel.unit}" in keys, panel
    from diagnose.validation import compare

    verdicts = set(re.findall(r'"(regressed|ok|improved|changed|not comparable|missing in this run|no baseline)"',
                              Path(compare.__file__).read_text(encoding="utf-8")))
    assert verdicts and all(f"comparison.verdict.{v}" in keys for v in verdicts), verdicts


def test_lookup_plural_escape_and_fallback():
    en, zh = messages("en"), messages("zh")
    assert en("page.files", n=1) == "1 file" and en("page.files", n=3) == "3 files" and zh("page.files", n=3) == "3 个文件"
    assert zh("rootcause.ranks_on_node", n=2, ranks="0-1", node="node-0") == "节点 node-0 上的 rank 0-1"
    assert en.html("page.unrecognised.hint").count("<code>") == 1
    assert "&lt;b&gt;" in en.html("page.caused_by", rule="<b>") or "&lt;b&gt;" in en.html("page.see_line", file="<b>", line=1)
    assert messages("fr").lang == "en" and isinstance(messages(None), Messages)
    assert zh.severity("critical") == "严重" and zh.category("kv-cache") == "KV 缓存" and en.category_id("kv-cache") == "kv-cache"
    assert zh.get("panel.no_such_signal", "no_such_signal") == "no_such_signal"


@pytest.mark.parametrize("lang", LANGS)
def test_every_template_formats(lang):
    msg = messages(lang)
    for key, entry in catalog().items():
        names = set().union(*(_fields(t) for t in _texts(entry[lang])))
        text = msg(key, **{n: 1 for n in names})
        assert "{" not in text or key.startswith(("expertload.page.use_it", "expertload.fig.")), key
