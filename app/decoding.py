"""From raw model text to the chosen query: extraction, validation, MBR.

Every backend's output goes through the same three steps, so a backend never
decides on its own what counts as a query:

1. :func:`extract_query` pulls the query out of chatter, code fences and
   multi-line layouts and writes it on one line, the way the dataset stores it;
2. :func:`validate` checks it (``overpassql.check``, what the converter reports);
3. :func:`choose` picks a candidate: the valid one with the highest expected
   OQS against the other samples (minimum Bayes risk), never an invalid one
   while a valid one exists.

>>> extract_query('Sure! Here it is:\\n```overpassql\\nnode["amenity"="cafe"]\\n  ({{bbox}});\\nout;\\n```\\nEnjoy.')
'node["amenity"="cafe"]({{bbox}});out;'
>>> validate('node["amenity"="cafe"];out;')
[]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import overpassql

from geoql.eval.metrics import get_scorer

# Where a query can start: settings, a placeholder, a block, a set, a type...
_START = re.compile(
    r"^\s*(\[\s*(out|timeout|maxsize|bbox|date|diff|adiff)\s*:|\{\{|\(|\.[A-Za-z_]|"
    r"(node|way|rel|relation|area|nwr|nw|nr|wr|derived|out|foreach|for|if|complete|retro|"
    r"make|convert|is_in|map_to_area)\b)"
)
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_LABEL = re.compile(r"^\s*(overpass\s*ql|overpassql|overpass|query|answer|output)\s*:\s*", re.IGNORECASE)


@dataclass
class Candidate:
    """One distinct query among the backend's outputs."""

    query: str
    valid: bool
    errors: list[str] = field(default_factory=list)
    score: float | None = None  # MBR expected OQS against the other samples
    count: int = 1  # how many samples produced this query
    raw: str = ""  # the first raw text that produced it
    repaired: bool = False  # a cut-off query closed by the grammar (see repair_truncated)
    # Where it came from: "backend" (its texts) or "composed" (built from the reading: geoql.app.compose).
    source: str = "backend"

    def as_dict(self) -> dict:
        return {"query": self.query, "valid": self.valid, "errors": list(self.errors),
                "score": self.score, "count": self.count, "repaired": self.repaired, "source": self.source}


# ------------------------------------------------------------------ extraction
def _strip_comments(text: str) -> str:
    """Drop // and /* */ comments outside strings (joining lines would
    otherwise let a // comment swallow the rest of the query)."""
    out = []
    i, n = 0, len(text)
    quote = None
    while i < n:
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == quote or c == "\n":
                quote = None
            i += 1
            continue
        if c in "\"'":
            quote = c
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def to_one_line(text: str) -> str:
    """Join a multi-line query into one line as the dataset writes it.

    Line breaks and the indentation after them disappear, except where two
    words would run together (``out\\nmeta``), which get one space.

    >>> to_one_line('(\\n  node[a];\\n  way[a];\\n);\\nout\\n  meta;')
    '(node[a];way[a];);out meta;'
    """
    lines = [line.strip() for line in _strip_comments(text).splitlines()]
    out = ""
    for line in lines:
        if not line:
            continue
        if out and (out[-1].isalnum() or out[-1] == "_") and (line[0].isalnum() or line[0] == "_"):
            out += " "
        out += line
    return out.strip()


