"""Say in plain words what a query does, from its AST.

>>> explain('{{geocodeArea:"Heidelberg"}}->.a;nwr["amenity"="cafe"]["outdoor_seating"="yes"](area.a);out center;')
'Nodes, ways and relations tagged `amenity=cafe` and `outdoor_seating=yes` inside the area named Heidelberg; output their tags and centre point.'
>>> explain('node["amenity"="cafe"]({{bbox}});out;', tag_names={"amenity=cafe": "Cafe"})
'Nodes tagged `amenity=cafe` (Cafe) inside the current map view; output their tags and geometry.'
>>> explain('node["amenity"="cafe"]({{bbox}});out;', lang="de")
'Knoten mit `amenity=cafe` im aktuellen Kartenausschnitt; Ausgabe: Tags und Geometrie.'

The words are data: ``explain.json`` beside this module holds one phrase table per
language (``en``, ``de``, ``fr``); a phrase missing from a table, or a language
without a table, falls back to English. A phrase is either one text or, where the
language inflects, a ``{"top": ..., "ref": ...}`` pair: ``top`` where the phrase
starts a sentence or is the subject of a clause, ``ref`` after a preposition (the
German dative, the French article). ``{x}`` in a phrase takes the embedded phrase
in its ``ref`` form, ``{x_nom}`` in its ``top`` form.

How the description is built: the statements are read in order, keeping for every
set (``_`` and the named ones) a noun phrase for what it holds. A query becomes
"<types> <filters>", a reference to a set inlines that set's phrase (a long one is
introduced once as "Set `x`: ..." and then named), and each ``out`` turns the phrase
of its set into a sentence. Union members that differ only in element type are
merged ("Nodes, ways and relations tagged ..."), as are members that differ only in
their one tag ("tagged `amenity=bar` or `amenity=pub`"). A phrase that is never
output still gets its sentence, so every tag filter of the query is named.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from . import ast as A
from .criteria import poly_numbers
from .parser import comma_items, deep_recursion, parse
from .ql import expr_to_ql
from .tokens import decode_string

PHRASES_PATH = Path(__file__).with_name("explain.json")
INLINE_MAX = 200  # characters: a referenced set with a longer phrase is named instead
EXPR_MAX = 300  # characters of an evaluator shown verbatim
TYPE_ORDER = ("node", "way", "relation", "area", "derived")
QUERY_TYPES = {"node": ("node",), "way": ("way",), "relation": ("relation",), "area": ("area",),
               "derived": ("derived",), "nwr": ("node", "way", "relation"), "nw": ("node", "way"),
               "wr": ("way", "relation"), "nr": ("node", "relation")}
_UNITS = re.compile(r"^\s*(-?\d+)\s*(second|minute|hour|day|week|month|year)s?\s*$", re.I)
_SPATIAL = (A.AreaFilter, A.Around, A.BBox, A.Poly, A.PlaceholderFilter)


@lru_cache(maxsize=1)
def _tables() -> dict:
    with open(PHRASES_PATH, encoding="utf-8") as f:
        return json.load(f)


def languages() -> list[str]:
    """The languages with a phrase table.

    >>> languages()
    ['de', 'en', 'fr']
    """
    return sorted(_tables())


def _language(lang) -> str:
    code = str(lang or "en").strip().lower().replace("_", "-").split("-")[0]
    return code if code in _tables() else "en"


class _Words:
    """One language's phrase table, English underneath."""

    def __init__(self, lang: str):
        tables = _tables()
        self.lang = _language(lang)
        self.own = tables[self.lang]
        self.en = tables["en"]
        self.contractions = [tuple(c) for c in self.get("contractions")]

    def get(self, key: str, form: str = "top", /):
        value = self.own.get(key, self.en[key])
        if isinstance(value, dict):
            value = value.get(form, value.get("top", ""))
        return value

    def fill(self, key: str, form: str = "top", /, **slots) -> str:
        template = self.get(key, form)
        out: list[str] = []
        pos = 0
        for m in re.finditer(r"\{(\w+)\}", template):
            out.append(template[pos:m.start()])
            pos = m.end()
            name = m.group(1)
            nominative = name.endswith("_nom")
            value = slots.get(name[:-4] if nominative else name, "")
            if isinstance(value, _NP):
                value = value.render("top" if nominative else "ref")
            out.append(self._contract(out, str(value)))
        out.append(template[pos:])
        return "".join(out)

    def _contract(self, out: list[str], value: str) -> str:
        """French "de les" -> "des", German "in dem" -> "im": at the seam of a slot."""
        if not self.contractions:
            return value
        before = "".join(out)
        for word, article, joined in self.contractions:
            if value.startswith(article + " ") and (before.endswith(" " + word + " ")
                                                   or before == word + " "):
                out[:] = [before[:len(before) - len(word) - 1]]
                return joined + value[len(article):]
            cap = word[:1].upper() + word[1:]
            if value.startswith(article + " ") and before == cap + " ":
                out[:] = [""]
                return joined[:1].upper() + joined[1:] + value[len(article):]
        return value

    def join(self, items: list[str], last: str = "and") -> str:
        items = [i for i in items if i]
        if len(items) <= 1:
            return "".join(items)
        return self.get("comma").join(items[:-1]) + self.get(last) + items[-1]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _code(text: str) -> str:
    return "`" + text + "`"


# ------------------------------------------------------------------ noun phrases

