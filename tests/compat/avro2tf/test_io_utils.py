"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/utils/IOUtilsTest.scala
(with its PrepareData.scala fixture).

Avro2TF's `IOUtils.getPathList` / `readAvro` read the daily layout `<root>/daily/yyyy/MM/dd/`
over a date range, leaving out the days that do not exist. Ours is
`beam_tensorize.job.daily.daily_inputs` (behind `--input-date-range` / `--input-days-range`),
whose patterns are read here with our Avro reader. `readAvro(root, endDate, numDays)` has no
flag of its own in Avro2TF either; it is the date range of the `numDays` days ending at
`endDate`, read as such.
"""

from __future__ import annotations

import datetime
import glob
import os
import posixpath

import fastavro
import pytest

from beam_tensorize.job.daily import daily_inputs
from beam_tensorize.kernels.avro.decode import read_avro_batches

_NTV = {
    "type": "record",
    "name": "NameTermValue",
    "fields": [
        {"name": "name", "type": ["string", "null"]},
        {"name": "term", "type": ["string", "null"]},
        {"name": "value", "type": "float"},
    ],
}
_SCHEMA = {
    "type": "record",
    "name": "topLevelRecord",
    "fields": [
        {"name": "label", "type": "int"},
        {"name": "features", "type": [{"type": "array", "items": [_NTV, "null"]}, "null"]},
    ],
}


def _ntv(name: str, term: str, value: float) -> dict:
    return {"name": name, "term": term, "value": value}


_ROWS = [
    {"label": 1, "features": [_ntv("f1", "1", 1), _ntv("f1", "2", 1), _ntv("f2", "a", 1)]},
    {"label": 0, "features": [_ntv("f1", "2", 2), _ntv("f1", "2", 2), _ntv("f2", "a", 0)]},
    {"label": 1, "features": [_ntv("f1", "3", 1), _ntv("f2", "b", 1), _ntv("f2", "a", 3)]},
]


def _stamp(day: datetime.date) -> str:
    return f"{day:%Y%m%d}"


@pytest.fixture(scope="module")
def prepared_data(tmp_path_factory):
    """PrepareData.prepareData: the daily folders of the three days before today, each with
    three records; gives (rootPath, dailyPathList)."""
    root = str(tmp_path_factory.mktemp("avro2tf-preparedData"))
    today = datetime.date.today()
    daily_path_list = [
        posixpath.join(root, "daily", f"{today - datetime.timedelta(days=d):%Y/%m/%d}") for d in (3, 2, 1)
    ]
    for path in daily_path_list:
        os.makedirs(path)
        with open(path + "/part-00000.avro", "wb") as f:
            fastavro.writer(f, _SCHEMA, _ROWS)
        open(path + "/_SUCCESS", "wb").close()
    return root, daily_path_list


def _count(patterns: list[str]) -> int:
    """`IOUtils.readAvro(...).count()`: the records of the files the patterns match."""
    total = 0
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            with open(path, "rb") as f:
                total += sum(batch.num_rows for batch in read_avro_batches(f, path))
    return total


def test_get_path_list(prepared_data):
    root, daily_path_list = prepared_data
    # we specify 4 days, but we only have path for 3 days in file system
    today = datetime.date.today()
    start, end = (
        today - datetime.timedelta(days=4),
        today - datetime.timedelta(days=1),
    )  # end exclusive: today

    patterns, missing = daily_inputs([root], date_range=f"{_stamp(start)}-{_stamp(end)}")

    assert [posixpath.dirname(p) for p in patterns] == daily_path_list
    assert missing == [posixpath.join(root, "daily", f"{start:%Y/%m/%d}")]


def test_read_avro_with_dates(prepared_data):
    root, _ = prepared_data
    today = datetime.date.today()
    start_date = _stamp(today - datetime.timedelta(days=3))
    end_date = _stamp(today - datetime.timedelta(days=1))

    patterns, _ = daily_inputs([root], date_range=f"{start_date}-{end_date}")

    # verify the correct number records are read into dataframe
    assert _count(patterns) == 9


def test_read_avro_with_offsets(prepared_data):
    root, _ = prepared_data

    patterns, _ = daily_inputs([root], days_range="3-1")

    # verify the correct number records are read into dataframe
    assert _count(patterns) == 9


def test_read_avro_with_mix(prepared_data):
    root, _ = prepared_data
    end = datetime.date.today() - datetime.timedelta(days=1)
    num_days = 3

    start = end - datetime.timedelta(days=num_days - 1)
    patterns, _ = daily_inputs([root], date_range=f"{_stamp(start)}-{_stamp(end)}")

    # verify the correct number records are read into dataframe
    assert _count(patterns) == 9
