"""The passes after the rules: rank, the root cause, signatures of the errors no rule explains, triage against
suppressions and an earlier report, coverage and the verdict."""