class _NP:
    """A phrase for what a set holds; ``render(form)`` gives its text."""

    plural = True
    compound = False  # a union or difference: bracketed where it is embedded
    opaque = False  # names no tags of its own (a loop variable, the empty set)
    is_pronoun = False  # "them": a set the sentence before (or the union member before) named

    def __init__(self, types: Optional[frozenset] = None):
        self.types = types
        self.shown = False  # its text (and so its tag filters) is in the explanation
        self.used = False  # another phrase embeds it (shown when that one is)
        self.children: list[_NP] = []  # the phrases it embeds
        self.stated = False  # it was the subject of an output sentence
        self.named: set[str] = set()  # set names it was introduced under ("Set `x`: ...")
        self._cache: dict[str, str] = {}

    def render(self, form: str = "top") -> str:
        if form not in self._cache:
            self._cache[form] = self._render(form)
        return self._cache[form]

    def _render(self, form: str) -> str:  # pragma: no cover - every subclass has one
        raise NotImplementedError


class _Frame(_NP):
    """A phrase from the table with slots (other phrases or texts)."""

    def __init__(self, words: _Words, key: str, types=None, plural=True, opaque=False, **slots):
        super().__init__(types)
        self.words, self.key, self.slots = words, key, slots
        self.plural, self.opaque = plural, opaque
        self.children = [v for v in slots.values() if isinstance(v, _NP)]

    def _render(self, form: str) -> str:
        return self.words.fill(self.key, form, **self.slots)


class _Query(_NP):
    """``<types> <filter phrases>``, kept in parts so that union members can merge."""

    def __init__(self, words: _Words, types: tuple, pre: list, tagged: list, post: list,
                 tag_join: str = "and", one_id: Optional[str] = None, whose: tuple = ()):
        super().__init__(frozenset(types) if types else None)
        self.words = words
        self.type_list = types  # () for "elements" (type unknown)
        self.pre, self.tagged, self.post, self.tag_join = pre, tagged, post, tag_join
        self.whose = tuple(whose)  # (key, "~" or "!~", values (any of them), ignore case)
        self.one_id = one_id  # "relation 62484" instead of "relations with id 62484"
        self.plural = one_id is None

    def phrases(self) -> list[tuple[str, bool]]:
        w = self.words
        items = list(self.pre)
        if self.tagged:
            tags = w.join(self.tagged, self.tag_join)
            items.append((w.fill("tagged", items=tags), False))
        if self.whose:
            parts = []
            for key, op, values, ci in self.whose:
                res = w.join([_code(v) for v in values], "or")
                text = w.fill("matches" if op == "~" else "not_matches", key=key, re=res)
                parts.append(text + (w.get("any_case") if ci else ""))
            items.append((w.fill("whose", items=w.join(parts)), False))
        return items + list(self.post)

    def _render(self, form: str) -> str:
        w = self.words
        if self.one_id is not None:
            head = self.one_id
        else:
            nouns = [w.get("type_" + t, form) for t in self.type_list] or [w.get("type_any", form)]
            head = w.get("article", form) + w.join(nouns)
        phrases = self.phrases()
        if not phrases:
            return head
        if len(phrases) == 2 and phrases[1][1]:  # "tagged ... inside ...": no comma
            return head + " " + phrases[0][0] + " " + phrases[1][0]
        return head + " " + w.get("comma").join(p for p, _ in phrases)

    def signature(self) -> tuple:
        return (tuple(self.pre), tuple(self.tagged), self.tag_join, self.whose, tuple(self.post),
                self.one_id)


class _Union(_NP):
    def __init__(self, words: _Words, members: list[_NP]):
        types = None
        if members and all(m.types is not None for m in members):
            types = frozenset().union(*(m.types for m in members))
        super().__init__(types)
        self.words = words
        self.members = _merge(words, members)
        self.compound = len(self.members) > 1
        self.children = list(members)

    def _render(self, form: str) -> str:
        parts = []
        for i, m in enumerate(self.members):
            # "more": a member after the first, where French wants its article back
            text = m.render("more" if i and form == "top" else form)
            parts.append("(" + text + ")" if m.compound else text)
        return self.words.get("union").join(parts)


class _Difference(_NP):
    compound = True

    def __init__(self, words: _Words, a: _NP, b: _NP):
        super().__init__(a.types)
        self.words, self.a, self.b = words, a, b
        self.children = [a, b]

    def _render(self, form: str) -> str:
        a = self.a.render(form)
        b = self.b.render("ref")
        return self.words.fill("except", form, a="(" + a + ")" if self.a.compound else a,
                               b="(" + b + ")" if self.b.compound else b)


class _Bracketed(_NP):
    """A compound phrase embedded in another one."""

    def __init__(self, inner: _NP):
        super().__init__(inner.types)
        self.inner = inner
        self.plural = inner.plural
        self.children = [inner]

    def _render(self, form: str) -> str:
        return "(" + self.inner.render(form) + ")"


