"""Rule documentation generated from the rule files: `diagnose rules show` and docs/rules.md."""

from __future__ import annotations

from diagnose.engine.match_kinds import KINDS
from diagnose.engine.rulefile import Rule
from diagnose.model import CATEGORIES


def _match_lines(rule: Rule) -> list[str]:
    m = rule.match.raw
    out = [f"- kind: `{m['kind']}` ({KINDS[m['kind']].summary})"]
    for key, value in m.items():
        if key == "kind":
            continue
        out.append(f"- {key}: `{value}`")
    return out


def rule_markdown(rule: Rule, lang: str = "en", heading: str = "#") -> str:
    parts = [
        f"{heading} {rule.id} `{rule.name}`: {rule.text('title', lang)}",
        "",
        f"category `{rule.category}` · severity `{rule.severity}` · sources "
        + (", ".join(f"`{s}`" for s in rule.sources) or "all"),
        "",
    ]
    other = "zh" if lang == "en" else "en"
    if rule.title.get(other) and rule.title.get(other) != rule.text("title", lang):
        parts += [f"{'中文' if other == 'zh' else 'English'}: {rule.title[other]}", ""]
    if rule.consequence:
        parts += ["This finding is usually a consequence of another one; it is ranked after its cause.", ""]
    if rule.links:  # [[causes]] and [[caused_by]] (diagnose/engine/links.py): ranking follows them
        def cond(link) -> str:
            said = [] if link.place == "any" else [f"same {link.place}"]
            if link.within is not None:
                said.append(f"within {link.within:g} s")
            return f" ({', '.join(said)})" if said else ""

        leads = [f"`{k.effect}`{cond(k)}" for k in rule.links if k.cause == rule.id]
        after = [f"`{k.cause}`{cond(k)}" for k in rule.links if k.effect == rule.id]
        said = (["can lead to " + ", ".join(leads)] if leads else []) + (["can follow " + ", ".join(after)] if after else [])
        parts += ["**Cause chain**: " + "; ".join(said) + ".", ""]
    if rule.description:
        parts += [rule.text("description", lang).strip(), ""]
    parts += ["**Match**", "", *_match_lines(rule), ""]
    parts += ["**Remediation**", "", rule.text("remediation", lang).strip(), ""]
    if rule.references:
        parts += ["**References**", "", *[f"- {r}" for r in rule.references], ""]
    fires = [t for t in rule.tests if t.fires]
    quiet = [t for t in rule.tests if not t.fires]
    for label, tests in (("Fires on", fires[:1]), ("Stays quiet on", quiet[:1])):
        for t in tests:
            body = "\n".join(t.log.strip("\n").splitlines()[:12])
            parts += [f"**{label}** ({t.name})", "", "```", body, "```", ""]
    return "\n".join(parts).rstrip() + "\n"


_CATEGORY_WORDS = {
    "mtp": ("MTP speculative decoding", "MTP 投机解码"),
    "quantization": ("Quantization", "量化"),
    "operators": ("Operators", "算子"),
    "moe-load": ("MoE expert load", "MoE 专家负载"),
    "kv-cache": ("KV cache", "KV 缓存"),
    "memory": ("NPU memory", "NPU 显存"),
    "communication": ("Communication (HCCL)", "通信（HCCL）"),
    "versions": ("Versions", "版本"),
    "device": ("Device", "设备"),
    "engine": ("Engine", "引擎"),
    "config": ("Configuration", "配置"),
    "performance": ("Performance", "性能"),
}


def catalog_markdown(rules: list[Rule], lang: str = "en") -> str:
    """docs/rules.md: a count per category, a table of every rule (titles in English and Chinese), then one
    section per category with every rule of it. Deterministic: the same rule files give the same page."""
    ordered = sorted(rules, key=lambda r: (CATEGORIES.index(r.category), r.id))
    present = [c for c in CATEGORIES if any(r.category == c for r in ordered)]
    cat_name = lambda c: _CATEGORY_WORDS.get(c, (c, c))[0 if lang == "en" else 1]  # noqa: E731
    lines = [
        "# Rule catalog",
        "",
        "Generated from `rules/` by `diagnose rules docs -o docs/rules.md`; do not edit by hand"
        " (`tests/test_docs.py` fails when this page is out of date).",
        "",
        f"{len(ordered)} rules in {len(present)} categories:",
        "",
        "| category | rules |",
        "|---|---|",
    ]
    for c in present:
        ids = [r.id for r in ordered if r.category == c]
        lines.append(f"| [{cat_name(c)}](#category-{c}) (`{c}`) | {len(ids)}: {', '.join(ids)} |")
    lines += [
        "",
        "| id | name | category | severity | title | 标题 |",
        "|---|---|---|---|---|---|",
    ]
    for r in ordered:
        echo = " (consequence)" if r.consequence else ""
        lines.append(
            f"| [{r.id}](#{r.id.lower()}) | `{r.name}` | {r.category} | {r.severity}{echo} | "
            f"{_cell(r.title.get('en', ''))} | {_cell(r.title.get('zh', ''))} |"
        )
    lines.append("")
    for c in present:
        lines += [f'<a id="category-{c}"></a>', "", f"## {cat_name(c)} (`{c}`)", ""]
        for r in (r for r in ordered if r.category == c):
            lines += [f'<a id="{r.id.lower()}"></a>', "", rule_markdown(r, lang, heading="###")]
    return "\n".join(lines).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
