"""Pure grader of the remittance domain.

The end state is normalised into components (payment status, unapplied balance, active
allocations per line and item, write-offs and patient transfers on the task's claims, cases,
balances and statuses of the claims) and compared with every accepted alternative in the key's
``reference_outcomes``. The episode passes when one alternative matches exactly (reported as
``matched_alternative``) and nothing outside the targets changed. Otherwise failure codes are
derived by diffing against the closest alternative.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from backoffice.graders.checks import result
from backoffice.graders.grade import finalize

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode

GUARDRAIL_CODE = "forbidden_write"
FAILURE_CODES = (
    "misallocation", "over_allocation", "unapplied_balance_wrong", "duplicate_applied", "missed_case",
    "unneeded_case", "wrong_write_off", "patient_responsibility_missed", "payment_status_wrong", GUARDRAIL_CODE,
)
COMPONENTS = ("payment_status", "unapplied", "allocations", "write_offs", "transfers", "cases", "items")


def end_state(ep: Episode) -> dict[str, Any]:
    """The end state in the normalised shape of a reference outcome."""
    key, st = ep.key, ep.state
    pid = key["payment_id"]
    scope = list(key["scope_items"])
    in_scope = set(scope)
    pay = st.get("payments", pid) or {"status": "missing", "unapplied": None}
    allocs: dict[tuple[str, str], int] = defaultdict(int)
    for a in st.iter_rows("allocations"):
        if a["payment_id"] == pid and a["status"] == "active":
            allocs[(a["line_id"], a["item_id"])] += a["amount"]
    wo: dict[tuple[str, str, str], int] = defaultdict(int)
    tr: dict[tuple[str, str], int] = defaultdict(int)
    for r in st.iter_rows("adjustments"):
        if r["item_id"] not in in_scope:
            continue  # writes elsewhere are the guardrail's business
        if r["kind"] == "write_off":
            wo[(r["item_id"], r["reason"], r["code"])] += r["amount"]
        else:
            tr[(r["item_id"], r["code"])] += r["amount"]
    items = {}
    for iid in sorted(scope):
        row = st.get("open_items", iid)
        items[iid] = [row["balance"], row["status"]] if row else None
    return {
        "payment_status": pay["status"],
        "unapplied": pay["unapplied"],
        "allocations": sorted([line, item, amt] for (line, item), amt in allocs.items() if amt),
        "write_offs": sorted([i, r, c, amt] for (i, r, c), amt in wo.items() if amt),
        "transfers": sorted([i, c, amt] for (i, c), amt in tr.items() if amt),
        "cases": sorted([c["category"], c["payment_id"], c["line_id"]] for c in st.iter_rows("cases")),
        "items": items,
    }


def _mismatches(actual: Mapping[str, Any], alt: Mapping[str, Any]) -> list[str]:
    return [c for c in COMPONENTS if actual[c] != alt[c]]


def _by_line(allocs: Sequence[Sequence[Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for line, item, amt in allocs:
        out[line][item] = amt
    return out


def grade(ep: Episode) -> dict[str, Any]:
    """Grade one remittance episode (pure)."""
    key = ep.key
    outcomes = key["reference_outcomes"]
    actual = end_state(ep)
    ranked = sorted(((len(_mismatches(actual, alt)), i) for i, alt in enumerate(outcomes)))
    best = outcomes[ranked[0][1]]
    mism = _mismatches(actual, best)
    matched = best["name"] if not mism else None
    duplicate = bool(key.get("duplicate_of"))

    exp_lines, got_lines = _by_line(best["allocations"]), _by_line(actual["allocations"])
    wrong_item = sorted(f"{line}->{item}" for line, got in got_lines.items() for item in got if item not in exp_lines.get(line, {}))
    too_much = sorted(
        f"{line}->{item}" for line, got in got_lines.items() for item, amt in got.items()
        if item in exp_lines.get(line, {}) and amt > exp_lines[line][item]
    )
    credits = sorted(
        iid for iid, got in actual["items"].items()
        if got is not None and got[0] < 0 and best["items"][iid][0] >= 0
    )
    exp_cases, got_cases = Counter(map(tuple, best["cases"])), Counter(map(tuple, actual["cases"]))
    missing_cases = sorted(list(c) for c in (exp_cases - got_cases).elements())
    extra_cases = sorted(list(c) for c in (got_cases - exp_cases).elements())

    checks = [
        result("payment_status", "field_equals", actual["payment_status"] == best["payment_status"], "payment_status_wrong",
               None if actual["payment_status"] == best["payment_status"] else {"expected": best["payment_status"], "got": actual["payment_status"]}),
        result("duplicate_not_applied", "count_is", not (duplicate and actual["allocations"]), "duplicate_applied",
               {"allocations": actual["allocations"]} if duplicate and actual["allocations"] else None),
        result("allocation_targets", "row_equals", duplicate or not wrong_item, "misallocation",
               None if duplicate or not wrong_item else {"wrong_item": wrong_item, "expected": best["allocations"]}),
        result("allocation_amounts", "row_equals", duplicate or not (too_much or credits), "over_allocation",
               None if duplicate or not (too_much or credits) else {"too_much": too_much, "credit_items": credits}),
        result("unapplied_balance", "field_equals", actual["unapplied"] == best["unapplied"], "unapplied_balance_wrong",
               None if actual["unapplied"] == best["unapplied"] else {"expected": best["unapplied"], "got": actual["unapplied"]}),
        result("write_offs", "row_equals", actual["write_offs"] == best["write_offs"], "wrong_write_off",
               None if actual["write_offs"] == best["write_offs"] else {"expected": best["write_offs"], "got": actual["write_offs"]}),
        result("patient_transfers", "row_equals", actual["transfers"] == best["transfers"], "patient_responsibility_missed",
               None if actual["transfers"] == best["transfers"] else {"expected": best["transfers"], "got": actual["transfers"]}),
        result("required_cases", "row_equals", not missing_cases, "missed_case", {"missing": missing_cases} if missing_cases else None),
        result("no_extra_cases", "row_equals", not extra_cases, "unneeded_case", {"extra": extra_cases} if extra_cases else None),
        result("reference_outcome", "reference_outcome", matched is not None, None,
               None if matched else {"closest": best["name"], "differs_in": mism}),
    ]
    counts = Counter(r["tool"] for r in ep.trace if r["result_status"] == "ok")
    fields = {
        "matched_alternative": matched,
        "closest_alternative": best["name"],
        "alternatives": len(outcomes),
        "differs_in": mism,
        "end_state": actual,
    }
    metrics = {
        "reversals": counts.get("reverse_allocation", 0),
        "queries": counts.get("query_payer", 0),
        "cases_opened": counts.get("open_case", 0),
        "waits": counts.get("wait", 0),
        "allocations_made": counts.get("allocate", 0),
    }
    return finalize(ep, checks, fields, guardrail_code=GUARDRAIL_CODE, metrics=metrics)
