"""Candidate queries for one request: the neighbours' queries, edited towards it."""

from __future__ import annotations

from dataclasses import dataclass, field

from geoql.app.cpu.edits import EXTRA_EDITS, EditOptions, apply_edits, apply_extras, parses, with_output

# The place edit alone: what a neighbour naming another place is offered as.
_ONLY_AREA = EditOptions(tags=False, types=False, output=False, numbers=False)


@dataclass
class Candidate:
    """One candidate answer and where it came from."""

    query: str
    source: int  # train index of the example it was made from
    rank: int  # the example's rank among the neighbours (0 = nearest)
    similarity: float  # the example request's similarity to this request
    example_nl: str
    edits: tuple[str, ...] = field(default_factory=tuple)
    votes: float = 0.0  # summed similarity of all neighbours that led to this exact query
    repairs: int = 0  # kinds of constants app.cpu.faithful took out (another place, ids, an unasked format...)
    frame_pick: bool = False  # from a neighbour picked by the request's tags and shape (neighbours.FrameNeighbours)
    example_pick: bool = False  # from a neighbour the tag index's example search picked (retrieval.examples)
    e5_pick: bool = False  # from a neighbour the multilingual embedding picked (retrieval.multilingual)
    composed: bool = False  # also built from the request alone (app.cpu.compose)


def build_pool(info, neighbours, train_nls, train_queries, ctx_factory, options, partial: bool = False,
               fix_place: bool = False, extra: tuple[str, ...] = ()) -> list[Candidate]:
    """Each neighbour's query as is and edited; identical queries merge (their votes add up).

    With ``fix_place`` (and area edits on), a query that names another place than
    the request (or a place where the request means the map view, or the reverse)
    is never offered as it is: its place-only edit takes the place of the copy,
    so every candidate names the request's place whenever an edit can put it there.

    ``extra`` names edits of :data:`~app.cpu.edits.EXTRA_EDITS` (with tag edits on):
    each is offered as one more version, applied to the fully edited query.

    A query without an output statement (it would return nothing) is offered with one
    (:func:`~app.cpu.edits.with_output`).

    ``ctx_factory(example_nl)`` makes the :class:`~app.cpu.edits.EditContext`;
    neighbours whose query does not parse are skipped.
    """
    pool: dict[str, Candidate] = {}
    for rank, nb in enumerate(neighbours):
        query = train_queries[nb.index]
        example_nl = train_nls[nb.index]
        versions = [(query, ())]
        ctx = ctx_factory(example_nl)
        edited = apply_edits(query, ctx, options) if options.any else None
        if options.any and edited is None:
            continue  # unparsable query: neither it nor an edit of it can be returned
        if edited is not None and edited[1]:
            versions.append(edited)
            if fix_place and "area" in edited[1]:
                only_area = apply_edits(query, ctx, _ONLY_AREA)
                if only_area is not None and only_area[1]:
                    versions[0] = only_area
            if partial and len(edited[1]) > 1 and options.area:
                # The place edit is almost always right, the others less so: offer it alone too.
                only_area = apply_edits(query, ctx, _ONLY_AREA)
                if only_area is not None and only_area[1]:
                    versions.append(only_area)
        elif not options.any:
            if not parses(query):
                continue
        if extra and options.tags:
            base, base_edits = versions[-1]
            for name, text in apply_extras(base, ctx, [(n, e) for n, e in EXTRA_EDITS if n in extra]):
                versions.append((text, tuple(base_edits) + (name,)))
        for text, edits in versions:
            ended = with_output(text, info.count)  # a query that returns nothing is no answer
            if ended != text:
                text = ended
                if "output" not in edits:
                    edits = (*edits, "output")
            cand = pool.get(text)
            if cand is None:
                pool[text] = Candidate(text, nb.index, rank, nb.score, example_nl, tuple(edits), votes=nb.score,
                                       frame_pick=getattr(nb, "frame", False), example_pick=getattr(nb, "example", False),
                                       e5_pick=getattr(nb, "e5", False))
            else:
                cand.votes += nb.score
                cand.frame_pick = cand.frame_pick or getattr(nb, "frame", False)
                cand.example_pick = cand.example_pick or getattr(nb, "example", False)
                cand.e5_pick = cand.e5_pick or getattr(nb, "e5", False)
    return list(pool.values())


def add_composed(pool: list[Candidate], queries: list[str]) -> list[Candidate]:
    """The pool with the composed ``queries`` (``app.cpu.compose``) added; one equal to a
    copy marks that copy instead (two ways to the same answer)."""
    by_query = {c.query: c for c in pool}
    rank = max((c.rank for c in pool), default=-1) + 1
    for text in queries:
        if text in by_query:
            by_query[text].composed = True
            continue
        cand = Candidate(text, -1, rank, 0.0, "", ("compose",), votes=0.0, composed=True)
        pool.append(cand)
        by_query[text] = cand
    return pool
