"""Split text into lower-cased word tokens (`transformConfig.tokenization`).

Text is lower-cased and split on every run of characters that are not letters, digits or
`_` (Unicode-aware); empty pieces are dropped. With `remove_stop_words`, tokens in
`ENGLISH_STOP_WORDS` are dropped too. A list of texts gives the tokens of all of them, in
order. Null text gives no tokens.

Example:
    >>> import pyarrow as pa
    >>> tokenize(pa.array(["The Matrix (1999)", None]), remove_stop_words=True).to_pylist()
    [['matrix', '1999'], []]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import list_lengths, list_offsets

__all__ = ["ENGLISH_STOP_WORDS", "tokenize"]

# The English stop-word list of the Snowball project (also shipped by NLTK as
# `stopwords.words("english")`, 179 words), BSD-licensed.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
    couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma
    mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
    weren't won won't wouldn wouldn't
    """.split()
)

_SEPARATORS = r"[^\p{L}\p{N}_]+"


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
    pieces = pc.split_pattern_regex(pc.utf8_lower(texts), _SEPARATORS)
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
