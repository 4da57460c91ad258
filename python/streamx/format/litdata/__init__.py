"""LitData optimized datasets (``litdata.optimize``'s ``index.json`` and chunks) read in place."""
