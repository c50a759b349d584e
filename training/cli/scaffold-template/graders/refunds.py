"""The refunds grader: a pure function of the episode (task, key, start snapshot, end state,
diff, trace). It compares the end state with the answer key; it never imports the oracle's or
the catalog's decision code."""

from __future__ import annotations

from typing import Any

from backoffice.envs.core.domain import Episode
from backoffice.graders import finalize, result

OUTCOME_OF_STATUS = {"approved": "approve", "rejected": "reject"}


def decisions_on(ep: Episode, request_id: str) -> int:
    """Successful ``decide_refund`` calls on ``request_id`` over the whole trail."""
    return sum(1 for r in ep.trace if r["tool"] == "decide_refund" and r["result_status"] == "ok"
               and isinstance(r["args"], dict) and r["args"].get("request_id") == request_id)


def grade(ep: Episode) -> dict[str, Any]:
    rid = ep.key["request_id"]
    want = dict(ep.key["expected"])
    row = ep.state.get("requests", rid) or {}
    got = {"outcome": OUTCOME_OF_STATUS.get(row.get("status")), "amount_cents": row.get("decided_amount_cents")}
    n = decisions_on(ep, rid)
    checks = [
        result("decision", "decision", got == want, "wrong_amount", None if got == want else {"expected": want, "got": got}),
        result("single_decision", "count", n <= 1, "extra_decision", None if n <= 1 else {"decisions": n}, gate=True),
    ]
    return finalize(ep, checks, {"request_id": rid, "decisions": n, "decided": got},
                    guardrail_code="forbidden_write", metrics={"decisions": n})
