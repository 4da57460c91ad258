"""mosaicml-streaming's ``streaming.base.converters``: Spark DataFrames to MDS.

Needs pyspark (``pip install 'streamx-data[spark]'``); importing this module without it raises
an ``ImportError`` that says so. The code is :mod:`streamx.engines`.
"""

from streamx.engines.spark_schema import (
    SPARK_TO_MDS,
    infer_dataframe_schema,
    is_json_compatible,
)

from streamx.engines.spark_dataframe_to_mds import dataframe_to_mds  # isort: skip

__all__ = ["SPARK_TO_MDS", "dataframe_to_mds", "infer_dataframe_schema", "is_json_compatible"]
