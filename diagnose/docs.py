"""Rule documentation generated from the rule files: `diagnose rules show` and docs/rules.md."""

from __future__ import annotations

from diagnose.engine.rulefile import Rule
from diagnose.model import CATEGORIES

_MATCH_WORDS = {
    "pattern": "a log line matches a pattern",
    "threshold": "a parsed value stays beyond a threshold",
    "absence": "something is seen while its expected companion never is",
    "mismatch": "a value differs across nodes, devices or engines",
}


def _match_lines(rule: Rule) -> list[str]:
    m = rule.match
    out = [f"- kind: `{m['kind']}` ({_MATCH_WORDS[m['kind']]})"]
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
    if rule.consequence:
        parts += ["This finding is usually a consequence of another one; it is ranked after its cause.", ""]
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


def catalog_markdown(rules: list[Rule], lang: str = "en") -> str:
    """docs/rules.md: a table of every rule, then one section per rule, grouped by category."""
    ordered = sorted(rules, key=lambda r: (CATEGORIES.index(r.category), r.id))
    lines = [
        "# Rule catalog",
        "",
        "Generated from `rules/` by `diagnose rules docs -o docs/rules.md`; do not edit by hand.",
        "",
        f"{len(ordered)} rules.",
        "",
        "| id | name | category | severity | title |",
        "|---|---|---|---|---|",
    ]
    for r in ordered:
        lines.append(f"| [{r.id}](#{r.id.lower()}) | `{r.name}` | {r.category} | {r.severity} | {r.text('title', lang)} |")
    lines.append("")
    for r in ordered:
        lines.append(rule_markdown(r, lang, heading="##"))
    return "\n".join(lines).rstrip() + "\n"
