"""diagnose: diagnostics and log analysis for DeepSeek-V3/R1 serving on Ascend NPUs."""

__version__ = "0.1.0"
