"""The refunds domain: refund requests decided by a desk's published rules (scaffolded by
``backoffice new-domain``; edit it into your domain, see docs/DOMAIN_GUIDE.md)."""

from __future__ import annotations

from backoffice.envs.core import BackofficeEnv, Domain, lazy
from backoffice.envs.refunds.generator import DEFECT_TAGS, generate
from backoffice.envs.refunds.tables import RULES, TABLES
from backoffice.envs.refunds.tools import toolkit

#: every failure code the grader can emit; each is proven by a wrong policy
FAILURE_CODES = ("wrong_amount", "extra_decision", "forbidden_write")

DOMAIN = Domain(
    name="refunds",
    title="Refunds",
    prefix="REF",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("backoffice.graders.refunds:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="1",
    sizes={"train": 600, "heldout": 300},
    default_max_steps=12,
    rules=RULES,
    rule_tools=("get_rules",),
    # the grade reads the decisions, which write: a step that changed no row changes no grade
    grade_reads=frozenset(),
    tables=TABLES,
    policies="backoffice.training.domains.refunds.policies",
    catalog="backoffice.training.domains.refunds.catalog:CATALOG",
)


class RefundsEnv(BackofficeEnv):
    """Refunds: find a customer's refund request and decide it by the desk's published rules.

    ## Description
    A customer asks for a refund on an order. The agent finds the request among the customer's
    requests (``list_requests``), reads this desk's rules (``get_rules``: the cap, the restocking
    fee percent, the days from which late returns pay twice and three times the fee, the last
    day a refund is accepted) and records one decision: approve the capped amount less the fee,
    or reject past the last day. Other requests sit in the same table and must stay untouched.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (a dict or its JSON string), see Tools.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after ``reset`` (instructions, allowed tools,
    ``params.customer`` and ``params.order_id``), then each tool's result
    (``{"status": "ok", "result": ...}`` or ``{"status": "error", "code", "message"}``).

    ## Rewards
    ``sparse`` (default): the pure grade's score on the terminal step, 0 before. ``shaped``:
    -0.01 per call, -0.05 per rejected call, plus 0.5 * score + 0.5 * pass at the end.
    ``progress``: shaped, plus the progress towards the accepted end state (training only).

    ## Starting State
    A released task (``options={"task_id": "REF-T0000"}``), one drawn from the split by seed, or
    a generated one (``options={"generate": n, "scale": k}``: k times the other customers).

    ## Episode End
    Terminates on a successful ``submit``; truncates at ``max_steps`` (default 12).

    ## Arguments
    ``split`` ("train" | "heldout" | "generated"), ``reward_mode`` ("sparse" | "shaped" |
    "progress"), ``max_steps``, ``trace_path`` (JSONL trace), ``render_mode`` ("ansi", "human"),
    ``call_cost``, ``gate_cap``.

    ## Tools
    Read: get_rules(), list_requests(customer, limit, cursor), get_request(request_id). Write:
    decide_refund(request_id, outcome approve|reject, amount_cents >= 0), which may be called
    again (every decision is graded). Terminal: submit.

    ## Grade
    Work check ``decision`` (the request ends with the expected outcome and amount). Gates (earn
    nothing; a failed one caps the score at 0.25): ``single_decision`` (at most one decision on
    the request) and the guardrail (no write to any other request). Fields: ``request_id``,
    ``decisions``, ``decided``.

    ## Failure codes
    wrong_amount (no decision, the wrong request, outcome or amount), extra_decision (a second
    decision on the request), forbidden_write (a write to another request).

    ## Version History
    * v0: scaffolded (generator version 1).
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "FAILURE_CODES", "RefundsEnv"]
