"""Product catalogues for WebShop: vocabulary, generation and the purchase score.

Kept apart from the env so that ``env.py`` holds only the page logic.  A
catalogue is built per task from the task generator; the instruction's target
is the only product that meets every constraint, and the instruction's own
query puts it on the first results page (verified at generation).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from agent_envs.envs.common.bm25 import BM25, word_tokens
from agent_envs.envs.common.draws import Draws

__all__ = ["CATEGORIES", "PAGE_SIZE", "Product", "ShopTask", "make_shop_task", "match_score"]

#: Results per page, as in WebShop.
PAGE_SIZE = 10

_COLORS = ("black", "white", "navy", "red", "grey", "green", "beige", "blue", "pink", "brown")

#: (noun, attribute pool, ((option type, values), ...), (min dollars, max dollars)).
#: Option values are unique within a category, so ``click[<value>]`` is unambiguous.
CATEGORIES: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...],
                        tuple[int, int]], ...] = (
    ("running shoes",
     ("lightweight", "waterproof", "breathable", "non-slip", "cushioned", "reflective"),
     (("size", ("7", "8", "9", "10", "11", "12")), ("color", _COLORS)), (35, 140)),
    ("hiking backpack",
     ("waterproof", "lightweight", "padded", "anti-theft", "foldable", "ventilated"),
     (("capacity", ("20 liter", "30 liter", "40 liter", "50 liter")), ("color", _COLORS)),
     (25, 120)),
    ("wireless headphones",
     ("noise cancelling", "foldable", "over-ear", "sweatproof", "long battery", "low latency"),
     (("color", _COLORS),), (30, 250)),
    ("coffee maker",
     ("programmable", "stainless steel", "compact", "dishwasher safe", "bpa free",
      "thermal carafe"),
     (("capacity", ("4 cup", "8 cup", "10 cup", "12 cup")), ("color", _COLORS)), (25, 160)),
    ("hoodie",
     ("cotton", "fleece", "oversized", "zip-up", "machine washable", "lightweight"),
     (("size", ("small", "medium", "large", "x-large", "xx-large")), ("color", _COLORS)),
     (20, 80)),
    ("yoga mat",
     ("non-slip", "eco-friendly", "extra thick", "foldable", "sweat resistant", "lightweight"),
     (("thickness", ("4 mm", "6 mm", "8 mm", "10 mm")), ("color", _COLORS)), (15, 90)),
    ("desk lamp",
     ("led", "dimmable", "usb charging", "adjustable", "touch control", "eye-caring"),
     (("color", _COLORS),), (15, 70)),
    ("water bottle",
     ("insulated", "bpa free", "leak proof", "stainless steel", "dishwasher safe", "wide mouth"),
     (("capacity", ("500 ml", "750 ml", "1 liter", "2 liter")), ("color", _COLORS)), (10, 50)),
    ("face moisturizer",
     ("organic", "fragrance free", "vegan", "hypoallergenic", "oil free", "spf 30"),
     (("size", ("1 oz", "1.7 oz", "3.4 oz")),), (8, 60)),
    ("bed sheets",
     ("cotton", "deep pocket", "wrinkle free", "cooling", "machine washable", "hypoallergenic"),
     (("size", ("twin", "full", "queen", "king")), ("color", _COLORS)), (20, 120)),
    ("phone case",
     ("shockproof", "slim", "magnetic", "clear", "wireless charging", "anti-yellowing"),
     (("pack", ("pack of 1", "pack of 2", "pack of 3")), ("color", _COLORS)), (8, 40)),
    ("office chair",
     ("ergonomic", "adjustable", "breathable mesh", "lumbar support", "swivel", "padded"),
     (("color", _COLORS),), (60, 300)),
)  # fmt: skip

_BRANDS = (
    "Norvik", "Alpenra", "Quillo", "Brava", "Zentro", "Lumio", "Kestrel", "Orvana", "Tavix",
    "Mirelle", "Solvo", "Havana", "Corvin", "Pellix", "Drava", "Fenwick", "Ostara", "Velora",
    "Junico", "Marbel", "Trelli", "Ambrix", "Nuvola", "Sarto", "Wexley", "Ebonar", "Rivalta",
    "Glimmo", "Hollis", "Yarrow",
)  # fmt: skip
_ID_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
_ID_PAIRS = tuple(first + second for first in _ID_CHARS for second in _ID_CHARS)
_MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class Product:
    """One catalogue entry; prices are in cents to keep comparisons exact."""

    pid: str
    category: int
    title: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: int


@dataclass
class ShopTask:
    """A catalogue, its target and the instruction; searches are memoised on it."""

    products: tuple[Product, ...]
    target: int
    wanted_attributes: tuple[str, ...]
    wanted_options: tuple[tuple[str, str], ...]
    price_limit: int
    instruction: str
    query: str
    index: BM25 = field(repr=False)
    searches: dict[tuple[str, ...], tuple[int, ...]] = field(default_factory=dict, repr=False)

    def search(self, text: str) -> tuple[int, ...]:
        """Return the product positions matching ``text``, best first."""
        key = tuple(dict.fromkeys(word_tokens(text)))
        ranking = self.searches.get(key)
        if ranking is None:
            ranking = tuple(self.index.rank(key))
            # Free-text queries are unbounded; memoise only a bounded number.
            if len(self.searches) < 256:
                self.searches[key] = ranking
        return ranking


def dollars(cents: int) -> str:
    """Format a price in cents as ``$12.34``."""
    return f"${cents // 100}.{cents % 100:02d}"


def match_score(task: ShopTask, product: int, chosen: dict[str, str]) -> float:
    """Return WebShop's attribute-match score of buying ``product`` with ``chosen`` options.

    The share of the instruction's constraints (each wanted attribute, each
    wanted option, the price limit) the purchase meets, times 0 when the
    product is of another kind (WebShop's type match, made binary).
    """
    bought = task.products[product]
    if bought.category != task.products[task.target].category:
        return 0.0
    met = sum(attribute in bought.attributes for attribute in task.wanted_attributes)
    met += sum(chosen.get(kind) == value for kind, value in task.wanted_options)
    met += bought.price < task.price_limit
    return met / (len(task.wanted_attributes) + len(task.wanted_options) + 1)


def _satisfies(
    product: Product,
    category: int,
    wanted: tuple[str, ...],
    options: tuple[tuple[str, str], ...],
    limit: int,
) -> bool:
    offered = dict(product.options)
    return (
        product.category == category
        and all(attribute in product.attributes for attribute in wanted)
        and all(value in offered[kind] for kind, value in options)
        and product.price < limit
    )


def _join(words: tuple[str, ...]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def make_shop_task(rng: np.random.Generator, size_range: tuple[int, int]) -> ShopTask:
    """Build a catalogue whose target is unique and on the instruction query's first page."""
    draws = Draws(rng)
    for _ in range(_MAX_ATTEMPTS):
        task = _attempt(draws, size_range)
        if task is not None:
            return task
    raise RuntimeError("could not generate a WebShop catalogue; widen size_range.")


def _attempt(draws: Draws, size_range: tuple[int, int]) -> ShopTask | None:
    category = draws.below(len(CATEGORIES))
    noun, pool, option_types, (low, high) = CATEGORIES[category]
    wanted = tuple(draws.sample(pool, draws.between(1, 3)))
    wanted_options = tuple((kind, draws.choice(values)) for kind, values in option_types)
    limit = draws.between(low // 10 + 1, high // 10) * 10 * 100
    target_price = draws.between(low, limit // 100 - 1) * 100 + 99

    specs = _specs(draws, category, wanted, wanted_options, limit, target_price)
    size = draws.between(*size_range)
    while len(specs) < size:
        other = draws.below(len(CATEGORIES))
        specs.append((other, draws.sample(CATEGORIES[other][1], draws.between(2, 4)), {}, {}, None))
    order = list(range(len(specs)))
    draws.shuffle(order)
    seen_titles: set[tuple[str, ...]] = set()
    seen_ids: set[str] = set()
    products = [_product(draws, *specs[position], seen_titles, seen_ids) for position in order]
    target = order.index(0)
    for position, product in enumerate(products):
        if position != target and _satisfies(product, category, wanted, wanted_options, limit):
            # A chance match would make the target ambiguous; price it out.
            over_price = limit + draws.between(0, 20) * 100 + 99
            products[position] = replace(product, price=over_price)

    index = BM25([word_tokens(product.title) for product in products])
    query = f"{' '.join(wanted)} {noun}"
    task = ShopTask(
        products=tuple(products),
        target=target,
        wanted_attributes=wanted,
        wanted_options=wanted_options,
        price_limit=limit,
        instruction=_instruction(noun, wanted, wanted_options, limit),
        query=query,
        index=index,
    )
    if target not in task.search(query)[:PAGE_SIZE]:
        return None
    return task


#: One product to make: category, attributes, forced option values, banned
#: option values, and its price (``None``: drawn).
_Spec = tuple[int, list[str], dict[str, str], dict[str, str], int | None]


def _specs(
    draws: Draws,
    category: int,
    wanted: tuple[str, ...],
    wanted_options: tuple[tuple[str, str], ...],
    limit: int,
    target_price: int,
) -> list[_Spec]:
    """Return the target's spec first, then its hard negatives and some same-category products."""
    pool, high = CATEGORIES[category][1], CATEGORIES[category][3][1]
    others = [attribute for attribute in pool if attribute not in wanted]
    extra = draws.sample(others, draws.below(2))
    specs: list[_Spec] = [(category, [*wanted, *extra], dict(wanted_options), {}, target_price)]
    # Hard negatives: each misses exactly one constraint.
    for missing in wanted:
        swapped = [a for a in wanted if a != missing] + [draws.choice(others)]
        specs.append((category, swapped, dict(wanted_options), {}, None))
    over = draws.between(limit // 100, max(limit // 100, high)) * 100 + 99
    specs.append((category, list(wanted), dict(wanted_options), {}, over))
    for kind, value in wanted_options:
        forced = {k: v for k, v in wanted_options if k != kind}
        specs.append((category, list(wanted), forced, {kind: value}, None))
    for _ in range(draws.between(3, 6)):
        specs.append((category, draws.sample(pool, draws.between(2, 4)), {}, {}, None))
    return specs


def _product(
    draws: Draws,
    category: int,
    attributes: list[str],
    forced: dict[str, str],
    banned: dict[str, str],
    price: int | None,
    seen_titles: set[tuple[str, ...]],
    seen_ids: set[str],
) -> Product:
    noun, _pool, option_types, (low, high) = CATEGORIES[category]
    options = []
    for kind, values in option_types:
        allowed = [value for value in values if value != banned.get(kind)]
        chosen = set(draws.sample(allowed, draws.between(2, min(4, len(allowed)))))
        if kind in forced:
            chosen.add(forced[kind])
        options.append((kind, tuple(value for value in values if value in chosen)))
    if price is None:
        price = draws.between(low, high) * 100 + draws.choice((99, 49, 95, 0))
    draws.shuffle(attributes)
    # Titles must differ as bags of words, or the exact-title search could tie.
    for attempt in range(_MAX_ATTEMPTS):
        brand = draws.choice(_BRANDS)
        title = f"{brand} {' '.join(attributes)} {noun}"
        if attempt >= len(_BRANDS):
            title = f"{title} {attempt}"
        key = tuple(sorted(word_tokens(title)))
        if key not in seen_titles:
            seen_titles.add(key)
            break
    pid = _product_id(draws)
    while pid in seen_ids:
        pid = _product_id(draws)
    seen_ids.add(pid)
    return Product(pid, category, title, tuple(attributes), tuple(options), price)


def _product_id(draws: Draws) -> str:
    # One draw for all eight characters (34**8 < 2**53 fits a float's precision),
    # cut into four base-1156 digits, each a pair of characters.
    number = draws.below(len(_ID_PAIRS) ** 4)
    pairs = []
    for _ in range(4):
        number, digit = divmod(number, len(_ID_PAIRS))
        pairs.append(_ID_PAIRS[digit])
    return "B0" + "".join(pairs)


def _instruction(
    noun: str, wanted: tuple[str, ...], options: tuple[tuple[str, str], ...], limit: int
) -> str:
    chosen = _join(tuple(f"{kind}: {value}" for kind, value in options))
    return (
        f"i am looking for {_join(wanted)} {noun} with {chosen}, "
        f"and price lower than {limit // 100}.00 dollars"
    )