def _query_span(text: str) -> str:
    """The lines from the first that starts a query to the last that looks like part of it."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _START.match(_LABEL.sub("", line))), None)
    if start is None:
        return text.strip()
    lines[start] = _LABEL.sub("", lines[start])
    end = start
    for i in range(start, len(lines)):
        stripped = lines[i].strip()
        if not stripped:
            continue
        # Prose after the query: a line that reads like a sentence.
        if i > start and re.match(r"^[A-Z][a-z]+[ ,][^;{}()\[\]]*[.!?:]?$", stripped) and not _START.match(stripped):
            break
        end = i
    return "\n".join(lines[start:end + 1])


_NEXT_EXAMPLE = "<request>"


def extract_query(text: str) -> str:
    """The query in a model's answer, on one line (empty string if none).

    Handles code fences (the first fence that holds a query wins), labels
    such as ``Query:``, prose before and after, and multi-line layouts.

    >>> extract_query('[out:json];\\nnode(1);\\nout;\\n\\nThis finds node 1.')
    '[out:json];node(1);out;'
    >>> extract_query('')
    ''
    >>> extract_query('[out:json];node(1);out;\\n\\n<request>bus stops</request>\\nnode;out;')
    '[out:json];node(1);out;'
    """
    if not text or not text.strip():
        return ""
    # A model that goes on with the next few-shot example ("<request>...", the
    # prompt's layout: geoql.retrieval.build_prompt) has finished its answer there.
    text = text.split(_NEXT_EXAMPLE, 1)[0]
    fences = [m.group(1) for m in _FENCE.finditer(text)]
    body = next((f for f in fences if f.strip() and _START.search(f)), None)
    if body is None:
        body = text
    return to_one_line(_query_span(body))


# ------------------------------------------------------------------ validation
def validate(query: str) -> list[str]:
    """Why ``query`` is not valid (empty list: valid), as ``overpassql.check`` says.

    That is every message the converter prints for the query after the official
    metric's placeholder step (``replace_turbo_vars``), the text the metric's
    converter actually reads; the GRPO validity reward and the CPU backend's edits
    use the same check.
    """
    return [str(d) for d in overpassql.check(query)]


def make_candidates(texts: Sequence[str], *, repair: bool = False) -> list[Candidate]:
    """Extract and validate raw texts; identical queries merge (``count``).

    With ``repair``, an invalid query that is a cut-off prefix of a valid
    one is closed by the grammar (:func:`repair_truncated`) and marked.
    """
    by_query: dict[str, Candidate] = {}
    for text in texts:
        query = extract_query(text or "")
        repaired = False
        errors = validate(query) if query not in by_query else by_query[query].errors
        if errors and repair and query:
            fixed = repair_truncated(query)
            if fixed is not None:
                query, errors, repaired = fixed, [], True
        cand = by_query.get(query)
        if cand is None:
            by_query[query] = Candidate(query=query, valid=not errors, errors=list(errors), raw=text or "",
                                        repaired=repaired)
        else:
            cand.count += 1
    return list(by_query.values())


def repair_truncated(query: str) -> str | None:
    """A valid query made from a cut-off one by the shortest grammar-valid ending.

    None when ``query`` is not a prefix of anything the grammar accepts (then
    it is not a truncation but a different error) or the repair does not parse.

    >>> repair_truncated('[out:json];node["amenity"="drinking_water"](area.a')
    '[out:json];node["amenity"="drinking_water"](area.a);'
    """
    try:
        # Here, not at the top: the transformers backend's module (with geoql.app.models) is ~0.03 s
        # of every cold `geoql compile`, and only a cut-off query needs it.
        from geoql.app.backends.transformers_backend import complete_truncated

        fixed = complete_truncated(query)
    except ImportError:  # llguidance / transformers not installed: no repair
        return None
    if fixed is None or fixed == query or validate(fixed):
        return None
    return fixed


# --------------------------------------------------------------------- choosing
def default_similarity() -> Callable[[str, str], float]:
    """OQS between two queries (the task's metric), from ``eval.metrics``."""
    scorer = get_scorer()
    return scorer.oqs


def mbr_scores(candidates: Sequence[Candidate], similarity: Callable[[str, str], float] | None = None) -> list[float]:
    """Expected similarity of each candidate to the samples (each sample weighs its count).

    A candidate's own extra samples count as agreement (similarity 1); the
    other candidates count with their similarity. Invalid samples are
    evidence too: a truncated copy of a query still votes for it.
    """
    sim = similarity or default_similarity()
    total = sum(c.count for c in candidates)
    scores = []
    for i, ci in enumerate(candidates):
        if total <= 1:
            scores.append(1.0)
            continue
        acc = (ci.count - 1) * 1.0
        for j, cj in enumerate(candidates):
            if i != j and cj.query and ci.query:
                acc += cj.count * _safe_sim(sim, ci.query, cj.query)
        scores.append(acc / (total - 1))
    return scores


def _safe_sim(sim, a: str, b: str) -> float:
    try:
        return float(sim(a, b))
    except Exception:  # a metric failure on odd text must not sink the request
        return 0.0


def choose(candidates: list[Candidate], *, mbr: bool = True,
           similarity: Callable[[str, str], float] | None = None) -> Candidate | None:
    """The winning candidate: valid before invalid, then MBR score, then order.

    >>> a = Candidate('node[a];out;', True); b = Candidate('node[a;out', False, ['x'], count=3)
    >>> choose([b, a], mbr=False).query
    'node[a];out;'
    """
    if not candidates:
        return None
    if mbr and len(candidates) > 1:
        for cand, score in zip(candidates, mbr_scores(candidates, similarity)):
            cand.score = score
    order = sorted(range(len(candidates)), key=lambda i: (
        not candidates[i].valid,
        -(candidates[i].score if candidates[i].score is not None else 0.0),
        -candidates[i].count,
        i,
    ))
    return candidates[order[0]]
