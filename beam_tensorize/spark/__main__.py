"""`python -m beam_tensorize.spark [--cache_dir DIR]`: record Spark's class data archive for
`local_session` now (in a container image's build, say), and print its path."""

from __future__ import annotations

import argparse

from beam_tensorize.spark.session import default_cache_dir, prepare_class_archive

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache_dir", default=default_cache_dir(), help="where the archive is kept")
    print(prepare_class_archive(parser.parse_args().cache_dir))
