"""Converting raw data (Parquet, Arrow, JSONL, CSV, images, tars, Python iterables) to MDS."""
