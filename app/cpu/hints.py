"""Tag hints: what the tag retriever (``retrieval.TagRetriever``) thinks a request is about.

The CPU default's own word -> tag lexicon only knows word/tag pairs that the
training split shows at least twice; the tag index also knows iD's preset names,
terms and field labels ("Outdoor Seating" -> ``outdoor_seating=yes``) and ranks
tags with a learned model. The selector gets the retriever's probabilities as
features, and one more candidate per neighbour carries its best tags.

Hints are optional: a model trained without an index never asks for them, one
trained with them needs the index at inference (and says how to build it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from geoql.eval.metrics import same_query_key
from geoql.nl.request import Request
from geoql.index.prebuilt import BUILD_NOTES
from geoql.retrieval import TagRetriever
from geoql.retrieval.artifacts import content_key
from geoql.retrieval.gold import is_free_text_key

# The ranker's probability above which a hinted tag counts as wanted by the request.
WANTED = 0.5



@dataclass
class TagHints:
    """Controlled ``key=value`` tags for a request with the retriever's score (a probability with the
    learned ranker), best first; leave-one-out for training requests through ``exclude``."""

    retriever: TagRetriever
    k: int = 10
    _ids_of_query: dict | None = field(default=None, repr=False)  # made on first use: only training asks (~50 ms)

    @classmethod
    def load(cls, index_dir=None, k: int = 10) -> "TagHints":
        """Raises ``retrieval.IndexMissingError`` (naming `geoql index build`) when there is no usable index."""
        return cls(TagRetriever.load(index_dir), k)

    @property
    def fingerprint(self) -> str:
        """Which index made the hints: a model trained on one index should be used with the same. By content
        (``retrieval.artifacts.content_key``, and the ranker's weights), not by build time: an index built again
        from the same sources (after a damaged file, on another day) is the same index to the model."""
        ranker = "no"
        if self.retriever.ranker is not None:  # `geoql index fit-ranker` changes the hints, not the documents
            weights = {k: v for k, v in self.retriever.ranker.to_json().items() if k not in BUILD_NOTES}
            ranker = hashlib.sha256(json.dumps(weights, sort_keys=True).encode()).hexdigest()[:12]
        return f"{content_key(self.retriever.index_dir)[:16]}|ranker={ranker}"

    def hits(self, request: Request | str, exclude=()) -> list:
        """The retriever's ``TagHit`` list for a request, best first (shown as ``compile()``'s tags)."""
        return self.retriever.search(request, self.k, tuple(exclude))

    def __call__(self, request: Request | str, exclude=()) -> dict[str, float]:
        return hint_scores(self.hits(request, exclude))

    def exclusions(self, query: str) -> tuple:
        """The training requests whose gold query is ``query`` (left out of a training request's hints)."""
        if self._ids_of_query is None:
            ids: dict = {}
            for ex in self.retriever.examples.examples:  # gold query -> the ids of its requests in the index's training split
                ids.setdefault(same_query_key(ex.query), []).append(ex.index)
            self._ids_of_query = ids
        return tuple(self._ids_of_query.get(same_query_key(query), ()))

    def for_training(self, query: str, request: Request | str) -> dict[str, float]:
        """Hints for a training request as if its gold ``query`` were unseen: every training request
        with that query (``eval.metrics.same_query_key``) is left out: the dataset splits by query, so
        dev and test requests (all but one) share none with train, while 16 % of training requests share
        theirs with another."""
        return self(request, exclude=self.exclusions(query))


def hint_scores(hits) -> dict[str, float]:
    """Controlled ``key=value`` tag -> score, from a ``TagHit`` list: the hints the selector reads."""
    return {h.tag: h.score for h in hits if h.value != "*" and not is_free_text_key(h.key)}
