"""Daily inputs, as Avro2TF reads them: `<root>/daily/yyyy/MM/dd/` folders of a date range.

`--input_date_range 20180101-20180103` reads the days from the first to the last date, both
included; `--input_days_range 3-1` the days from 3 days before today to 1 day before today.
Days whose folder does not exist are skipped (and named in a note); a range with no folder at
all is an error. Files whose names start with `_` or `.` (`_SUCCESS`, checksums) are left out.

Example:
    >>> day_folders("in", date_range="20181230-20190102")
    ['in/daily/2018/12/30', 'in/daily/2018/12/31', 'in/daily/2019/01/01', 'in/daily/2019/01/02']
    >>> import datetime
    >>> day_folders("in", days_range="3-1", today=datetime.date(2020, 3, 1))
    ['in/daily/2020/02/27', 'in/daily/2020/02/28', 'in/daily/2020/02/29']
"""

from __future__ import annotations

import datetime
import posixpath
from collections.abc import Sequence

from beam_tensorize.job.files import FileSystems

__all__ = ["daily_inputs", "day_folders"]

#: The files of a day folder that are read (not `_SUCCESS`, `.crc` files, ...).
_VISIBLE = "[!_.]*"


def _dates(date_range: str | None, days_range: str | None, today: datetime.date) -> list[datetime.date]:
    if date_range and days_range:
        raise ValueError("give either --input_date_range or --input_days_range, not both")
    if date_range:
        parts = [p.strip() for p in date_range.split("-")]
        try:
            if len(parts) != 2:
                raise ValueError
            first, last = (datetime.datetime.strptime(p, "%Y%m%d").date() for p in parts)
        except ValueError:
            raise ValueError(
                f"--input_date_range {date_range!r}: give two dates as yyyyMMdd-yyyyMMdd, e.g. 20180101-20180103"
            ) from None
        what = f"--input_date_range {date_range!r}"
    else:
        parts = [p.strip() for p in (days_range or "").split("-")]
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(
                f"--input_days_range {days_range!r}: give two day offsets before today as "
                "start-end, e.g. 3-1 (3 to 1 days ago)"
            )
        start, end = (int(p) for p in parts)
        first, last = today - datetime.timedelta(days=start), today - datetime.timedelta(days=end)
        what = f"--input_days_range {days_range!r}"
    if last < first:
        raise ValueError(f"{what}: the range ends before it starts ({first:%Y-%m-%d} > {last:%Y-%m-%d})")
    return [first + datetime.timedelta(days=i) for i in range((last - first).days + 1)]


def day_folders(
    root: str,
    date_range: str | None = None,
    days_range: str | None = None,
    today: datetime.date | None = None,
) -> list[str]:
    """The `<root>/daily/yyyy/MM/dd` folders of the range, in date order (existing or not).

    Raises:
        ValueError: both ranges, or a range that does not parse or ends before it starts.
    """
    dates = _dates(date_range, days_range, today or datetime.date.today())
    base = posixpath.join(root.rstrip("/"), "daily")
    return [posixpath.join(base, f"{d:%Y/%m/%d}") for d in dates]


def daily_inputs(
    roots: Sequence[str],
    date_range: str | None = None,
    days_range: str | None = None,
    today: datetime.date | None = None,
) -> tuple[list[str], list[str]]:
    """(file patterns of the existing day folders of every root, the missing day folders).

    Raises:
        ValueError: as `day_folders`, or no day folder of the range exists under any root.
    """
    patterns, missing = [], []
    for root in roots:
        for folder in day_folders(root, date_range, days_range, today):
            pattern = posixpath.join(folder, _VISIBLE)
            if FileSystems.match([pattern])[0].metadata_list:
                patterns.append(pattern)
            else:
                missing.append(folder)
    if not patterns:
        given = date_range or days_range
        raise ValueError(
            f"no day folder of the range {given!r} holds files under {', '.join(r.rstrip('/') + '/daily' for r in roots)} "
            "(Avro2TF's layout: <input>/daily/yyyy/MM/dd/); check --input and the range"
        )
    return patterns, missing
