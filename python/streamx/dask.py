"""Dask DataFrames to MDS (``pip install 'streamx-data[dask]'``); the code is
:mod:`streamx.engines.dask`."""

from streamx.engines.dask import to_mds

__all__ = ["to_mds"]