def _merge(words: _Words, members: list[_NP]) -> list[_NP]:
    """Union members: the same filters on other types merge into one phrase, then
    members that differ only in their single tag merge into "tagged A or B"."""
    merged: list[_NP] = []
    for m in members:
        if isinstance(m, _Query) and m.one_id is None:
            for i, g in enumerate(merged):
                if isinstance(g, _Query) and g.one_id is None and g.signature() == m.signature():
                    types = tuple(t for t in TYPE_ORDER if t in set(g.type_list) | set(m.type_list))
                    if not g.type_list or not m.type_list:
                        types = ()
                    merged[i] = _Query(words, types, g.pre, g.tagged, g.post, g.tag_join,
                                       whose=g.whose)
                    merged[i].children = g.children + m.children
                    break
            else:
                merged.append(m)
        else:
            merged.append(m)
    result: list[_NP] = []
    for m in merged:
        for i, g in enumerate(result):
            alternative = _alternative(words, g, m)
            if alternative is not None:
                alternative.children = g.children + m.children
                result[i] = alternative
                break
        else:
            result.append(m)
    return result


def _alternative(words: _Words, g: _NP, m: _NP) -> Optional[_NP]:
    """``g`` and ``m`` as one phrase when they differ only in one tag condition:
    "tagged `a=b` or `c=d`", "whose `name` matches `x` or `y`"."""
    if not (isinstance(g, _Query) and isinstance(m, _Query)) or g.one_id or m.one_id:
        return None
    if g.type_list != m.type_list or g.pre != m.pre or g.post != m.post:
        return None
    if (not g.whose and not m.whose and len(m.tagged) == 1
            and (len(g.tagged) == 1 or g.tag_join == "or")):
        tagged = g.tagged + [t for t in m.tagged if t not in g.tagged]
        return _Query(words, g.type_list, g.pre, tagged, g.post, "or")
    if (not g.tagged and not m.tagged and len(g.whose) == 1 and len(m.whose) == 1
            and g.whose[0][0:2] == m.whose[0][0:2] and g.whose[0][3] == m.whose[0][3]
            and m.whose[0][1] == "~"):
        key, op, values, ci = g.whose[0]
        values = values + tuple(v for v in m.whose[0][2] if v not in values)
        return _Query(words, g.type_list, g.pre, [], g.post, whose=((key, op, values, ci),))
    return None


# -------------------------------------------------------------------- the reader

def _placeholder_parts(text: str) -> tuple[str, str]:
    inner = text[2:-2] if text.startswith("{{") and text.endswith("}}") else text
    kind, _, arg = inner.partition(":")
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] == arg[-1] == '"':
        arg = arg[1:-1]
    return kind.strip(), arg


def _number(text: str, decimal: str) -> Optional[str]:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    out = f"{value:.6f}".rstrip("0").rstrip(".")
    return out.replace(".", decimal)


def _expr(tree: Optional[A.Expr]) -> str:
    try:
        text = expr_to_ql(tree)
    except RecursionError:
        text = "…"
    return text if len(text) <= EXPR_MAX else text[:EXPR_MAX] + "…"


