"""Feature kernels: `columnExpr` evaluation (`expressions`), per-tensor extraction (`extract`),
name-term-value selection (`ntv`), tokenization (`tokenize`), hashing (`hash_functions`,
`hash_columns`, `hashing`), feature lists (`vocab`: their entries `vocab_entries`, the
`FeatureList` itself `feature_list`, building `vocab_build`, applying `vocab_apply`) and the
columns train mode counts them from (`counting`), sparse vectors (`sparse`), replacing tensor
columns (`columns`), and the conversion of tensors to Example feature columns (`conversion`,
with the tensors' `layouts` and the `value_casts`). Pure functions on Arrow.
"""

__all__: list[str] = []
