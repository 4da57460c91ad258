"""Spark converters on a real Spark in local[2, 2] mode (two threads, two attempts per task
as a cluster retries a failed task), one session for the module.

mosaicml-streaming's own ``dataframe_to_mds`` runs on the same session and DataFrame as the
oracle: shards and merged index must be the same bytes.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime (make install adds one)", allow_module_level=True)

from engine_data import (  # noqa: E402
    files_under,
    ids_of,
    make_rows,
    no_index_visible,
    read_mosaic,
    read_streamx,
    same_sample,
)
from py4j.protocol import Py4JJavaError  # noqa: E402
from pyspark.errors import PythonException  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from streamx.base.converters import dataframe_to_mds, infer_dataframe_schema  # noqa: E402
from streamx.engines.spark_errors import job_failure, task_row_error  # noqa: E402
from streamx.exceptions import ConvertRowError, EngineTaskError  # noqa: E402
from streamx.spark import dataframe_columns, write_mds  # noqa: E402

# pyspark 4 warns that it does not fully support pandas 3 on every mapInPandas call.
# Starting Spark (and mosaic's import in its workers) takes minutes on a loaded machine.
pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning"),
    pytest.mark.timeout(900),
]

SCHEMA = "id long, text string, score double, blob binary, vec array<long>"


@pytest.fixture(scope="module")
def spark(engine_s3: Any) -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("streamx-engines")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _frame(spark: SparkSession, partitions: int = 3) -> Any:
    rows = [tuple(r.values()) for r in make_rows()]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), SCHEMA)


def _partition_dirs(root: str) -> list[str]:
    """The partition directories in the merged index's order."""
    with open(os.path.join(root, "index.json")) as f:
        names = re.findall(r'"basename": "([^"/]+)/', f.read())
    return list(dict.fromkeys(names))


def test_byte_identical_to_mosaic(spark: SparkSession, tmp_path: Any) -> None:
    from streaming.base.converters import dataframe_to_mds as mosaic_dataframe_to_mds

    df = _frame(spark)
    kwargs = {"size_limit": 600, "hashes": ["sha1", "xxh64"]}
    theirs, ours = str(tmp_path / "mosaic"), str(tmp_path / "streamx")
    assert mosaic_dataframe_to_mds(df, mds_kwargs={"out": theirs, **kwargs}) == (theirs, "")
    assert dataframe_to_mds(df, mds_kwargs={"out": ours, **kwargs}) == (ours, "")
    their_parts, our_parts = _partition_dirs(theirs), _partition_dirs(ours)
    assert len(our_parts) == 3
    their_index = files_under(theirs).pop("index.json")
    for theirs_dir, ours_dir in zip(their_parts, our_parts):
        their_files = files_under(os.path.join(theirs, theirs_dir))
        assert len(their_files) > 2  # several shards per partition
        assert files_under(os.path.join(ours, ours_dir)) == their_files
        their_index = their_index.replace(f'"{theirs_dir}/'.encode(), f'"{ours_dir}/'.encode())
    with open(os.path.join(ours, "index.json"), "rb") as f:
        assert f.read() == their_index
    for samples in (read_streamx(None, ours), read_mosaic(None, ours)):
        assert ids_of(samples) == list(range(len(make_rows())))
        assert all(same_sample(s, make_rows()[int(s["id"])]) for s in samples)


def test_inferred_schema_and_errors_match_mosaic(spark: SparkSession) -> None:
    from streaming.base.converters import infer_dataframe_schema as mosaic_infer

    df = _frame(spark, 1)
    assert infer_dataframe_schema(df) == mosaic_infer(df)
    schema = infer_dataframe_schema(df)
    assert schema is not None  # (None only once user columns passed the check)
    assert schema["vec"] == "ndarray:int64"
    bad = spark.createDataFrame([(True,)], "flag boolean")
    for cols in (None, {"nope": "str"}, {"id": "str"}, {"text": "jpeg"}):
        frame = bad if cols is None else df
        with pytest.raises(ValueError) as ours:
            infer_dataframe_schema(frame, cols)
        with pytest.raises(ValueError) as theirs:
            mosaic_infer(frame, cols)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="`out` and `columns` need to be specified"):
        dataframe_to_mds(df, mds_kwargs={})


def test_write_mds_remote_with_overrides(spark: SparkSession, engine_s3: Any) -> None:
    df = _frame(spark, 2)
    overrides = {"id": "int", "text": "json"}
    assert dataframe_columns(df, overrides) == {
        "id": "int",
        "text": "json",
        "score": "float64",
        "blob": "bytes",
        "vec": "ndarray:int64",
    }
    out = engine_s3.url("spark/ds")
    assert write_mds(df, out, columns=overrides, compression=None) == out
    keys = engine_s3.client.list_objects_v2(Bucket=engine_s3.bucket, Prefix="spark/ds/")
    names = [k["Key"] for k in keys["Contents"]]
    assert "spark/ds/index.json" in names
    for samples in (read_streamx(out), read_mosaic(out)):
        assert ids_of(samples) == list(range(len(make_rows())))
        assert all(same_sample(s, make_rows()[int(s["id"])]) for s in samples)


