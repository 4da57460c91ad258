"""Spark DataFrames to MDS with streamx's own arguments (``pip install 'streamx-data[spark]'``);
the code is :mod:`streamx.engines.spark`."""

from streamx.engines.spark import dataframe_columns, write_mds

__all__ = ["dataframe_columns", "write_mds"]
