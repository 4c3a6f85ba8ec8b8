"""Edits that move a neighbour's query towards the request, through the AST.

Each edit is a function ``(script, ctx) -> bool`` that changes the parsed
``overpassql`` script in place and says whether it changed anything; the query
text is then produced by ``overpassql.dump`` so that it keeps the dataset's
formatting and stays valid (``overpassql.check``). Groups of edits can be switched off
(:class:`EditOptions`) so the ablation is a command.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field

import overpassql
from overpassql import ast as A

from geoql.app.cpu.lexicon import MAIN_SHARE, TagLexicon
from geoql.core.errors import ConfigError
from geoql.nl.english import EnglishReading
from geoql.nl.words import word_stems
from geoql.nl.text import plain_number

AREA_PLACEHOLDERS = ("{{geocodeArea:", "{{nominatimArea:")
NAME_KEYS = ("name", "name:en", "name:de", "name:fr", "int_name", "official_name")
TYPE_ORDER = ("node", "way", "relation")
_PLACEHOLDER_NAME = re.compile(r"^\{\{(geocodeArea|nominatimArea):\s*(\"?)(.*?)\2\s*\}\}$", re.DOTALL)


@dataclass
class EditOptions:
    """Which groups of edits to apply (all on by default; switch off for ablations)."""

    area: bool = field(default=True, metadata={"help": "replace/add/remove the place (geocodeArea, area name, bbox)"})
    tags: bool = field(default=True, metadata={"help": "replace tags the request does not ask for by ones it does"})
    types: bool = field(default=True, metadata={"help": "node/way/relation as the request names them"})
    output: bool = field(default=True, metadata={"help": "count vs list ('how many ...')"})
    numbers: bool = field(default=True, metadata={"help": "around distances, dates, user names and ids"})

    @property
    def any(self) -> bool:
        return self.area or self.tags or self.types or self.output or self.numbers

    @classmethod
    def none(cls) -> "EditOptions":
        return cls(area=False, tags=False, types=False, output=False, numbers=False)

    @classmethod
    def parse(cls, text: str) -> "EditOptions":
        """``"all"``, ``"none"`` or a comma list of groups, e.g. ``"area,tags"``.

        >>> EditOptions.parse("area,tags")
        EditOptions(area=True, tags=True, types=False, output=False, numbers=False)
        >>> EditOptions.parse("colour")
        Traceback (most recent call last):
        ...
        geoql.core.errors.ConfigError: unknown edit group 'colour': use all, none or a comma list of area, tags, types, output, numbers
        """
        text = text.strip().lower()
        if text == "all":
            return cls()
        opts = cls.none()
        if text == "none":
            return opts
        names = ("area", "tags", "types", "output", "numbers")
        for part in filter(None, (p.strip() for p in text.split(","))):
            if part not in names:
                raise ConfigError(
                    f"unknown edit group {part!r}: use all, none or a comma list of {', '.join(names)}"
                )
            setattr(opts, part, True)
        return opts

    def spec(self) -> str:
        names = [n for n in ("area", "tags", "types", "output", "numbers") if getattr(self, n)]
        return ",".join(names) if names else "none"


@dataclass
class EditContext:
    """What the edits know: the request (the CPU default's view of it, ``app.cpu.request.view``),
    the example the query came from, the lexicon."""

    info: EnglishReading
    example_nl: str
    lexicon: TagLexicon
    aliases: dict[str, str] = field(default_factory=dict)
    _wanted: list | None = field(default=None, repr=False)
    hints: dict[str, float] | None = None  # the tag retriever's tags for the request (app.cpu.hints), if any

    def wanted_tags(self, threshold: float) -> list[tuple[str, float]]:
        """The tags the request's words call for (computed once per request)."""
        if self._wanted is None:
            self._wanted = self.lexicon.best_tags(self.info.stems, limit=8)
        return [(t, p) for t, p in self._wanted if p >= threshold]


def statement_lists(script):
    """Every statement list in the script (top level and block bodies)."""
    lists = [script.statements]
    for node in A.walk(script):
        if isinstance(node, (A.Union_, A.Difference, A.Block)):
            lists.append(node.body)
            if isinstance(node, A.Block) and node.else_body:
                lists.append(node.else_body)
    return lists


def area_names(script) -> list[str]:
    """The place names a script uses, in source order (geocodeArea, nominatimArea, area[name=...])."""
    names = []
    for node in A.walk(script):
        if isinstance(node, (A.Placeholder, A.PlaceholderFilter)):
            m = _PLACEHOLDER_NAME.match(node.text.strip())
            if m:
                names.append(m.group(3))
        elif isinstance(node, A.Query) and node.type == "area":
            for f in node.filters:
                if isinstance(f, A.Tag) and f.key in NAME_KEYS and f.op == "=":
                    names.append(f.value)
    return names


def edit_area(script, ctx: EditContext) -> bool:
    """Put the request's place into the query: rename, or switch between place and map view."""
    info = ctx.info
    if info.in_view and info.area is None:
        return _area_to_view(script)
    if info.area is None:
        return False
    new = ctx.aliases.get(info.area, info.area)
    names = set(area_names(script))
    if len(names) == 1:
        (old,) = names
        if old == new:
            return False
        changed = False
        for node in A.walk(script):
            if isinstance(node, (A.Placeholder, A.PlaceholderFilter)):
                m = _PLACEHOLDER_NAME.match(node.text.strip())
                if m:
                    node.text = f"{{{{{m.group(1)}:{m.group(2)}{new}{m.group(2)}}}}}"
                    changed = True
            elif isinstance(node, A.Query) and node.type == "area":
                for f in node.filters:
                    if isinstance(f, A.Tag) and f.key in NAME_KEYS and f.op == "=" and f.value == old:
                        f.value = new
                        changed = True
        return changed
    if not names and not info.in_view:
        return _view_to_area(script, new)
    return False


def _area_to_view(script) -> bool:
    """Request is about the map view: drop a single geocodeArea and filter by {{bbox}}."""
    placeholders = [
        (body, s) for body in statement_lists(script) for s in body
        if isinstance(s, A.Placeholder) and s.text.strip().startswith(AREA_PLACEHOLDERS)
    ]
    if len(placeholders) != 1:
        return False
    body, stmt = placeholders[0]
    area_set = stmt.into
    users = [
        (q, f) for q in A.walk(script) if isinstance(q, A.Query)
        for f in q.filters if isinstance(f, A.AreaFilter) and f.set == area_set and f.ref is None
    ]
    if not users:
        return False
    for q, f in users:
        q.filters[q.filters.index(f)] = A.PlaceholderFilter("{{bbox}}")
    body.remove(stmt)
    return True


def _view_to_area(script, name: str) -> bool:
    """Request names a place but the query filters by {{bbox}}: search the place instead."""
    changed = False
    for q in A.walk(script):
        if isinstance(q, A.Query):
            for i, f in enumerate(q.filters):
                if isinstance(f, A.PlaceholderFilter) and f.text.strip() == "{{bbox}}":
                    q.filters[i] = A.AreaFilter(set="searchArea")
                    changed = True
    if changed:
        script.statements.insert(0, A.Placeholder(f'{{{{geocodeArea:"{name}"}}}}', into="searchArea"))
    return changed


def edit_tags(script, ctx: EditContext, *, keep: float = 0.12, want: float = 0.35) -> bool:
    """Replace ``key=value`` filters the request does not call for by tags it does.

    A tag is replaced when the example's request explains it (its words predict
    the tag) but this request does not; the replacement is the tag this
    request's words predict best (same key first), not already in the query.
    """
    lex = ctx.lexicon
    words = ctx.info.stems
    example_words = word_stems(ctx.example_nl)
    tags = [n for n in A.walk(script) if isinstance(n, A.Tag) and n.op == "=" and not n.key_regex and n.value]
    present = {f"{t.key}={t.value}" for t in tags}
    wanted = [(t, p) for t, p in ctx.wanted_tags(want) if t not in present]
    if not wanted:
        return False
    mapping: dict[str, str] = {}
    for t in tags:
        name = f"{t.key}={t.value}"
        if name in mapping or t.key in NAME_KEYS:
            continue
        if lex.support(words, name) >= keep or lex.support(example_words, name) < want:
            continue
        options = [w for w, _ in wanted if w not in mapping.values()]
        same_key = [w for w in options if w.split("=", 1)[0] == t.key]
        choice = (same_key or options or [None])[0]
        if choice:
            mapping[name] = choice
    changed = False
    for t in tags:
        new = mapping.get(f"{t.key}={t.value}")
        if new:
            t.key, t.value = new.split("=", 1)
            changed = True
    return changed


def _tag_name(tag) -> str:
    return f"{tag.key}={tag.value}" if tag.op == "=" and tag.value else tag.key


def _tag_queries(script) -> list:
    """The statements that select the elements asked for: non-area queries with a tag filter."""
    return [
        q for q in A.walk(script)
        if isinstance(q, A.Query) and q.type != "area"
        and any(isinstance(f, A.Tag) and not f.key_regex and f.key not in NAME_KEYS for f in q.filters)
    ]


def edit_add_tags(script, ctx: EditContext, *, want: float = 0.5, limit: int = 2) -> bool:
    """Add the qualifying tags the request's own words call for but the query lacks.

    "... with wheelchair access" gets ``["wheelchair"="yes"]``, "... without a
    website" ``[!"website"]``. Only words the example's request does not have
    count: the example's words are already answered by its query. A key the
    query filters on in any way is left alone (that is :func:`edit_tags`' job),
    and so are the keys that say what an element is (``amenity``): adding one
    next to another main tag would select nothing. The new filters go after the
    last tag filter of every statement that selects the elements asked for.
    """
    new_words = ctx.info.stems - word_stems(ctx.example_nl)
    if not new_words:
        return False
    queries = _tag_queries(script)
    if not queries:
        return False
    keys = {n.key for n in A.walk(script) if isinstance(n, A.Tag)}
    added = []
    for tag, _ in ctx.lexicon.qualifiers(new_words, threshold=want):
        key, _, value = tag.partition("=")
        if key in keys or key.startswith(NAME_KEYS):
            continue
        word = max(sorted(new_words), key=lambda w: ctx.lexicon.word_tag.get(w, {}).get(tag, 0.0))
        if ctx.info.negates(word):  # "without a website"
            if value:
                continue
            added.append(A.Tag(key, op="not_exists"))
        else:
            added.append(A.Tag(key, value, "=") if value else A.Tag(key))
        keys.add(key)
        if len(added) == limit:
            break
    _append_filters(queries, added)
    return bool(added)


def _append_filters(queries, tags) -> None:
    """Put ``tags`` after the last tag filter of each statement (copies, on that filter's line)."""
    for q in queries:
        last = max(i for i, f in enumerate(q.filters) if isinstance(f, A.Tag))
        for offset, tag in enumerate(tags, 1):
            q.filters.insert(last + offset, dataclasses.replace(tag, line=q.filters[last].line))


def edit_drop_tags(script, ctx: EditContext, *, keep: float = 0.12, want: float = 0.35) -> bool:
    """Remove extra filters that only the example's words explain ("... with wifi" copied to "cafes").

    The first tag filter of a statement (its main tag) always stays, so the
    query keeps selecting the kind of element it did.
    """
    lex = ctx.lexicon
    words = ctx.info.stems
    example_only = word_stems(ctx.example_nl) - words
    if not example_only:
        return False
    changed = False
    for q in _tag_queries(script):
        tags = [f for f in q.filters if isinstance(f, A.Tag) and not f.key_regex and f.key not in NAME_KEYS]
        for t in tags[1:]:
            name = _tag_name(t)
            if lex.support(example_only, name) >= want and lex.support(words, name) < keep:
                q.filters.remove(t)
                changed = True
    return changed


def edit_hint_tags(script, ctx: EditContext, *, want: float = 0.2, limit: int = 2) -> bool:
    """Put the tags the tag retriever is confident about into the query.

    A hinted tag whose key the query filters on with another value replaces that
    value; a hinted key that says what an element is (``amenity``, ``shop``)
    replaces the main tag of every statement, unless the retriever backs that tag
    too; any other hinted tag qualifies the elements and is added after the last
    tag filter (``outdoor_seating=yes`` for "cafes with outdoor seating").
    """
    if not ctx.hints:
        return False
    queries = _tag_queries(script)
    if not queries:
        return False
    tags = [n for q in queries for n in q.filters if isinstance(n, A.Tag) and not n.key_regex and n.key not in NAME_KEYS]
    present = {_tag_name(t) for t in tags}
    keys = {t.key for t in tags}
    changes = 0
    for hint, p in sorted(ctx.hints.items(), key=lambda kv: (-kv[1], kv[0])):
        if p < want or changes == limit:
            break
        key, _, value = hint.partition("=")
        if hint in present or key.startswith(NAME_KEYS):
            continue
        same_key = [t for t in tags if t.key == key and t.op == "="]
        if key in keys and not same_key:
            continue  # filtered on in another way ([!"key"], key~regex): the query means something else
        if same_key:
            for t in same_key:
                t.value = value
        elif key in ctx.lexicon.key_main and ctx.lexicon.main_share(key) >= MAIN_SHARE:
            mains = [next(f for f in q.filters if isinstance(f, A.Tag) and f.key not in NAME_KEYS) for q in queries]
            if any(ctx.hints.get(_tag_name(m), 0.0) >= want or m.key_regex for m in mains):
                continue
            for m in mains:
                m.key, m.value, m.op, m.case_insensitive = key, value, "=", False
        else:
            _append_filters(queries, [A.Tag(key, value, "=")])
        present.add(hint)
        keys.add(key)
        changes += 1
    return changes > 0


def _filters_key(q) -> str:
    return repr([{k: v for k, v in vars(f).items() if k != "line"} for f in q.filters]) + q.into


def edit_types(script, ctx: EditContext) -> bool:
    """Make the element types match the ones the request names ("nodes and ways")."""
    want = [t for t in TYPE_ORDER if t in ctx.info.types]
    if not want:
        return False
    changed = False
    for body in statement_lists(script):
        groups: dict[str, list] = {}
        for s in body:
            if isinstance(s, A.Query) and s.type in TYPE_ORDER + ("nwr",) and any(isinstance(f, A.Tag) for f in s.filters):
                groups.setdefault(_filters_key(s), []).append(s)
        for members in groups.values():
            have = {"node", "way", "relation"} if any(m.type == "nwr" for m in members) else {m.type for m in members}
            if have == set(want):
                continue
            if len(want) > 1 and not isinstance(body, list):
                continue
            at = body.index(members[0])
            for m in members:
                body.remove(m)
            if len(want) > 1 and body is script.statements and members[0].into != "_":
                continue  # a named result would need a union; leave such queries alone
            copies = []
            for t in want:
                c = copy.deepcopy(members[0])
                c.type = t
                copies.append(c)
            body[at:at] = copies
            changed = True
    return changed


def edit_output(script, ctx: EditContext) -> bool:
    """Count when the request asks "how many", list otherwise."""
    outs = [s for s in script.statements if isinstance(s, A.Out)]
    if not outs:
        return False
    counting = any("count" in o.options for o in outs)
    if ctx.info.count and not counting:
        first = script.statements.index(outs[0])
        # Everything after the first output (recursions, more outs) only serves listing.
        del script.statements[first + 1 :]
        outs[0].options = ["count"]
        return True
    if not ctx.info.count and counting and len(outs) == 1:
        outs[0].options = []
        return True
    return False


# What a query without any output statement gets: the training queries' commonest ending
# (a listing with the ways' and relations' nodes), or a count.
_LISTING = "out;>;out skel qt;"
_COUNTING = "out count;"


def with_output(query: str, count: bool) -> str:
    """``query`` with an output statement appended when it has none: a query without one
    runs and returns nothing (166 of the 6,352 training queries are like that; no dev query is).

    >>> with_output('area["name"="Bonn"]->.a;nwr["amenity"="cafe"](area.a);', count=False)
    'area["name"="Bonn"]->.a;nwr["amenity"="cafe"](area.a);out;>;out skel qt;'
    >>> with_output('[out:json];nwr["amenity"="cafe"]({{bbox}});', count=True)
    '[out:json];nwr["amenity"="cafe"]({{bbox}});out count;'
    >>> with_output('nwr["amenity"="cafe"]({{bbox}});out;', count=True)
    'nwr["amenity"="cafe"]({{bbox}});out;'
    """
    if overpassql.has_output(query):  # nearly every query: no parse
        return query
    try:
        script = overpassql.parse(query)
    except overpassql.ParseError:
        return query
    script.statements.extend(overpassql.parse(_COUNTING if count else _LISTING).statements)
    text = overpassql.dump(script)
    return text if parses(text) else query


def _same_day(node, date: str) -> str:
    """The end of a ``changed`` window moved with its start: a window within one day
    ("2019-08-27T00:00:00Z" to "2019-08-27T23:58:59Z") keeps its hours on the request's day.

    >>> _same_day(A.Changed('"2019-08-27T00:00:00Z"', '"2019-08-27T23:58:59Z"'), "2019-07-15T00:00:00Z")
    '"2019-07-15T23:58:59Z"'
    >>> _same_day(A.Changed('"2019-01-01T00:00:00Z"', '"2019-03-01T00:00:00Z"'), "2019-07-15T00:00:00Z")
    '"2019-03-01T00:00:00Z"'
    """
    since, until = node.since.strip('"'), node.until.strip('"') if node.until else ""
    if len(since) >= 10 and since[:10] == until[:10] and len(until) > 10:
        quote = '"' if node.until.startswith('"') else ""
        return f"{quote}{date[:10]}{until[10:]}{quote}"
    return node.until


def edit_numbers(script, ctx: EditContext) -> bool:
    """Distances, dates, user names and ids from the request."""
    changed = False
    distance = ctx.info.distance
    dates = [d if "T" in d else d + "T00:00:00Z" for d in ctx.info.dates]
    uid = ctx.info.uid
    users = list(ctx.info.users)
    for node in A.walk(script):
        if isinstance(node, A.Around) and distance:
            value = float(distance[0]) * (1000 if distance[1].lower().startswith("k") else 1)
            radius = plain_number(value)
            if radius and node.radius != radius:
                node.radius, changed = radius, True
        elif isinstance(node, A.Newer) and dates:
            new = f'"{dates[0]}"' if node.date.startswith('"') else dates[0]
            if node.date != new and "{{" not in node.date:
                node.date, changed = new, True
        elif isinstance(node, A.Changed) and dates and node.since and "{{" not in node.since:
            quote = '"' if node.since.startswith('"') else ""
            since = f"{quote}{dates[0]}{quote}"
            until = f"{quote}{dates[1]}{quote}" if len(dates) > 1 else _same_day(node, dates[0])
            if (node.since, node.until) != (since, until):
                node.since, node.until, changed = since, until, True
        elif isinstance(node, A.Uid) and uid and node.uids != [uid]:
            node.uids, changed = [uid], True
        elif isinstance(node, A.User) and users and not any("{{" in n for n in node.names):
            quoted = [n if n.startswith('"') else n for n in node.names]
            new = [f'"{u}"' if quoted and quoted[0].startswith('"') else u for u in users]
            if node.names != new:
                node.names, changed = new, True
    return changed


EDITS = (
    ("area", edit_area),
    ("tags", edit_tags),
    ("types", edit_types),
    ("output", edit_output),
    ("numbers", edit_numbers),
)


def apply_edits(query: str, ctx: EditContext, options: EditOptions) -> tuple[str, tuple[str, ...]] | None:
    """The edited query and the names of the edits that changed it.

    ``None`` when the query is not valid (such a neighbour is not a candidate).
    """
    if not parses(query):
        return None
    try:
        script = overpassql.parse(query)
    except overpassql.ParseError:  # valid for the converter, yet a placeholder the parser cannot place
        return None
    applied = []
    for name, edit in EDITS:
        if getattr(options, name) and edit(script, ctx):
            applied.append(name)
    if not applied:
        return query, ()
    text = overpassql.dump(script)
    if not parses(text):
        # An edit produced an invalid query: keep the unedited one.
        return query, ()
    return text, tuple(applied)


# Edits that are offered as extra versions on top of the full edit (the selector
# chooses): unlike the others they are often wrong, so they never replace it.
EXTRA_EDITS = (
    ("add_tags", edit_add_tags),
    ("drop_tags", edit_drop_tags),
    ("hint_tags", edit_hint_tags),
)


def apply_extra(query: str, ctx: EditContext, edit) -> str | None:
    """``query`` with one more edit, or ``None`` when it changes nothing (or would not be valid)."""
    found = apply_extras(query, ctx, [("", edit)])
    return found[0][1] if found else None


def apply_extras(query: str, ctx: EditContext, edits) -> list[tuple[str, str]]:
    """``(name, query with that edit)`` for each ``(name, edit)`` of ``edits`` that changes ``query`` into
    another valid query: what :func:`apply_extra` gives one edit at a time, with one parse shared by
    the edits that change nothing (an edit leaves the tree as it was when it returns False)."""
    out: list[tuple[str, str]] = []
    script = None
    for name, edit in edits:
        if script is None:
            try:
                script = overpassql.parse(query)
            except overpassql.ParseError:
                return out
        if not edit(script, ctx):
            continue
        text = overpassql.dump(script)
        script = None  # changed: the next edit starts from the query again
        if text != query and parses(text):
            out.append((name, text))
    return out


def parses(query: str) -> bool:
    """Whether ``query`` is valid: ``overpassql.check`` finds nothing wrong with it."""
    return not overpassql.check(query)
