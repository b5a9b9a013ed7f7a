"""WebShop: search a generated catalogue and buy the product an instruction asks for."""

from __future__ import annotations

from typing import Any

import numpy as np

from agent_envs.core import TextEnv, parse_bracket_call, sanitize
from agent_envs.envs.webshop.catalogue import (
    PAGE_SIZE,
    Product,
    ShopTask,
    dollars,
    make_shop_task,
    match_score,
)
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_int

__all__ = ["WebShopEnv"]

_VERBS = frozenset({"search", "click"})
# Button spellings, compared with all whitespace removed so "next>" == "next >".
_BACK = frozenset({"backtosearch", "back"})
_NEXT = frozenset({"next>", "next", "nextpage"})
_PREV = frozenset({"<prev", "prev", "previous", "<previous"})
_BUY = frozenset({"buynow", "buy"})


def _key(text: str) -> str:
    return "".join(text.lower().split())


class WebShopEnv(TextEnv[ShopTask]):
    """Find and buy the product a shopping instruction describes (WebShop-like).

    ## Description
    Each task generates a catalogue of 30 to 45 products in a dozen categories
    (running shoes, coffee makers, yoga mats, ...), each with a title made of
    a brand, its attributes and its kind, a price, and options such as size or
    colour.  The instruction asks for a kind of product with given attributes,
    one value for each of its option types and a price limit, for example
    *"i am looking for waterproof and lightweight running shoes with size: 9
    and color: navy, and price lower than 60.00 dollars"*.  Exactly one product
    meets every constraint; near misses (one attribute short, too expensive,
    the option not offered) are planted on purpose.  Search is a BM25 keyword
    ranking of the product titles.

    ## Action Space
    ``Text``, WebShop's two commands, lenient about case and spacing:

    * ``search[<query>]``: only on the search page; any free text.  Shows the
      results page for the query (all titles sharing a word with it, best
      first, 10 per page; an empty list is still a valid search).
    * ``click[<button>]``: a button shown in ``[brackets]`` on the current
      page: a product id (or its full title) on a results page, ``next >``,
      ``< prev``, ``back to search``; on a product page an option value (it
      selects that value for its option type), ``buy now``, ``< prev`` (back
      to the results) and ``back to search``.

    A click on something not on the page, a search off the search page, or
    unparsable text is invalid: nothing changes and the turn is used.
    ``action_vocabulary`` is ``None`` because search queries are free text.

    ## Observation Space
    ``Text``: the reset observation explains the task and the commands, then
    shows the search page.  Every view repeats the instruction and lists the
    page's buttons; a step observation starts with feedback on the action.
    Selected options show on a ``Selected:`` line of the product page;
    leaving the page clears them.

    ## Starting State
    The search page of a catalogue built from the task id.

    ## Rewards
    ``1.0`` when a purchase meets every constraint (``info["success"]``),
    ``0.0`` otherwise.  The partial score is only reported in ``info``.

    ## Episode End
    ### Termination
    Any purchase (``click[buy now]``).  A purchase that misses a constraint is
    a terminal failure with ``dead_end`` True.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end`` and, on reset and
    every step, ``match_score``: WebShop's attribute-match score of the
    purchase (float in [0, 1]: the share of wanted attributes, wanted options
    and the price limit it meets, 0 for a product of another kind), 0.0 until
    something is bought.  It is 1.0 exactly when the purchase succeeds.

    ## Oracle
    The oracle is privileged: it knows the target, but plays by the agent's
    rules.  From the search page it searches the instruction's attributes and
    kind (``search[<attributes> <kind>]``, which the generator guarantees puts
    the target on the first page), clicks the target, clicks each wanted
    option and buys: (option types + 3) turns.  From any other page,
    ``oracle_turns()`` is the exact shortest path under these rules (paging
    to the target, or going back to search when that is shorter; on the
    target's page only the options still wrong cost a click).
    ``oracle_actions()`` lists every optimal next action (one canonical
    query where a search is optimal).  ``admissible_actions()`` lists every
    button on the page, and on the search page the canonical search only;
    any other query stays valid.

    ## Arguments
    ``min_products``, ``max_products`` (int, default 30 and 45): the
    catalogue size range.

    ## Version History
    * v0: initial version.
    """

    action_format = "Use search[query] on the search page or click[button] for a [button] shown."
    privileged_oracle = True
    max_observation_length = 4096

    def __init__(
        self, min_products: int = 30, max_products: int = 45, render_mode: str | None = None
    ) -> None:
        check_int(min_products, "min_products")
        check_int(max_products, "max_products")
        if not 20 <= min_products <= max_products <= 200:
            raise InvalidValue(
                "Need 20 <= min_products <= max_products <= 200, "
                f"got {min_products} and {max_products}."
            )
        self.min_products, self.max_products = min_products, max_products
        super().__init__(render_mode=render_mode)

    # ------------------------------------------------------------------ task
    def _make_task(self, task_id: int, rng: np.random.Generator) -> ShopTask:
        return make_shop_task(rng, (self.min_products, self.max_products))

    def _start(self, task: ShopTask) -> None:
        self._page = "search"
        self._query = ""
        self._ranking: tuple[int, ...] = ()
        self._result_page = 0
        self._item: int | None = None
        self._chosen: dict[str, str] = {}
        self._bought: int | None = None
        self._score = 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Reset as :class:`TextEnv` does, adding ``info["match_score"]`` (0.0)."""
        observation, info = super().reset(seed=seed, options=options)
        info["match_score"] = self._score
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step as :class:`TextEnv` does, adding the purchase's ``info["match_score"]``."""
        observation, reward, terminated, truncated, info = super().step(action)
        info["match_score"] = self._score
        return observation, reward, terminated, truncated, info

    # ------------------------------------------------------------------ views
    def _intro(self) -> str:
        return (
            "You are shopping online. Buy the product that meets every requirement of the "
            "instruction; buying anything ends the episode. Commands: search[query] on the "
            "search page, and click[button] for any [button] on the page (a product id, an "
            "option value, next >, < prev, back to search, buy now)."
        )

    def _view(self) -> str:
        task = self.task
        header = f"Instruction: {task.instruction}\n"
        if self._page == "search":
            return header + "[Search page] Type search[your query]."
        if self._page == "results":
            return header + self._results_view()
        if self._page == "item":
            return header + self._item_view()
        product = self._current()
        return header + f"[Order placed] {product.title} ({dollars(product.price)})."

    def _results_view(self) -> str:
        task = self.task
        pages = max(1, -(-len(self._ranking) // PAGE_SIZE))
        lines = [
            f'[Results for "{sanitize(self._query, 60)}"] page {self._result_page + 1} '
            f"of {pages}, {len(self._ranking)} results"
        ]
        for position in self._shown():
            product = task.products[position]
            lines.append(f"[{product.pid}] {product.title} | {dollars(product.price)}")
        lines.append("Buttons: " + " ".join(f"[{b}]" for b in self._page_buttons()))
        return "\n".join(lines)

    def _item_view(self) -> str:
        product = self._current()
        lines = [
            f"[Product {product.pid}] {product.title}",
            f"Price: {dollars(product.price)}",
            f"Features: {', '.join(product.attributes)}",
        ]
        lines.extend(
            f"{kind}: " + " ".join(f"[{v}]" for v in values) for kind, values in product.options
        )
        chosen = ", ".join(f"{kind}: {value}" for kind, value in self._chosen.items())
        lines.append(f"Selected: {chosen or 'nothing yet'}")
        lines.append("Buttons: [buy now] [< prev] [back to search]")
        return "\n".join(lines)

    def _current(self) -> Product:
        """The product whose page is open, or that was bought."""
        position = self._item if self._bought is None else self._bought
        if position is None:
            raise RuntimeError("No product page is open.")
        return self.task.products[position]

    def _shown(self) -> tuple[int, ...]:
        start = self._result_page * PAGE_SIZE
        return self._ranking[start : start + PAGE_SIZE]

    def _page_buttons(self) -> list[str]:
        buttons = []
        if self._result_page > 0:
            buttons.append("< prev")
        if (self._result_page + 1) * PAGE_SIZE < len(self._ranking):
            buttons.append("next >")
        buttons.append("back to search")
        return buttons

    # ---------------------------------------------------------------- actions
    def _parse(self, action: str) -> tuple[str, str] | None:
        return parse_bracket_call(action, _VERBS)

    def _apply(self, move: tuple[str, str]) -> tuple[str, bool]:
        verb, argument = move
        if self._page == "done":
            return "The order is placed; the episode is over.", False
        if verb == "search":
            if self._page != "search":
                return "You can only search on the search page: click[back to search].", False
            self._query = argument
            self._ranking = self.task.search(argument)
            self._page, self._result_page = "results", 0
            return f'Searched for "{sanitize(argument, 60)}".', True
        key = _key(argument)
        if self._page == "results":
            return self._click_results(key, argument)
        if self._page == "item":
            return self._click_item(key, argument)
        return "There is nothing to click on the search page; use search[query].", False

    def _click_results(self, key: str, argument: str) -> tuple[str, bool]:
        if key in _BACK:
            self._page = "search"
            return "Back to the search page.", True
        if key in _NEXT and "next >" in self._page_buttons():
            self._result_page += 1
            return "Next page of results.", True
        if key in _PREV and self._result_page > 0:
            self._result_page -= 1
            return "Previous page of results.", True
        for position in self._shown():
            product = self.task.products[position]
            if key in (product.pid.lower(), _key(product.title)):
                self._page, self._item, self._chosen = "item", position, {}
                return f"Opened product {product.pid}.", True
        return f"'{sanitize(argument)}' is not a button on this page.", False

    def _click_item(self, key: str, argument: str) -> tuple[str, bool]:
        if key in _BACK:
            self._page, self._item, self._chosen = "search", None, {}
            return "Back to the search page.", True
        if key in _PREV:
            self._page, self._item, self._chosen = "results", None, {}
            return "Back to the results.", True
        product = self._current()
        if key in _BUY:
            self._bought = self.task.products.index(product)
            self._page = "done"
            self._score = match_score(self.task, self._bought, self._chosen)
            verdict = "meets" if self._is_success() else "does not meet"
            return f"You bought {product.pid}; the purchase {verdict} the instruction.", True
        for kind, values in product.options:
            for value in values:
                if key == _key(value):
                    self._chosen[kind] = value
                    return f"Selected {kind}: {value}.", True
        return f"'{sanitize(argument)}' is not a button on this page.", False

    def _is_success(self) -> bool:
        return self._bought is not None and self._score == 1.0

    def _is_failure(self) -> bool:
        return self._bought is not None and self._score < 1.0

    # ----------------------------------------------------------------- oracle
    def admissible_actions(self) -> list[str]:
        """Every button on the current page; on the search page, the canonical search.

        Any other ``search[...]`` query is valid too; the list holds one, the
        instruction's attributes and kind, so a random agent stays in bounds.
        """
        task = self.task
        if self._page == "search":
            return [f"search[{task.query}]"]
        if self._page == "results":
            actions = [f"click[{task.products[p].pid}]" for p in self._shown()]
            return actions + [f"click[{button}]" for button in self._page_buttons()]
        if self._page == "item":
            product = self._current()
            actions = [f"click[{value}]" for _kind, values in product.options for value in values]
            return [*actions, "click[buy now]", "click[< prev]", "click[back to search]"]
        return []

    def _target_distance(self) -> int | None:
        """Pages between the current results page and the target's, or ``None`` if absent."""
        try:
            rank = self._ranking.index(self.task.target)
        except ValueError:
            return None
        return abs(rank // PAGE_SIZE - self._result_page)

    def oracle_turns(self) -> int | None:
        if self._page == "done":
            return 0 if self._success else None
        wanted = len(self.task.wanted_options)
        if self._page == "search":
            return wanted + 3
        if self._page == "item" and self._item == self.task.target:
            return self._options_left() + 1
        distance = self._target_distance()
        # Paging costs one turn a page; back + a fresh search costs two.
        to_item = 1 + (2 if distance is None else min(distance, 2))
        if self._page == "item":
            # "< prev" returns to these results; "back to search" then searching costs 2.
            to_item = 1 + min(to_item, 2)
        return to_item + wanted + 1

    def _options_left(self) -> int:
        return sum(self._chosen.get(kind) != value for kind, value in self.task.wanted_options)

    def oracle_actions(self) -> list[str]:
        task = self.task
        if self._page == "done":
            return []
        if self._page == "search":
            return [f"search[{task.query}]"]
        if self._page == "item" and self._item == task.target:
            left = [f"click[{v}]" for k, v in task.wanted_options if self._chosen.get(k) != v]
            return left or ["click[buy now]"]
        distance = self._target_distance()
        if self._page == "item":
            # Ties (one page away) list both ways back.
            if distance == 0:
                return ["click[< prev]"]
            if distance == 1:
                return ["click[back to search]", "click[< prev]"]
            return ["click[back to search]"]
        if distance == 0:
            return [f"click[{task.products[task.target].pid}]"]
        if distance is None or distance > 2:
            return ["click[back to search]"]
        ahead = self._ranking.index(task.target) // PAGE_SIZE > self._result_page
        page = "click[next >]" if ahead else "click[< prev]"
        return [page] if distance == 1 else [page, "click[back to search]"]