class _Reader:
    def __init__(self, words: _Words, tag_names: Optional[Mapping]):
        self.w = words
        self.names = tag_names or {}
        self.sets: dict[str, _NP] = {}
        self.named_order: list[str] = []
        self.sentences: list[str] = []
        self.previous: Optional[_NP] = None  # the union member just before (for "their nodes")
        self.last_stated: Optional[_NP] = None  # the subject of the sentence just said
        self.collect: list[_NP] = []  # the phrases resolved for the phrase being built

    # ------------------------------------------------------------ sets
    def empty(self) -> _NP:
        np = _Frame(self.w, "empty", types=frozenset(), opaque=True)
        np.shown = True
        return np

    def pronoun(self, np: _NP) -> _NP:
        pron = _Frame(self.w, "pron", types=np.types, opaque=True)
        pron.shown = pron.is_pronoun = True
        return pron

    def assign(self, name: str, np: _NP) -> None:
        old = self.sets.get(name)
        if old is not None and old is not np and not old.shown and not old.used:
            self.flush(name, old)
        self.sets[name] = np
        if name != "_" and name not in self.named_order:
            self.named_order.append(name)

    def flush(self, name: str, np: _NP) -> None:
        _mark_shown(np)
        if name == "_":
            self.say(self.w.fill("not_output", np=_cap(np.render("top"))))
        else:
            self.say(self.w.fill("set_def", name=name, np=np.render("top")))

    def say(self, sentence: str) -> None:
        self.sentences.append(sentence)

    def resolve(self, name: Optional[str]) -> _NP:
        """The phrase that stands for set ``name`` inside another phrase."""
        np = self._resolve(name or "_")
        np.used = True
        self.collect.append(np)
        return np

    def _resolve(self, name: str) -> _NP:
        np = self.sets.get(name)
        if np is None:
            if name == "_":
                return self.empty()
            ref = _Frame(self.w, "set_ref", name=name)
            ref.shown = True
            return ref
        if np.opaque:
            return np
        if np is self.last_stated or np is self.previous:
            return self.pronoun(np)
        if len(np.render("ref")) > INLINE_MAX:
            if name == "_":
                np.stated = True
                _mark_shown(np)
                self.say(self.w.fill("first", np=_cap(np.render("top"))))
                self.last_stated = np
                return self.pronoun(np)
            if name not in np.named:
                np.named.add(name)
                _mark_shown(np)
                self.say(self.w.fill("set_def", name=name, np=np.render("top")))
            ref = _Frame(self.w, "set_ref", types=np.types, name=name)
            ref.shown = True
            return ref
        if np.compound:
            np.used = True
            return _Bracketed(np)
        return np

    # ------------------------------------------------------------ statements
    def body(self, statements: list) -> None:
        i = 0
        while i < len(statements):
            i += self.statement(statements, i)

    def statement(self, statements: list, i: int) -> int:
        """Read ``statements[i]``; return how many statements were read."""
        st = statements[i]
        if isinstance(st, A.Out):
            return self.out(statements, i)
        if isinstance(st, A.Placeholder) and st.definition:
            name, _, value = st.text[2:-2].partition("=")
            self.say(self.w.fill("definition", name="{{" + name.strip() + "}}",
                                 value=value.strip()))
            return 1
        if isinstance(st, A.Block) and st.keyword not in ("timeline", "local"):
            self.block(st)
            return 1
        np = self.phrase(st)
        self.assign(getattr(st, "into", "_") or "_", np)
        return 1

    def phrase(self, st) -> _NP:
        """The phrase for the result of a set-producing statement."""
        saved, self.collect = self.collect, []
        try:
            np = self._phrase(st)
            np.children = np.children + [c for c in self.collect if c is not np]
        finally:
            self.collect = saved
        return np

    def _phrase(self, st) -> _NP:
        w = self.w
        if isinstance(st, A.Query):
            return self.query(st)
        if isinstance(st, A.Item):
            np = self.resolve(st.set)
            return np.inner if isinstance(np, _Bracketed) else np  # ".x;" is x itself
        if isinstance(st, (A.Union_, A.Difference)):
            return self.group(st)
        if isinstance(st, A.Recurse):
            return self.recurse(st.kind, self.resolve(st.set))
        if isinstance(st, A.IsIn):
            if st.lat is not None:
                return _Frame(w, "is_in_point", types=frozenset({"area"}), lat=st.lat,
                              lon=st.lon or "")
            return _Frame(w, "is_in", types=frozenset({"area"}), x=self.resolve(st.set))
        if isinstance(st, A.MapToArea):
            return _Frame(w, "map_to_area", types=frozenset({"area"}), x=self.resolve(st.set))
        if isinstance(st, A.Make):
            return self.make(st)
        if isinstance(st, A.Placeholder):
            kind, arg = _placeholder_parts(st.text)
            if kind in ("geocodeArea", "nominatimArea"):
                return _Frame(w, "area_named", types=frozenset({"area"}), plural=False, name=arg)
            if kind in ("geocodeId", "nominatimId"):
                return _Frame(w, "found_element", plural=False, name=arg)
            return _Frame(w, "placeholder", plural=False, text=st.text)
        if isinstance(st, A.Block):  # timeline, local
            return self.set_block(st)
        return _Frame(w, "placeholder", plural=False, text=type(st).__name__)

    def group(self, st) -> _NP:
        members: list[_NP] = []
        was_used: list[bool] = []
        saved = self.previous
        self.previous = None
        for sub in st.body:
            if isinstance(sub, A.Out) or (isinstance(sub, A.Placeholder) and sub.definition):
                self.statement([sub], 0)
                continue
            if isinstance(sub, A.Block) and sub.keyword not in ("timeline", "local"):
                np = self.block(sub)
            else:
                np = self.phrase(sub)
                was_used.append(np.used)
                np.used = True  # it is part of the union's phrase
                self.assign(getattr(sub, "into", "_") or "_", np)
            members.append(np)
            self.previous = None if isinstance(sub, A.Block) else np
        self.previous = saved
        if isinstance(st, A.Difference) and len(members) >= 2:
            b = members[1] if len(members) == 2 else _Union(self.w, members[1:])
            return _Difference(self.w, members[0], b)
        if len(members) == 1:
            if was_used:
                members[0].used = was_used[0]  # "(q;)" is q itself
            return members[0]
        if not members:
            return self.empty()
        return _Union(self.w, members)

    def recurse(self, kind: str, x: _NP) -> _NP:
        types = x.types
        pronoun = x.is_pronoun
        if kind in (">", ">>"):
            if types is not None and types <= {"way"}:
                key, out = "down_way", frozenset({"node"})
            elif types is not None and types <= {"relation"} and kind == ">":
                key, out = "down_rel", frozenset({"node", "way", "relation"})
            else:
                key, out = "down", frozenset({"node", "way", "relation"})
            if pronoun:
                key += "_p"
            np = _Frame(self.w, key, types=out, x=x)
        else:
            if types is not None and types and types <= {"way", "relation"}:
                key, out = "up_rel", frozenset({"relation"})
            else:
                key, out = "up", frozenset({"way", "relation"})
            np = _Frame(self.w, key, types=out, x=x)
        if kind in (">>", "<<"):
            return _Suffixed(np, self.w.get("recursively"))
        return np

    def make(self, st: A.Make) -> _NP:
        w = self.w
        assigns = [_code(_expr(item)) for tree in st.assignments for item in comma_items(tree)]
        text = w.join(assigns)
        kind = st.type or "?"
        if st.keyword == "convert":
            return _Frame(w, "convert", types=frozenset({"derived"}), x=self.resolve(st.set),
                          type=kind, assigns=text)
        if self.sets.get(st.set or "_") is None:  # nothing to compute from
            key = "make_plain" if assigns else "make_empty"
            return _Frame(w, key, types=frozenset({"derived"}), plural=False, type=kind,
                          assigns=text)
        return _Frame(w, "make", types=frozenset({"derived"}), plural=False, type=kind,
                      assigns=text, x=self.resolve(st.set))

    def set_block(self, st: A.Block) -> _NP:
        w = self.w
        if st.keyword == "timeline":
            items = [_expr(i).strip('"') for i in comma_items(st.arg)]
            qtype = {"rel": "relation"}.get(items[0], items[0]) if items else ""
            ident = items[1] if len(items) > 1 else ""
            key = "one_" + qtype if qtype in TYPE_ORDER else "one_any"
            thing = w.fill(key, "ref", id=ident)
            types = frozenset({qtype}) if qtype in TYPE_ORDER else None
            if len(items) > 2:
                return _Frame(w, "version", types=types, plural=False, v=items[2], thing=thing)
            return _Frame(w, "versions", types=types, thing=thing)
        x = self.resolve(st.set)
        if st.arg is not None:
            return _Frame(w, "local_arg", x=x, arg=st.arg.token)
        return _Frame(w, "local", x=x)

    def block(self, st: A.Block) -> _NP:
        """A block with a body: its sentence; returns the phrase for its result."""
        w = self.w
        kw = st.keyword
        x = None
        if kw in ("foreach", "for", "complete", "compare"):
            saved_previous, self.previous = self.previous, None
            x = self.resolve(st.set)  # inline: the block's sentence comes before its union's
            self.previous = saved_previous
        loop = None
        if kw in ("foreach", "for", "complete"):
            key = {"foreach": "loop_each", "for": "loop_group", "complete": "loop_so_far"}[kw]
            loop = _Frame(w, key, types=x.types if x is not None else None,
                          plural=kw != "foreach", opaque=True)
            loop.shown = True
        before = dict(self.sets)
        if loop is not None:
            self.sets[(st.into or "_") if kw != "complete" else "_"] = loop
        body = self.inner(st.body)
        else_body = None
        if st.else_body is not None:
            after_then = self.sets
            self.sets = dict(before)
            else_body = self.inner(st.else_body)
            self.sets = {**after_then, **{k: v for k, v in self.sets.items() if k not in before
                                          or before[k] is not v}}
        if x is not None:
            _mark_shown(x)
        expr = _expr(st.arg) if st.arg is not None else ""
        if kw == "foreach":
            self.say(w.fill("foreach", x=x, body=body))
        elif kw == "for":
            self.say(w.fill("for", x=x, expr=expr, body=body))
        elif kw == "complete":
            self.say(w.fill("complete", x=x, body=body))
        elif kw == "retro":
            self.say(w.fill("retro", date=self.date(_arg_text(st.arg), "ago"), body=body))
        elif kw == "if":
            if else_body is not None:
                self.say(w.fill("if_else", expr=expr, body=body, **{"else": else_body}))
            else:
                self.say(w.fill("if", expr=expr, body=body))
        elif kw == "compare":
            self.say(w.fill("compare_by" if expr else "compare", x=x, expr=expr, body=body))
        else:
            self.say(w.fill("if", expr=kw + (" " + expr if expr else ""), body=body))
        if kw in ("foreach", "for", "complete"):
            result = _Frame(w, "loop_result" if kw != "complete" else "complete_result",
                            types=x.types if x is not None else None, opaque=True)
            result.shown = True
            if kw != "complete" and st.into not in (None, "_"):
                self.sets.pop(st.into, None)  # the loop variable ends with the loop
            self.sets[(st.into or "_") if kw == "complete" else "_"] = result
            self.last_stated = None
            return result
        self.last_stated = None
        return self.sets.get("_") or self.empty()

    def inner(self, statements: list) -> str:
        """The sentences of a block's body, every phrase it leaves unsaid included."""
        saved = self.sentences, self.previous, self.last_stated
        self.sentences, self.previous, self.last_stated = [], None, None
        before = dict(self.sets)
        self.body(statements)
        for name, np in list(self.sets.items()):
            if before.get(name) is not np and not np.shown and not np.used:
                _mark_shown(np)
                if name == "_":
                    self.say(self.w.fill("first", np=_cap(np.render("top"))))
                else:
                    self.say(self.w.fill("set_def", name=name, np=np.render("top")))
        text = " ".join(self.sentences)
        self.sentences, self.previous, self.last_stated = saved
        return text or self.w.get("nothing")

    # ------------------------------------------------------------ queries
    def query(self, st: A.Query) -> _NP:
        w = self.w
        types = QUERY_TYPES.get(st.type, ())
        pre: list[tuple[str, bool]] = []
        post: list[tuple[str, bool]] = []
        tagged: list[str] = []
        whose: list[str] = []
        negated: list[str] = []
        key_phrases: list[str] = []
        sets = [f for f in st.filters if isinstance(f, A.SetFilter)]
        for n, f in enumerate(sets):
            x = self.resolve(f.name)
            if not types and x.types:
                types = tuple(t for t in TYPE_ORDER if t in x.types)
            pre.append((w.fill("in_set" if n == 0 else "also_in_set", x=x), False))
        for f in st.filters:
            if isinstance(f, A.Tag):
                self.tag(f, tagged, whose, negated, key_phrases)
        post.extend((p, False) for p in key_phrases)
        if negated:
            post.append((w.fill("not_tagged", items=w.join(negated, "nor")), False))
        ids = [f for f in st.filters if isinstance(f, A.Ids)]
        one_id = None
        rest = [f for f in st.filters if not isinstance(f, (A.Tag, A.SetFilter))]
        if (len(types) == 1 and len(rest) == 1 and ids and len(ids[0].ids) == 1 and not pre
                and not tagged and not post):
            one_id = self.one(types[0], ids[0].ids[0])
            rest = []
        for f in rest:
            post.append((self.clause(f, st.type), isinstance(f, _SPATIAL)))
        return _Query(w, types, pre, tagged, post, one_id=one_id, whose=whose)

    def one(self, qtype: str, ident: str) -> str:
        w = self.w
        text = w.fill("one_" + qtype, "ref", id=ident)
        if qtype == "area" and ident.isdigit():
            number = int(ident)
            if number >= 3600000000:
                text += w.fill("area_of_relation", id=str(number - 3600000000))
            elif number >= 2400000000:
                text += w.fill("area_of_way", id=str(number - 2400000000))
        return text

    def tag(self, f: A.Tag, tagged: list, whose: list, negated: list, key_phrases: list) -> None:
        w = self.w
        if f.key_regex and f.op in ("~", "!~"):
            key = "key_matches" if f.op == "~" else "key_not_matches"
            text = w.fill(key, key=f.key, re=f.value)
            key_phrases.append(text + (w.get("any_case") if f.case_insensitive else ""))
            return
        if f.op in ("~", "!~"):
            whose.append((f.key, f.op, (f.value,), f.case_insensitive))
            return
        value = f.value if f.op in ("=", "!=") else "*"
        item = _code(f.key + "=" + value)
        name = self.names.get(f.key + "=" + value) if self.names else None
        if name:
            item += w.fill("tag_name", name=str(name))
        (tagged if f.op in ("=", "exists") else negated).append(item)

    def clause(self, f, qtype: str) -> str:
        w = self.w
        if isinstance(f, A.AreaFilter):
            if f.ref is not None:
                return w.fill("inside", x=self.one("area", f.ref))
            return w.fill("inside", x=self.resolve(f.set))
        if isinstance(f, A.Around):
            r = self.distance(f.radius)
            if f.coords:
                points = self.points(f.coords)
                if len(points) == 1:
                    return w.fill("within_point", r=r, point=points[0])
                return w.fill("within_line", r=r, points=w.join(points))
            return w.fill("within", r=r, x=self.resolve(f.set))
        if isinstance(f, A.BBox):
            return w.fill("box", s=f.south, w=f.west, n=f.north, e=f.east)
        if isinstance(f, A.PlaceholderFilter):
            kind, arg = _placeholder_parts(f.text)
            if kind == "bbox":
                return w.get("in_view")
            if kind in ("geocodeBbox", "nominatimBbox"):
                return w.fill("in_bbox_of", name=arg)
            return w.fill("limited_by", text=f.text)
        if isinstance(f, A.Pivot):
            return w.fill("outline", x=self.resolve(f.set))
        if isinstance(f, A.Poly):
            return w.fill("polygon", n=str(len(poly_numbers(f.bounds)) // 2))
        if isinstance(f, A.Ids):
            return w.fill("with_id", ids=w.join(f.ids, "or"))
        if isinstance(f, A.User):
            return w.fill("by_user", users=w.join([_code(n) for n in f.names], "or"))
        if isinstance(f, A.Uid):
            return w.fill("by_uid", uids=w.join(f.uids, "or"))
        if isinstance(f, A.Newer):
            return w.fill("changed", when=self.since(f.date))
        if isinstance(f, A.Changed):
            if f.since is None:
                return w.get("changed_diff")
            if f.until is None:
                return w.fill("changed", when=self.since(f.since))
            return w.fill("changed_between", a=self.date(f.since, "ago"),
                          b=self.date(f.until, "ago"))
        if isinstance(f, A.RecurseFilter):
            return self.recurse_filter(f)
        if isinstance(f, A.IfFilter):
            return w.fill("where", expr=_expr(f.expr))
        return w.fill("limited_by", text=type(f).__name__)

    def recurse_filter(self, f: A.RecurseFilter) -> str:
        w = self.w
        x = self.resolve(f.set)
        kind = f.kind
        if kind == "r":
            if f.role == "":
                return w.fill("member_of_norole", x=x)
            if f.role is not None:
                return w.fill("member_of_role", x=x, role=f.role)
            return w.fill("member_of", x=x)
        if kind == "w":
            if f.role:
                return w.fill("node_of_pos", x=x, pos=f.role)
            return w.fill("node_of", x=x)
        if kind in ("bn", "bw", "br"):
            if f.role == "":
                return w.fill("contain_norole", x=x)
            if f.role is not None:
                return w.fill("contain_role", x=x, role=f.role)
            return w.fill("contain", x=x)
        if kind in (">", ">>"):
            return w.fill("part_of", x=x) + (w.get("recursively") if kind == ">>" else "")
        if kind in ("<", "<<"):
            return w.fill("contain", x=x) + (w.get("recursively") if kind == "<<" else "")
        how = kind + (":" + f.role if f.role is not None else "")
        return w.fill("link", x=x, how=how)

    # ------------------------------------------------------------ values
    def distance(self, radius: str) -> str:
        decimal = self.w.get("decimal")
        try:
            metres = float(radius)
        except (TypeError, ValueError):
            return radius + " m"
        if metres >= 1000 and round(metres / 1000, 3) * 1000 == metres:
            return (_number(str(metres / 1000), decimal) or radius) + " km"
        return (_number(radius, decimal) or radius) + " m"

    def points(self, coords: list[str]) -> list[str]:
        points = []
        i = 0
        while i < len(coords):
            c = coords[i]
            if c.startswith("{{"):
                kind, arg = _placeholder_parts(c)
                points.append(self.w.get("map_centre", "ref") if kind == "center" else arg or c)
                i += 1
            elif i + 1 < len(coords) and not coords[i + 1].startswith("{{"):
                points.append(c + ", " + coords[i + 1])
                i += 2
            else:
                points.append(c)
                i += 1
        if len(points) > 1:
            points = ["(" + p + ")" for p in points]
        return points

    def relative(self, text: str) -> Optional[tuple[int, str]]:
        kind, arg = _placeholder_parts(text)
        if not text.startswith("{{") or kind != "date":
            return None
        if not arg:
            return (0, "")
        m = _UNITS.match(arg)
        if not m:
            return None
        return int(m.group(1)), m.group(2).lower()

    def date(self, text: str, how: str) -> str:
        """A date as written, or a turbo ``{{date:...}}`` as "14 days ago"."""
        w = self.w
        rel = self.relative(text)
        if rel is None:
            return text
        n, unit = rel
        if not unit:
            return w.get("now")
        return w.fill(how, n=str(n), unit=w.get(("unit_" if n == 1 else "units_") + unit))

    def since(self, text: str) -> str:
        w = self.w
        rel = self.relative(text)
        if rel is None or not rel[1]:
            return w.fill("since", date=self.date(text, "ago"))
        n, unit = rel
        if n == 1:
            return w.get("last_1_" + unit)
        return w.fill("in_last", n=str(n), unit=w.get("units_" + unit))

    # ------------------------------------------------------------ out
    def out(self, statements: list, i: int) -> int:
        st = statements[i]
        used = 1
        comps = self.components(st)
        if (st.set in (None, "_") and comps is not None and i + 2 < len(statements)
                and isinstance(statements[i + 1], A.Recurse) and statements[i + 1].kind == ">"
                and statements[i + 1].set in (None, "_") and statements[i + 1].into == "_"
                and isinstance(statements[i + 2], A.Out) and statements[i + 2].set in (None, "_")):
            second = self.components(statements[i + 2])
            if second is not None:
                # "out; >; out skel qt;": the nodes of the ways come along for their geometry
                comps = comps + [c for c in second if c not in comps]
                used = 3
        target = st.set if st.set not in (None, "_") else "_"
        np = self.sets.get(target) or self.empty()
        phrase = self.out_phrase(st, comps, np)
        if np is self.last_stated:
            self.say(self.w.fill("again", out=phrase))
        else:
            self.say(self.w.fill("main", np=_cap(np.render("top")), out=phrase))
        np.stated = True
        _mark_shown(np)
        self.last_stated = np
        return used

    def components(self, st: A.Out) -> Optional[list[str]]:
        """What an ``out`` prints (phrase keys), or None for a count."""
        opts = [o.lower() for o in st.options]
        modes = [o for o in opts if o in ("ids", "skel", "body", "tags", "meta", "count")]
        mode = modes[0] if modes else "body"
        if mode == "count":
            return None
        comps = {"ids": ["c_ids"], "skel": ["c_geometry"], "body": ["c_tags", "c_geometry"],
                 "tags": ["c_tags"], "meta": ["c_tags", "c_geometry", "c_meta"]}[mode]
        for opt, key in (("geom", "c_full"), ("center", "c_center"), ("bb", "c_bb")):
            if opt in opts:
                if "c_geometry" in comps:
                    comps = [key if c == "c_geometry" else c for c in comps]
                elif key not in comps:
                    comps = comps + [key]
        return comps

    def out_phrase(self, st: A.Out, comps: Optional[list[str]], np: _NP) -> str:
        w = self.w
        opts = [o.lower() for o in st.options]
        if comps is None:
            text = w.get("out_count")
        else:
            if any(c in comps for c in ("c_full", "c_center", "c_bb")):
                comps = [c for c in comps if c != "c_geometry"]
            if np.types == frozenset({"derived"}) and "c_tags" in comps:
                comps = [c for c in comps if c not in ("c_geometry", "c_full", "c_bb", "c_center")]
            what = w.join([w.get(c) for c in comps])
            text = w.fill("out", poss=w.get("poss_pl" if np.plural else "poss_sg"), what=what)
        if "noids" in opts:
            text += w.get("no_ids")
        if st.bbox is not None:
            if len(st.bbox) == 4:
                s, west, n, e = st.bbox
                text += w.fill("out_box", s=s, w=west, n=n, e=e)
            else:
                text += w.get("out_box_view")
        if "qt" in opts:
            text += w.get("by_location")
        elif "asc" in opts:
            text += w.get("by_id")
        limits = [o for o in opts if o[:1].isdigit()]
        if limits:
            text += w.fill("at_most", n=limits[0])
        return text

    # ------------------------------------------------------------ settings
    def settings(self, settings: list) -> None:
        w = self.w
        items = []
        for s in settings:
            key, value = s.key, s.value
            if key == "out":
                if value == "csv":
                    items.append(self.csv(s.config or ""))
                elif value in ("json", "xml", "custom", "popup"):
                    items.append(w.fill("s_format", fmt=value.upper() if value in ("json", "xml")
                                        else value))
                else:
                    items.append(w.fill("s_format_unknown", fmt=value))
            elif key == "timeout":
                items.append(w.fill("s_timeout", v=value.strip()))
            elif key == "maxsize":
                items.append(w.fill("s_maxsize", v=self.size(value.strip())))
            elif key == "bbox":
                parts = value.split(",")
                if value.startswith("{{"):
                    items.append(w.get("s_bbox_view"))
                elif len(parts) == 4:
                    items.append(w.fill("s_bbox", s=parts[0], w=parts[1], n=parts[2], e=parts[3]))
                else:
                    items.append(w.fill("s_other", key=key, value=value))
            elif key == "date":
                items.append(w.fill("s_date", date=self.date(value, "ago")))
            elif key in ("diff", "adiff"):
                a = self.date(value, "ago")
                if s.extra is not None:
                    items.append(w.fill("s_" + key, a=a, b=self.date(s.extra, "ago")))
                else:
                    items.append(w.fill("s_" + key + "_now", when=self.since(value)))
            else:
                items.append(w.fill("s_other", key=key, value=value))
        if items:
            self.say(w.fill("settings", items=w.get("comma").join(items)))

    def size(self, value: str) -> str:
        if not value.isdigit():
            return value
        number = int(value)
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("GB", 10 ** 9), ("MB", 10 ** 6)):
            if number >= scale and number % scale == 0:
                return f"{number // scale} {unit}"
        return f"{number} {self.w.get('bytes')}"

    def csv(self, config: str) -> str:
        w = self.w
        inner = config.strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1]
        parts = _split_outside_quotes(inner, ";")
        fields = [_unquote(f) for f in _split_outside_quotes(parts[0], ",")] if parts else []
        text = w.fill("s_csv", cols=w.join([_code(f) for f in fields if f]))
        if len(parts) > 1 and parts[1].strip() == "false":
            text += w.get("s_csv_noheader")
        if len(parts) > 2 and _unquote(parts[2]):
            text += w.fill("s_csv_sep", sep=_unquote(parts[2]))
        return text


