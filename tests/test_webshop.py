"""WebShop's own rules: catalogue invariants, BM25 search, pages, options and purchases."""

from __future__ import annotations

import pickle
from collections import deque

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.envs.common.bm25 import BM25, char_trigrams, word_tokens
from agent_envs.envs.webshop.catalogue import CATEGORIES, PAGE_SIZE, _satisfies
from agent_envs.envs.webshop.env import WebShopEnv, _key

BUTTON_KEYS = {
    "backtosearch",
    "back",
    "next>",
    "next",
    "nextpage",
    "<prev",
    "prev",
    "previous",
    "<previous",
    "buynow",
    "buy",
}


def fresh(task_id: int) -> WebShopEnv:
    env = WebShopEnv()
    env.reset(seed=0, options={"task_id": task_id})
    return env


def open_target(env: WebShopEnv) -> None:
    """Search the canonical query and open the target's page."""
    task = env.task
    env.step(f"search[{task.query}]")
    env.step(f"click[{task.products[task.target].pid}]")
    assert env._page == "item" and env._item == task.target


# ------------------------------------------------------------------- BM25
def test_bm25_prefers_matching_and_shorter_documents():
    index = BM25([["red", "wool", "hat"], ["blue", "cotton", "shirt"], ["red", "hat"]])
    assert index.rank(["red", "hat"]) == [2, 0]  # the shorter exact match wins
    assert 1 not in index.rank(["red", "hat"])  # no shared term, no result
    assert index.rank(["green"]) == []
    scores = index.scores(["red", "red", "hat"])
    assert scores == index.scores(["red", "hat"])  # a repeated query term counts once


def test_bm25_rejects_bad_parameters():
    with pytest.raises(ValueError, match="k1"):
        BM25([["a"]], k1=-1.0)
    with pytest.raises(ValueError, match="b"):
        BM25([["a"]], b=1.5)


def test_tokenisers():
    assert word_tokens("Non-Slip  Yoga MAT, 6 mm!") == ["non", "slip", "yoga", "mat", "6", "mm"]
    assert char_trigrams("ab") == ["#ab", "ab#"]
    assert word_tokens("ünïcødé") == ["n", "c", "d"]


@pytest.mark.parametrize("task_id", range(8))
def test_exact_title_query_ranks_that_product_first(task_id):
    task = fresh(task_id).task
    for position, product in enumerate(task.products):
        assert task.search(product.title)[0] == position, product.title


# -------------------------------------------------------------- catalogue
def test_vocabulary_option_values_are_unambiguous():
    for noun, pool, option_types, (low, high) in CATEGORIES:
        values = [_key(v) for _kind, vs in option_types for v in vs]
        assert len(values) == len(set(values)), noun
        assert not set(values) & BUTTON_KEYS
        assert len(pool) >= 6 and 0 < low < high


@pytest.mark.parametrize("task_id", range(40))
def test_catalogue_invariants(task_id):
    task = fresh(task_id).task
    target = task.products[task.target]
    assert 30 <= len(task.products) <= 45
    satisfying = [
        position
        for position, product in enumerate(task.products)
        if _satisfies(
            product, target.category, task.wanted_attributes, task.wanted_options, task.price_limit
        )
    ]
    assert satisfying == [task.target]
    assert task.target in task.search(task.query)[:PAGE_SIZE]
    assert len({p.pid for p in task.products}) == len(task.products)
    assert len({tuple(sorted(word_tokens(p.title))) for p in task.products}) == len(task.products)
    assert 1 <= len(task.wanted_attributes) <= 3
    for word in (*task.wanted_attributes, *(v for _k, v in task.wanted_options)):
        assert word in task.instruction


# ------------------------------------------------------------------ pages
def test_search_is_only_on_the_search_page_and_clicks_only_elsewhere():
    env = fresh(0)
    _, _, _, _, info = env.step("click[back to search]")
    assert info["valid_action"] is False
    env.step(f"search[{env.task.query}]")
    observation, _, _, _, info = env.step("search[anything]")
    assert info["valid_action"] is False and "search page" in observation
    assert env._page == "results"


