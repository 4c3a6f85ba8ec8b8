"""Reward functions: exact metrics on real reference rows, validity, length, execution over HTTP."""

from __future__ import annotations

import inspect
import json

import pytest

from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import gateway_timeout, json_reply, parse_error
from testdata import reference_rows
from geoql.training.rewards import (
    REWARDS,
    build_rewards,
    chrf_reward,
    completion_text,
    kvs_reward,
    length_reward,
    make_execution_reward,
    overpass_element_ids,
    tree_reward,
    validity_reward,
)

EXACT = {"kvs": kvs_reward, "tree": tree_reward, "chrf": chrf_reward}
KNN = reference_rows("knn_dev.official_scores.jsonl")[:40]


def _dev_golds():
    from geoql.eval.dataset import load_split

    return [e.query for e in load_split("dev")]


def _chat(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


@pytest.mark.parametrize("row", KNN, ids=lambda r: f"knn{r['index']}")
@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_reward_reproduces_official_score(name, row):
    gold = _dev_golds()[row["index"]]
    (value,) = EXACT[name]([_chat(row["pred"])], gold=[gold])
    assert value == pytest.approx(row[name], abs=1e-6)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_gold_scores_one_and_wrong_tag_scores_lower(name):
    golds = [q for q in _dev_golds()[:60] if '"amenity"="' in q][:5]
    assert golds
    wrong = [q.replace('"amenity"="', '"amenity"="x', 1) for q in golds]
    gold_scores = EXACT[name]([_chat(q) for q in golds], gold=golds)
    assert gold_scores == [1.0] * len(golds)
    wrong_scores = EXACT[name]([_chat(q) for q in wrong], gold=golds)
    if name == "tree":
        # TreeS ignores keys and values by definition: a wrong tag keeps the tree.
        assert wrong_scores == gold_scores
    else:
        assert all(w < 1.0 for w in wrong_scores)


def test_unparseable_output_scores_zero_validity():
    gold = 'node["amenity"="cafe"]({{bbox}});out;'
    out = validity_reward(
        [_chat(gold), _chat('node["amenity"="cafe"'), _chat(""), _chat("Sure! Here is your query.")],
        gold=[gold] * 4,
    )
    assert out == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("row", [r for r in reference_rows("gold_reference.jsonl")[:400:10]], ids=lambda r: f"{r['split']}{r['index']}")
def test_validity_agrees_with_the_real_converter(row):
    # stderr is what osm3s_query printed for the gold query: no message = valid.
    (value,) = validity_reward([row["query"]], gold=['way["highway"];out;'])
    assert value == (0.0 if row["stderr"].strip() else 1.0)


def test_validity_does_not_apply_when_gold_is_invalid():
    assert validity_reward([_chat('way["a"];out;')], gold=['node["a"="b"'])[0] is None


def test_length_reward_peaks_at_gold_length():
    gold = 'way["highway"="primary"](area.a);out geom;'
    short, same, long_ = gold[:10], gold.replace("primary", "secondar"), gold * 3
    scores = length_reward([short, same, long_, gold], gold=[gold] * 4)
    assert scores[3] == 1.0 and scores[1] == pytest.approx(1 - 1 / len("".join(gold.split())))
    assert scores[0] < scores[1] and scores[2] == 0.0


def test_completion_shapes_and_fences():
    q = 'way["highway"];out;'
    assert completion_text([{"role": "assistant", "content": f"```overpassql\n{q}\n```"}]) == q
    assert completion_text({"content": q}) == q
    assert kvs_reward([q, _chat(q), [{"role": "assistant", "content": q}]], gold=[q] * 3) == [1.0] * 3


def test_missing_gold_column_is_a_clear_error():
    with pytest.raises(ValueError, match="column 'gold'"):
        kvs_reward(["x"])


def test_build_rewards_drops_zero_weights_and_rejects_unknown_names():
    funcs, weights = build_rewards({"kvs": 1.0, "tree": 0.0, "length": 0.2})
    assert [f.__name__ for f in funcs] == ["kvs_reward", "length_reward"] and weights == [1.0, 0.2]
    with pytest.raises(ValueError, match="use names from"):
        build_rewards({"bleu": 1.0})
    assert set(REWARDS) == {"kvs", "tree", "chrf", "validity", "length", "execution"}


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_registered_reward_is_a_plain_function_of_the_columns(name):
    # TRL's contract: f(completions, **columns) -> one float or None per completion.
    func = REWARDS[name]
    params = list(inspect.signature(func).parameters.values())
    assert params[0].name == "completions"
    assert any(p.kind is p.VAR_KEYWORD for p in params)
    assert ">>>" in (func.__doc__ or "")
    q = 'node["amenity"="cafe"];out;'
    completions = [[{"role": "assistant", "content": q}], [{"role": "assistant", "content": ""}]]
    values = func(completions, gold=[q, q], bbox=["none"] * 2, index=[0, 1], nl=["cafes"] * 2)
    assert len(values) == 2 and all(v is None or type(v) is float for v in values)


def test_execution_reward_is_jaccard_of_returned_ids(fake_overpass, tmp_path):
    cafes = json.loads(json_reply("heidelberg_cafes.json").body)["elements"]
    assert len(cafes) >= 2
    # Routes match in order: the broken query first, it also mentions cafes.
    fake_overpass.add("nod[", parse_error())
    fake_overpass.add('"amenity"="cafe"', json_reply("heidelberg_cafes.json"))
    fake_overpass.add('"amenity"="slow"', gateway_timeout())
    ids = overpass_element_ids(fake_overpass.url, cache_dir=str(tmp_path), max_retries=0)
    reward = make_execution_reward(ids)
    gold = 'node["amenity"="cafe"](49.35,8.57,49.46,8.79);out;'
    completions = [
        _chat(gold),  # same answer
        _chat('node["amenity"="pub"](49.35,8.57,49.46,8.79);out;'),  # empty answer
        _chat('nod["amenity"="cafe"];out;'),  # the server rejects it
    ]
    assert reward(completions, gold=[gold] * 3, bbox=["none"] * 3) == [1.0, 0.0, 0.0]
    # The gold's own answer is unknown (gateway timeout): the reward does not apply.
    slow = 'node["amenity"="slow"](49.35,8.57,49.46,8.79);out;'
    assert reward([_chat(gold)], gold=[slow], bbox=["none"]) == [None]
    assert any("cafe" in q for q in fake_overpass.queries())


def test_execution_reward_partial_overlap(fake_overpass, tmp_path):
    from fakes.servers import Reply

    def answer(*ids):
        return Reply(200, json.dumps({"version": 0.6, "elements": [{"type": "node", "id": i} for i in ids]}))

    fake_overpass.add('"shop"="bakery"', answer(1, 2, 3, 4))
    fake_overpass.add('"shop"="pastry"', answer(3, 4, 5))
    reward = make_execution_reward(overpass_element_ids(fake_overpass.url, cache_dir=str(tmp_path)))
    gold = 'node["shop"="bakery"](1,2,3,4);out;'
    pred = 'node["shop"="pastry"](1,2,3,4);out;'
    assert reward([_chat(pred)], gold=[gold], bbox=["none"]) == [pytest.approx(2 / 5)]


def test_recipe_execution_reward_goes_through_the_client(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.add('"amenity"="cafe"', json_reply("heidelberg_cafes.json"))
    funcs, weights = build_rewards({"execution": 2.0}, overpass_url=fake_overpass.url,
                                   overpass_cache_dir=str(tmp_path), nominatim_url=fake_nominatim.url)
    (func,) = funcs
    assert func.__name__ == "execution_reward" and weights == [2.0]
    gold = '[out:json];{{geocodeArea:"Heidelberg"}}->.a;node["amenity"="cafe"](area.a);out;'
    assert func([_chat(gold), _chat(gold.replace("cafe", "pub"))], gold=[gold] * 2, bbox=["none"] * 2) == [1.0, 0.0]
    # The placeholder was expanded through the geocoder before the query reached Overpass.
    assert all("{{" not in q for q in fake_overpass.queries())
