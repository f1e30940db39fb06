"""docs/schemas.md is generated from the typed structs and must be current; a real JSON report validates
against the JSON Schema generated from ``diagnose.model.Document``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import msgspec
import pytest
from click.testing import CliRunner

from diagnose.authoring.schemas import field_comments, json_schema, reachable, schemas_markdown, type_words
from diagnose.cli import main
from diagnose.fleet import schema as fleet_schema
from diagnose.messages import Words
from diagnose.model import Document, Finding

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "schemas.md"
STALE = "docs/schemas.md is out of date: run `diagnose rules schemas -o docs/schemas.md`"


def test_schemas_page_is_current():
    assert PAGE.read_text(encoding="utf-8") == schemas_markdown(fleet_schema), STALE


def test_cli_writes_the_same_page(tmp_path):
    out = tmp_path / "schemas.md"
    result = CliRunner().invoke(main, ["rules", "schemas", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")


def test_a_new_report_field_makes_the_page_stale():
    """A field added to a struct of the report (here, a subclass standing in for Document) changes the page."""

    class Grown(Document, kw_only=True):
        """The JSON report, with one more field."""

        extra: int = 0  # a field a later release adds

    section = "\n".join(line for cls in reachable(Grown) for line in _section(cls))
    assert "| `extra` | integer | always | a field a later release adds |" in section


def _section(cls):
    from diagnose.authoring.schemas import struct_section

    return struct_section(cls)


def test_every_field_of_the_report_is_on_the_page_and_internal_ones_are_not():
    page = PAGE.read_text(encoding="utf-8")
    for cls in reachable(Document):
        assert f'<a id="{cls.__name__.lower()}"></a>' in page
        for f in msgspec.structs.fields(cls):
            row = f"| `{f.encode_name}` |"
            if f.name in getattr(cls, "INTERNAL", ()):
                continue
            assert row in page, (cls.__name__, f.name)
    assert "| `facts` |" not in page.split("## Live events")[0]  # Finding.facts is internal
    assert "| `consequence` |" not in page


def test_field_comments_are_read_beside_and_above_a_field():
    comments = field_comments(Finding)
    assert comments["caused_by"].startswith("rule id of the finding")
    assert "facts" in comments and "consequence" in comments  # internal fields have comments too (not shown)


def test_words_read_as_text_and_unset_as_absent():
    assert type_words(Words) == "text"
    assert type_words(Words | str) == "text"
    assert type_words(int | None | msgspec.UnsetType) == "integer \\| null"


def _report(tmp_path, *args) -> dict:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["check", "--format", "json", "-o", str(out), *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_real_report_validates_against_the_schema(tmp_path, validator, lang):
    doc = _report(tmp_path, str(ROOT / "samples" / "kv-exhaustion"), "--lang", lang)
    assert doc["findings"], "the sample has findings: the schema is checked on them"
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []


def test_the_schema_rejects_what_the_report_never_writes(tmp_path, validator):
    doc = _report(tmp_path, str(ROOT / "samples" / "kv-exhaustion"))
    broken = json.loads(json.dumps(doc))
    broken["findings"][0]["count"] = "82"  # a number written as a string
    del broken["findings"][0]["title"]  # a field always written, missing
    broken["findings"][0]["first_seen"] = "2025-09-03T14:19:12Z"  # not the report's time format
    messages = sorted(e.message for e in validator.iter_errors(broken))
    assert len(messages) == 3, messages
    assert any("'title' is a required property" in m for m in messages)


def test_the_json_schema_option_prints_the_schema():
    result = CliRunner().invoke(main, ["rules", "schemas", "--json-schema"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json_schema()
    assert "```json\n" + json.dumps(json_schema(), indent=1) + "\n```" in PAGE.read_text(encoding="utf-8")