def test_paging_through_results():
    env = fresh(2)
    every_noun = " ".join(noun for noun, *_ in CATEGORIES)
    observation, *_ = env.step(f"search[{every_noun}]")
    total = len(env.task.products)
    pages = -(-total // PAGE_SIZE)
    assert f"page 1 of {pages}, {total} results" in observation
    assert "click[< prev]" not in env.admissible_actions()
    _, _, _, _, info = env.step("click[< prev]")
    assert info["valid_action"] is False
    seen = list(env._shown())
    for page in range(2, pages + 1):
        observation, _, _, _, info = env.step("Click [ NEXT > ]")
        assert info["valid_action"] is True and f"page {page} of {pages}" in observation
        seen.extend(env._shown())
    assert sorted(seen) == list(range(total))
    assert "click[next >]" not in env.admissible_actions()
    assert env.step("click[next >]")[-1]["valid_action"] is False
    env.step("click[< prev]")
    assert env._result_page == pages - 2
    # Only products shown on the current page are clickable.
    hidden = env.task.products[seen[-1]].pid
    assert env.step(f"click[{hidden}]")[-1]["valid_action"] is False


def test_product_can_be_opened_by_title_and_prev_returns_to_results():
    env = fresh(3)
    env.step(f"search[{env.task.query}]")
    first = env.task.products[env._shown()[0]]
    observation, _, _, _, info = env.step(f"click[{first.title.upper()}]")
    assert info["valid_action"] is True and f"[Product {first.pid}]" in observation
    env.step("click[< prev]")
    assert env._page == "results" and env._result_page == 0


def test_option_selection():
    env = fresh(4)
    open_target(env)
    product = env.task.products[env.task.target]
    kind, values = product.options[0]
    env.step(f"click[{values[0]}]")
    env.step(f"click[{values[-1]}]")
    assert env._chosen == {kind: values[-1]}  # a later click on the same type replaces
    observation, _, _, _, info = env.step("look")
    assert info["valid_action"] is False
    assert f"Selected: {kind}: {values[-1]}" in observation
    # Going back clears the selection.
    env.step("click[< prev]")
    env.step(f"click[{product.pid}]")
    assert env._chosen == {}
    offered = {_key(value) for _kind, values in product.options for value in values}
    every_value = [value for *_, options, _ in CATEGORIES for _kind, vs in options for value in vs]
    foreign = next(value for value in every_value if _key(value) not in offered)
    assert env.step(f"click[{foreign}]")[-1]["valid_action"] is False


@pytest.mark.parametrize("task_id", range(10))
def test_purchases_and_match_score(task_id):
    env = fresh(task_id)
    assert env.reset(seed=0, options={"task_id": task_id})[1]["match_score"] == 0.0
    open_target(env)
    # Buying the right product without choosing options misses those constraints.
    observation, reward, terminated, _, info = env.step("click[buy now]")
    n = len(env.task.wanted_attributes) + len(env.task.wanted_options) + 1
    assert (reward, terminated, info["success"], info["dead_end"]) == (0.0, True, False, True)
    assert info["match_score"] == pytest.approx((n - len(env.task.wanted_options)) / n)
    assert "does not meet" in observation
    assert env.oracle_turns() is None and env.oracle_actions() == []
    assert env.admissible_actions() == []
    assert env.step("click[buy now]")[-1]["valid_action"] is False

    env.reset(seed=0, options={"task_id": task_id})
    open_target(env)
    for _kind, value in env.task.wanted_options:
        assert env.step(f"click[{value}]")[-1]["match_score"] == 0.0
    _, reward, terminated, _, info = env.step("Action: click[Buy Now]")
    assert (reward, terminated, info["success"], info["dead_end"]) == (1.0, True, True, False)
    assert info["match_score"] == 1.0 and env.oracle_turns() == 0


def test_buying_another_kind_of_product_scores_zero():
    env = fresh(5)
    task = env.task
    env.step(f"search[{' '.join(noun for noun, *_ in CATEGORIES)}]")
    target_category = task.products[task.target].category
    while True:
        other = [p for p in env._shown() if task.products[p].category != target_category]
        if other:
            break
        env.step("click[next >]")
    env.step(f"click[{task.products[other[0]].pid}]")
    info = env.step("click[buy now]")[-1]
    assert info["match_score"] == 0.0 and info["dead_end"] is True


# ----------------------------------------------------------------- oracle
def _snapshot(env: WebShopEnv) -> tuple:
    return (
        env._page,
        env._query,
        env._ranking,
        env._result_page,
        env._item,
        tuple(sorted(env._chosen.items())),
        env._bought,
        env._score,
        env._success,
    )


def _restore(env: WebShopEnv, state: tuple) -> None:
    (
        env._page,
        env._query,
        env._ranking,
        env._result_page,
        env._item,
        chosen,
        env._bought,
        env._score,
        env._success,
    ) = state
    env._chosen = dict(chosen)


def bfs_turns(env: WebShopEnv, limit: int = 9) -> int | None:
    """Fewest admissible actions to success (the canonical search is the optimal query)."""
    start = _snapshot(env)
    frontier, seen = deque([(start, 0)]), {start}
    try:
        while frontier:
            state, depth = frontier.popleft()
            if depth == limit:
                continue
            _restore(env, state)
            for action in env.admissible_actions():
                _restore(env, state)
                info = env.step(action)[-1]
                if info["success"]:
                    return depth + 1
                child = _snapshot(env)
                if child not in seen:
                    seen.add(child)
                    frontier.append((child, depth + 1))
        return None
    finally:
        _restore(env, start)


@pytest.mark.parametrize("task_id", range(12))
def test_oracle_turns_match_breadth_first_search_mid_episode(task_id):
    env = fresh(task_id)
    rng = np.random.default_rng(task_id)
    for _ in range(6):
        if env._page == "done":
            break
        expected = bfs_turns(env)
        assert env.oracle_turns() == expected
        for action in env.oracle_actions():
            state = _snapshot(env)
            env.step(action)
            assert env.oracle_turns() == expected - 1, action
            _restore(env, state)
        legal = [a for a in env.admissible_actions() if a != "click[buy now]"]
        env.step(legal[int(rng.integers(len(legal)))])


@pytest.mark.parametrize("task_id", range(6))
def test_every_admissible_action_is_valid(task_id):
    env = fresh(task_id)
    rng = np.random.default_rng(task_id)
    for _ in range(12):
        for action in env.admissible_actions():
            clone = pickle.loads(pickle.dumps(env))
            assert clone.step(action)[-1]["valid_action"] is True, action
        legal = env.admissible_actions()
        if not legal or env.step(legal[int(rng.integers(len(legal)))])[2]:
            break


def test_oracle_turn_range():
    env = WebShopEnv()
    turns = set()
    for task_id in range(60):
        env.reset(seed=0, options={"task_id": task_id})
        turns.add(env.oracle_turns())
        assert env.oracle_turns() == len(env.task.wanted_options) + 3
    assert turns == {4, 5}


def test_constructor_validates_arguments():
    with pytest.raises(ValueError, match="min_products"):
        WebShopEnv(min_products=50, max_products=40)
    with pytest.raises(TypeError, match="max_products"):
        WebShopEnv(max_products=40.0)  # type: ignore[arg-type]
    env = gym.make("agent_envs/WebShop-v0")
    assert env.unwrapped.action_vocabulary is None
