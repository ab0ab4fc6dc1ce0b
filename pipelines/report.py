"""The `report` command line: rebuild a run report's HTML page from its JSON.

    python -m pipelines.report out/                        # every split's report in out/report/
    python -m pipelines.report out/ --split validationData

The page is `<output>/report/<split>.html`, rendered again from `<output>/report/<split>.json`
(see docs/report.md); nothing else in the output changes.
"""

from __future__ import annotations

import argparse
import posixpath
import sys
from collections.abc import Sequence

from beam_tensorize.job.files import list_files
from beam_tensorize.job.finish import SPLIT_FOLDERS
from beam_tensorize.job.report import REPORT_FOLDER, rebuild_page

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Rebuild the pages; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.report", description="Rebuild run report pages from their JSON."
    )
    parser.add_argument("output", help="The output folder of a tensorize run.")
    parser.add_argument(
        "--split",
        action="append",
        choices=sorted(SPLIT_FOLDERS.values()),
        help="The split whose page to rebuild (repeat for several). Default: every split with a JSON report.",
    )
    options = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    out = options.output.rstrip("/") or "/"
    folder = posixpath.join(out, REPORT_FOLDER)
    splits = options.split or [
        posixpath.basename(path)[: -len(".json")] for path in list_files(posixpath.join(folder, "*.json"))
    ]
    if not splits:
        print(
            f"error: no run report in {folder}; run the tensorize job with --report json or html first",
            file=sys.stderr,
        )
        return 2
    for split in splits:
        try:
            page = rebuild_page(out, split)
        except FileNotFoundError as err:
            print(
                f"error: no report of split {split} in {folder} ({err} is missing); run that split with "
                "--report json or html first",
                file=sys.stderr,
            )
            return 2
        print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
