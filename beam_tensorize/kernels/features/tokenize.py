"""Split text into lower-cased word tokens (`transformConfig.tokenization`), as Avro2TF does
with Spark ML's `RegexTokenizer` (pattern `\\W`, lower-casing on) and `StopWordsRemover`.

Text is lower-cased and split on every run of characters other than the ASCII letters, digits
and `_` (Java's `\\W`, which is ASCII-only: `café` gives `caf`); empty pieces are dropped.
Lower-casing is Java's full Unicode mapping (`İstanbul` gives `i`, a combining dot, `stanbul`).
With `remove_stop_words`, tokens in `ENGLISH_STOP_WORDS` (Spark's English list, shipped in
`stopwords/english.txt`) are dropped too. A list of texts gives the tokens of all of them, in
order. Null text gives no tokens.

Example:
    >>> import pyarrow as pa
    >>> tokenize(pa.array(["The Matrix (1999) would've", None]), remove_stop_words=True).to_pylist()
    [['matrix', '1999', 've'], []]
"""

from __future__ import annotations

import importlib.resources

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import list_lengths, list_offsets
from beam_tensorize.kernels.features.text_case import lower_case

__all__ = ["ENGLISH_STOP_WORDS", "TOKEN_SEPARATORS", "tokenize"]

#: Apache Spark's English stop words (`StopWordsRemover.loadDefaultStopWords("english")`).
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    importlib.resources.files(__package__).joinpath("stopwords", "english.txt").read_text("utf-8").split()
)

#: Java's `\\W`: anything but ASCII letters, digits and `_`.
TOKEN_SEPARATORS = r"[^A-Za-z0-9_]+"


def tokenize(column: pa.Array, remove_stop_words: bool = False) -> pa.LargeListArray:
    """Tokens of each row of a string column, or of a list-of-strings column.

    Args:
        column: `string` / `large_string` values, or (large) lists of them.
        remove_stop_words: drop `ENGLISH_STOP_WORDS`.

    Returns:
        `large_list<string>`, one list of tokens per row.

    Raises:
        TypeError: the column does not hold text.
    """
    rows = len(column)
    row_of = np.arange(rows)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        row_of = np.repeat(row_of, list_lengths(column))
        column = column.flatten()
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        raise TypeError(f"tokenization needs text, got {column.type}")
    valid = np.asarray(column.is_valid(), dtype=bool)
    texts, row_of = column.filter(pa.array(valid)), row_of[valid]
    # Java lower-cases with the full Unicode mapping: U+0130 (capital I with dot) becomes "i"
    # and a combining dot, which splits the word; Arrow's simple mapping gives a bare "i".
    texts = pc.replace_substring(texts, "\u0130", "i\u0307")
    pieces = pc.split_pattern_regex(lower_case(texts), TOKEN_SEPARATORS)
    counts = np.diff(list_offsets(pieces))
    tokens = pieces.flatten()
    token_row = np.repeat(row_of, counts)
    keep = pc.not_equal(pc.utf8_length(tokens), 0)
    if remove_stop_words:
        keep = pc.and_(keep, pc.invert(pc.is_in(tokens, pa.array(sorted(ENGLISH_STOP_WORDS)))))
    keep_mask = np.asarray(keep.fill_null(False), dtype=bool)
    tokens, token_row = tokens.filter(pa.array(keep_mask)), token_row[keep_mask]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(token_row, minlength=rows))]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets), tokens.cast(pa.large_string()))
