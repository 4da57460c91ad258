"""Converting raw data to MDS on one machine, in parallel processes, resumably.

:func:`convert` takes Parquet, Arrow, JSONL and CSV files, image folders, WebDataset shards,
LitData chunk directories and Hugging Face datasets; :func:`optimize` runs a user function
over inputs; :func:`infer_columns` maps an Arrow schema to MDS columns. ``streamx convert``
is the command-line form.
"""

from streamx.convert.api import ConvertResult, convert, optimize
from streamx.convert.errors import ConvertError
from streamx.convert.infer import infer_columns

__all__ = ["ConvertError", "ConvertResult", "convert", "infer_columns", "optimize"]
