"""One loop over many training requests on every core, with the answer of the plain loop.

The index build and the CPU model's training each walk all 6,352 training requests
once (features per request, minutes on one core). The requests are independent, so
the walk splits into contiguous chunks, one per worker process, and the chunks'
results are concatenated in order: the same list as one process makes.

Workers are started with ``spawn`` (a forked child would inherit ONNX Runtime's,
faiss's and OpenMP's threads half-alive) and build their own state once from a
picklable ``setup`` callable, e.g. loading the retriever from its index directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

# Fewer items than this per worker are not worth starting a process (~2 s to import and load).
MIN_CHUNK = 200
# At most this many items per chunk: the caller's progress bar (which the demo's page shows as
# its preparation) moves every few seconds instead of in eighths of a half-hour walk.
MAX_CHUNK = 50

_state: dict = {}


def usable_cores() -> int:
    """The cores this process may run on (``sched_getaffinity``), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


def planned_workers(n_items: int, workers: int | None = None) -> int:
    """How many processes :func:`chunked_map` starts for ``n_items`` (1: it runs in this process).

    >>> planned_workers(10, 2), planned_workers(10_000, 2), planned_workers(10_000, 1)
    (1, 2, 1)
    """
    return min(workers or usable_cores(), max(n_items // MIN_CHUNK, 1))


def _init(setup: Callable[[], object]) -> None:
    _state["context"] = setup()


def _run_chunk(args) -> list:
    work, items = args
    context = _state["context"]
    return [work(context, item) for item in items]


def chunked_map(work: Callable[[object, object], object], items: Sequence, setup: Callable[[], object], *,
                workers: int | None = None, context: object | None = None, progress=None) -> list:
    """``[work(ctx, item) for item in items]``, split over ``workers`` processes (default: the usable cores).

    ``setup()`` makes ``ctx`` in each worker (``work`` and ``setup`` must be picklable: module-level
    functions or ``functools.partial`` of them). With one worker, or too few items, it runs here on
    ``context`` (made by ``setup()`` when not given). ``progress(n)`` is called as chunks finish.
    """
    items = list(items)
    workers = planned_workers(len(items), workers)
    if workers <= 1:
        ctx = setup() if context is None else context
        out = []
        for item in items:
            out.append(work(ctx, item))
            if progress is not None:
                progress(1)
        return out
    import multiprocessing

    # Several chunks per worker: the progress bar moves, and a slow chunk does not leave a core idle.
    size = max(1, min(-(-len(items) // (workers * 4)), MAX_CHUNK))
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    out: list = []
    with multiprocessing.get_context("spawn").Pool(workers, initializer=_init, initargs=(setup,)) as pool:
        for part in pool.imap(_run_chunk, [(work, chunk) for chunk in chunks]):  # in order
            out.extend(part)
            if progress is not None:
                progress(len(part))
    return out
