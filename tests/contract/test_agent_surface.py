"""What an agent reads is uniform across domains and states everything the grade needs
(issue 32, "grades follow the text"): one shape for every rule document, never paginated, whose
rules are exactly the domain's declared rules (each proven to bind in ``test_integrity.py``);
one pagination contract for every list or search tool; one money unit (cents) everywhere.

Checked on every call the oracle makes over the whole heldout release (and the rule ids over
train too), so a domain cannot pass with a shape its own oracle never meets.
"""

from __future__ import annotations

import re

import pytest

from backoffice.envs import get_domain
from backoffice.envs.core.canonical import dumps
from backoffice.envs.core.tools import PAGE_SIZE, RULE_KEYS, RULE_OPTIONAL_KEYS, PageArgs
from backoffice.training.integrity.observed import oracle_episodes
from conftest import domain_params

pytestmark = pytest.mark.parametrize("domain", domain_params())

#: tools whose name says they return a list: every one is paginated the same way
LIST_PREFIXES = ("list_", "search_", "lookup_", "find_")

#: a money amount written in another unit than integer cents: a currency sign or code next to a
#: number, thousands separators, two decimals
OTHER_MONEY = re.compile(r"(EUR|USD|GBP|€|\$|£)\s?-?\d|\d\s?(EUR|euros?|USD|dollars?)\b|\b\d{1,3}(,\d{3})+\b|\b\d+\.\d{2}\b")


def test_every_rule_document_has_one_shape_and_shows_exactly_the_declared_rules(domain: str) -> None:
    dom = get_domain(domain)
    assert dom.rule_tools, "declare the tools that return rule documents (Domain.rule_tools)"
    for tool in dom.rule_tools:
        params = dom.toolkit.tools[tool].args_model.model_fields
        assert "limit" not in params and "cursor" not in params, f"{tool}: a rule document is never paginated"
    shown: set[str] = set()
    for split in ("train", "heldout"):
        for ep in oracle_episodes(domain, split):
            for tool in dom.rule_tools:
                for _, doc in ep.results(tool):
                    assert isinstance(doc, dict) and set(doc) == {"rules", "tables"}, (ep.task_id, tool, sorted(doc))
                    assert isinstance(doc["tables"], dict)
                    for rule in doc["rules"]:
                        assert set(RULE_KEYS) <= set(rule) <= set(RULE_KEYS) | set(RULE_OPTIONAL_KEYS), (tool, rule)
                        assert all(isinstance(rule[k], str) and rule[k] for k in RULE_KEYS), (tool, rule)
                        shown.add(rule["id"])
    assert shown, f"the oracle never reads a rule document ({dom.rule_tools})"
    assert shown == set(dom.rules), (f"rules shown but not declared (never proven to bind): {sorted(shown - set(dom.rules))}; "
                                     f"declared but never shown: {sorted(set(dom.rules) - shown)}")


def test_every_list_or_search_tool_pages_the_same_way(domain: str) -> None:
    dom = get_domain(domain)
    listing = [n for n in dom.toolkit.tools if n.startswith(LIST_PREFIXES)]
    assert listing, "a domain has at least one list or search tool"
    for name in listing:
        model = dom.toolkit.tools[name].args_model
        assert issubclass(model, PageArgs), f"{name}: a list or search tool takes PageArgs (limit, cursor)"
        assert model.model_fields["limit"].default == PAGE_SIZE, name
    seen = set()
    for ep in oracle_episodes(domain, "heldout"):
        for action, result in ep.results():
            tool = action["tool"]
            if tool in listing:
                seen.add(tool)
                assert {"next_cursor", "total"} <= set(result), (ep.task_id, tool, sorted(result))
                assert isinstance(result["total"], int)
                rows = [v for v in result.values() if isinstance(v, list)]
                assert len(rows) == 1, f"{tool}: one list of rows per page, got {sorted(result)}"
                if result["next_cursor"] is None and action["args"].get("cursor") is None:
                    assert result["total"] == len(rows[0]), (ep.task_id, tool, result["total"], len(rows[0]))
    assert seen, "the oracle never calls a list tool"


def test_money_is_in_cents_everywhere_the_agent_reads(domain: str) -> None:
    for ep in oracle_episodes(domain, "heldout"):
        texts = [("brief", dumps(ep.brief).decode())] + [(a["tool"], dumps(o).decode()) for a, o in ep.steps]
        for where, text in texts:
            m = OTHER_MONEY.search(text)
            assert m is None, f"{ep.task_id} {where}: money not in cents: ...{text[max(0, m.start() - 60):m.end() + 20]}..."
