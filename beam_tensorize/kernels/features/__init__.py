"""Feature kernels: `columnExpr` evaluation (`expressions`), per-tensor extraction (`extract`),
name-term-value selection (`ntv`), tokenization (`tokenize`), hashing (`hashing`), feature
lists (`vocab`) and the columns train mode counts them from (`counting`), sparse vectors
(`sparse`), replacing tensor columns (`columns`), and the conversion of tensors to Example
feature columns (`conversion`). Pure functions on Arrow.
"""

__all__: list[str] = []
