"""mosaicml-streaming's ``streaming.base.converters.dataframe_to_mds``."""

from streamx.engines.spark_dataframe_to_mds import dataframe_to_mds

__all__ = ["dataframe_to_mds"]