def test_bad_row_names_partition_and_row_and_leaves_nothing(
    spark: SparkSession, tmp_path: Any
) -> None:
    df = _frame(spark, 2)

    def rows(batch: Any) -> Iterator[dict[str, Any]]:
        for sample in batch.to_dict("records"):
            yield {"id": "not a number" if sample["id"] == 40 else sample["id"]}

    out = str(tmp_path / "bad")
    with pytest.raises(ConvertRowError) as err:
        dataframe_to_mds(df, mds_kwargs={"out": out, "columns": {"id": "int64"}}, udf_iterable=rows)
    # The executor's error, raised again on the driver: the partition, the row, the cause.
    assert re.fullmatch(
        r"Spark partition 1 \(task attempt \d+\), row 10: ColumnValueError: Column 'id' .*"
        r"'not a number' \(sample 10\)",
        str(err.value),
    )
    assert isinstance(err.value.__cause__, PythonException)
    assert not os.path.exists(os.path.join(out, "index.json"))
    # The failing partition removed itself; partition 0 finished before the job failed.
    assert len(os.listdir(out)) <= 1


def test_a_task_killed_mid_partition_leaves_no_index(spark: SparkSession, tmp_path: Any) -> None:
    """A Python worker that dies mid-partition on every attempt (``os._exit``, as the OOM
    killer ends one, after shards were written) fails the job: a streamx error names the
    partition and attempt and keeps Spark's reason; no merged index, no half-written one."""
    marker = str(tmp_path / "died")

    def rows(batch: Any) -> Iterator[dict[str, Any]]:
        for sample in batch.to_dict("records"):
            if sample["id"] == 45:  # the workers cannot import engine_data: its die_once here
                open(marker, "w").close()
                os._exit(1)
            yield {"id": sample["id"]}

    out = str(tmp_path / "killed")
    kwargs = {"out": out, "columns": {"id": "int64"}, "size_limit": 64}
    with pytest.raises(EngineTaskError) as err:
        dataframe_to_mds(_frame(spark, 2), mds_kwargs=kwargs, udf_iterable=rows)
    assert re.match(
        rf"Spark partition 1 \(task attempt (\d+), on [^)]*\) failed after 2 attempts writing "
        rf"MDS to {re.escape(out)}: org.apache.spark.SparkException: Python worker exited "
        r"unexpectedly \(crashed\).* \(the Python worker was killed",
        str(err.value),
    )
    cause = err.value.__cause__
    assert isinstance(cause, Py4JJavaError)
    assert "Python worker exited unexpectedly" in str(cause)
    assert os.path.exists(marker)
    no_index_visible(out)
    killed = [d for d in os.listdir(out) if "index.json" not in os.listdir(os.path.join(out, d))]
    assert len(killed) >= 2  # both attempts of partition 1
    assert any(n.startswith("shard.") for n in os.listdir(os.path.join(out, killed[0])))
    last = re.search(r"task attempt (\d+)", str(err.value))
    assert last is not None and last[1] in killed


def test_an_attempt_killed_then_retried_is_removed(
    spark: SparkSession, engine_s3: Any, tmp_path: Any
) -> None:
    """An attempt that dies once leaves its directory (locally and uploaded); Spark retries
    the task, and once the job succeeded that directory is gone from both, while the merged
    index lists exactly the committed partitions and every row once."""
    marker = str(tmp_path / "died")

    def rows(batch: Any) -> Iterator[dict[str, Any]]:
        for sample in batch.to_dict("records"):
            if sample["id"] == 45 and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)
            yield {"id": sample["id"]}

    local, remote = str(tmp_path / "retried"), engine_s3.url("spark/retried")
    kwargs = {"out": (local, remote), "columns": {"id": "int64"}, "size_limit": 64}
    assert dataframe_to_mds(_frame(spark, 2), mds_kwargs=kwargs, udf_iterable=rows) == (
        local,
        remote,
    )
    assert os.path.exists(marker)  # an attempt did die
    parts = _partition_dirs(local)
    assert len(parts) == 2
    assert sorted(os.listdir(local)) == sorted([*parts, "index.json"])
    keys = engine_s3.client.list_objects_v2(Bucket=engine_s3.bucket, Prefix="spark/retried/")
    tops = {k["Key"].split("/")[2] for k in keys["Contents"]}
    assert tops == {*parts, "index.json"}
    for samples in (read_streamx(remote), read_mosaic(None, local)):
        assert ids_of(samples) == list(range(len(make_rows())))


def test_remote_without_credentials(
    spark: SparkSession, engine_s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamx.storage import filesystems

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    filesystems.clear_cache()
    try:
        with pytest.raises((FileNotFoundError, PermissionError)) as err:
            write_mds(_frame(spark, 1), engine_s3.url("nocreds"))
    finally:
        filesystems.clear_cache()
    assert engine_s3.bucket in str(err.value)


def _traceback(*lines: str) -> PythonException:
    """A task failure as pyspark hands it to the driver: the worker's traceback as text."""
    text = "\n".join(["Traceback (most recent call last):", '  File "x.py", line 1', *lines])
    return PythonException(text + "\n")


def test_task_row_error_is_rebuilt_only_from_a_last_row_error() -> None:
    rebuilt = task_row_error(
        _traceback("streamx.exceptions.ConvertRowError: Spark partition 2, row 5: bad\nvalue")
    )
    assert type(rebuilt) is ConvertRowError
    assert str(rebuilt) == "Spark partition 2, row 5: bad\nvalue"
    assert task_row_error(_traceback("OSError: disk full")) is None
    later = _traceback(
        "streamx.exceptions.ConvertRowError: Spark partition 2, row 5: bad",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "OSError: disk full",
    )
    assert task_row_error(later) is None


def test_job_failure_names_the_job_when_no_task_is_named() -> None:
    err = job_failure(
        "An error occurred while calling o7.collectToPython.\n: java.lang.OutOfMemoryError: "
        "Java heap space\n\tat x.y",
        "s3://b/ds",
    )
    assert type(err) is EngineTaskError
    assert str(err) == (
        "the Spark job writing MDS to s3://b/ds failed: java.lang.OutOfMemoryError: Java heap space"
    )
