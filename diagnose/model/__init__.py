"""The contract between the rooms: the frames every parser returns (``frames``), the compact series
(``series``), findings and rule information (``findings``), the inputs (``inputs``) and the report (``report``).
Everything crossing a room is one of these types; the JSON schema in docs/schemas.md is generated from them."""

from diagnose.model.findings import PLACES, CauseLink, Evidence, Finding, RuleInfo, SourceSite, Threshold
from diagnose.model.frames import (
    CATEGORIES, ERROR_LEVELS, RECORD_SCHEMA, ROUTINE_LEVELS, SEVERITIES, SEVERITY_RANK, SIGNAL_SCHEMA, compact_strings,
    conform_records,
    conform_signals, empty_records, empty_signals,
)
from diagnose.model.inputfiles import BY_DESIGN, InputFile, Skipped, file_type, note, skip
from diagnose.model.report import (
    UNSET, Clean, Comparison, Coverage, Document, Example, Gate, NoKnownCause, NothingAnalysed, Notes, Report, RootCause,
    Signature, SlowRule, Status, Suppressed, SuppressedFinding, SuppressedSignature, Unexplained, Unread, Verdict, builtins,
    verdict_kind,
)

__all__ = [
    "BY_DESIGN", "CATEGORIES", "ERROR_LEVELS", "PLACES", "CauseLink", "RECORD_SCHEMA", "SEVERITIES", "SEVERITY_RANK",
    "ROUTINE_LEVELS", "SIGNAL_SCHEMA", "UNSET", "Clean",
    "Comparison", "Coverage", "Document", "Evidence", "Example", "Finding", "Gate", "InputFile", "NoKnownCause",
    "NothingAnalysed", "Notes", "Report", "RootCause", "RuleInfo", "Signature", "Skipped", "SlowRule", "SourceSite", "Status", "Suppressed",
    "SuppressedFinding", "SuppressedSignature", "Threshold", "Unexplained", "Unread", "Verdict", "builtins", "compact_strings",
    "conform_records", "conform_signals", "empty_records", "empty_signals", "file_type", "note", "skip", "verdict_kind",
]