class _Suffixed(_NP):
    """A phrase with a fixed tail (", recursively")."""

    def __init__(self, inner: _NP, suffix: str):
        super().__init__(inner.types)
        self.inner, self.suffix = inner, suffix
        self.children = [inner]

    def _render(self, form: str) -> str:
        return self.inner.render(form) + self.suffix


def _mark_shown(np: _NP) -> None:
    stack = [np]
    while stack:
        cur = stack.pop()
        if not cur.shown:
            cur.shown = True
            stack.extend(cur.children)


def _arg_text(tree: Optional[A.Expr]) -> str:
    if tree is not None and tree.lhs is None and tree.rhs is None and tree.token[:1] == '"':
        return decode_string(tree.token)
    return _code(_expr(tree))


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts, current, quote = [], [], ""
    escaped = False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\" and quote:
            current.append(ch)
            escaped = True
        elif quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            current.append(ch)
            quote = ch
        elif ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return decode_string(text)
    return text


# ---------------------------------------------------------------------- entry point

def explain(query: str, lang: str = "en", *, tag_names: Optional[Mapping[str, str]] = None) -> str:
    """Describe ``query`` in plain words, in ``lang`` ("en", "de", "fr"; others fall back
    to English). ``tag_names`` maps "key=value" (or "key=*") to a name shown beside
    the tag, e.g. iD's preset names. Any text gets an answer; a query that does not
    parse says so, with the parser's line and column.

    >>> explain("")
    'The query is empty.'
    >>> explain('node["amenity"="cafe"]; out gem;')
    'Nodes tagged `amenity=cafe`; output their tags and geometry. It does not parse at line 1, column 29: Invalid parameter for print: "gem".'
    >>> explain('way["highway"]({{bbox}});out;', "fr")
    'Chemins avec `highway=*` dans la vue actuelle de la carte ; sortie : tags et géométrie.'
    """
    if not isinstance(query, str):
        raise TypeError(f"explain() needs a str query, got {type(query).__name__}")
    words = _Words(lang)
    if not query.strip():
        return words.get("empty_query")
    try:
        with deep_recursion():
            return _explain(query, words, tag_names)
    except Exception:
        # A query deeper or stranger than the reader handles still gets an answer.
        return words.get("unexplained")


def _explain(query: str, words: _Words, tag_names: Optional[Mapping]) -> str:
    script = parse(query, collect_errors=True)
    reader = _Reader(words, tag_names)
    reader.body(script.statements)
    # Every phrase not yet in a sentence gets one: first those no other phrase embeds.
    for roots_only in (True, False):
        for name in ["_"] + reader.named_order:
            np = reader.sets.get(name)
            if np is not None and not np.shown and not (roots_only and np.used):
                reader.flush(name, np)
    if not script.statements:
        if script.errors and not script.settings:
            reader.say(words.get("not_a_query"))
        elif not script.errors:
            reader.say(words.get("no_statements"))
    reader.settings(script.settings)
    if script.errors:
        first = script.errors[0]
        key = "error_static" if first.kind == "static" else "error_parse"
        reader.say(words.fill(key, line=str(first.line), column=str(first.column),
                              message=first.message))
        more = len(script.errors) - 1
        if more == 1:
            reader.say(words.get("more_error"))
        elif more > 1:
            reader.say(words.fill("more_errors", n=str(more)))
    return " ".join(s if s.endswith((".", "!", "?", "…")) else s + "." for s in reader.sentences)
