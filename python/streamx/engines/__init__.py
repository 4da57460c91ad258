"""The engine converters: Spark, Dask and Ray DataFrames to MDS, each task writing one
partition (:mod:`streamx.engines.partition`) and the driver merging the indexes.

Nothing is imported here, so each engine's own dependency loads only with its module;
users import them as ``streamx.spark``, ``streamx.dask``, ``streamx.ray`` and
``streamx.base.converters``.
"""
