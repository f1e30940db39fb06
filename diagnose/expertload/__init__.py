"""`diagnose expert-load`: weekly expert-load report (hot experts, imbalance, a suggested expert map).

load.py reads the inputs, metrics.py aggregates and measures, placement.py suggests the map, report_*.py
render the result dict, command.py is the click command.
"""
