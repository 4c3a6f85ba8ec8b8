"""Texts as plain arrays, for ``.npz`` files that are read with ``allow_pickle=False``.

A numpy string array would do for most texts, but it drops trailing NUL characters and
pads every text to the longest; an object array needs a pickle. So a list of texts is
stored as its UTF-8 bytes joined, with each text's end (in characters): exact for any
text, and read back without running anything.

>>> texts = ["café", "", "trailing\\0", "東京の駅"]
>>> texts_from_arrays(*texts_to_arrays(texts).values()) == texts
True
"""

from __future__ import annotations


def texts_to_arrays(texts: list[str], prefix: str = "texts") -> dict:
    """``{prefix_utf8: uint8 array, prefix_end: int64 array}`` for ``np.savez``."""
    import numpy as np

    return {f"{prefix}_utf8": np.frombuffer("".join(texts).encode("utf-8"), dtype=np.uint8),
            f"{prefix}_end": np.cumsum([len(t) for t in texts], dtype=np.int64)}


def texts_from_arrays(utf8, ends) -> list[str]:
    """The inverse of :func:`texts_to_arrays`; ``ValueError`` when the arrays do not make a list of texts."""
    import numpy as np

    try:
        text = np.asarray(utf8, dtype=np.uint8).tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the texts are no UTF-8 ({exc})") from None
    ends = np.asarray(ends, dtype=np.int64)
    if ends.ndim != 1 or (len(ends) and (int(ends[-1]) != len(text) or int(ends[0]) < 0)) or (np.diff(ends) < 0).any() \
            or (not len(ends) and text):
        raise ValueError("the texts' ends do not fit their characters")
    starts = [0, *ends[:-1].tolist()]
    return [text[a:b] for a, b in zip(starts, ends.tolist())]


__all__ = ["texts_to_arrays", "texts_from_arrays"]
