"""The cost dimension of the hostile suite, sampled (issue 34).

tests/hostile_cost.py searches every route of apps/serve for the cheap input
that costs the server the most CPU time and memory; ``./build.sh hostile
--cost`` runs the whole search. Here its quick sample (the worst inputs the
full search found, a few per route) runs against a warm server, and every
request must stay within its route's budget and be answered well: a 2xx, or
a 4xx whose JSON error says what is wrong. A budget is a ceiling with room for
a slower machine; what fails it is work that grows faster than the input.
"""

from __future__ import annotations

import hostile_cost
import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def costs() -> list[hostile_cost.Cost]:
    return hostile_cost.run(hostile_cost.all_cases(quick=True)).costs


def test_the_sample_covers_every_route(costs: list[hostile_cost.Cost]) -> None:
    assert {c.case.route for c in costs} == set(hostile_cost.BUDGETS)


@pytest.mark.parametrize("route", list(hostile_cost.BUDGETS))
def test_every_sampled_request_stays_within_its_budget(
    costs: list[hostile_cost.Cost], route: str
) -> None:
    mine = [c for c in costs if c.case.route == route]
    assert not hostile_cost.problems(mine), "\n".join(hostile_cost.problems(mine))
