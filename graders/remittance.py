"""Pure grader of the remittance domain.

The end state is normalised into components (payment status, unapplied balance, active
allocations per line and item, write-off and patient-transfer rows on the task's claims, cases,
balances and statuses of the claims) and compared with every accepted alternative in the key's
``reference_outcomes``; the closest one (``closest_alternative``) is the one the checks judge
against, and ``matched_alternative`` names it when it matches exactly.

Work checks (what the task needs done; each is present only when the closest alternative needs
that work, so doing nothing passes none of them): ``payment_status`` (always), ``allocations``
(every line applied to its claim with the right amount, the unapplied balance right),
``write_offs`` and ``patient_transfers`` (every expected row made), ``required_cases``,
``payer_replies_processed`` (every payer query answered after a ``wait`` and read with
``get_case``/``list_cases``), ``claim_balances`` and ``reference_outcome`` (always).

Gates (prohibitions over the whole trail; holding one earns nothing, failing one caps the
score): ``duplicate_not_applied``, ``allocation_targets`` (no money on a wrong claim),
``allocation_amounts`` (no more than expected, no credit balance), ``no_extra_write_offs``,
``no_extra_transfers``, ``no_extra_cases`` (cases and payer queries), ``single_allocation`` (one
active allocation per line and claim), ``no_allocation_churn`` (no correct allocation reversed)
and the collateral-damage guardrail.

Failure codes: misallocation, over_allocation, unapplied_balance_wrong, duplicate_applied,
missed_case, unneeded_case, wrong_write_off, wrong_transfer, patient_responsibility_missed,
payment_status_wrong, duplicate_allocation, allocation_churn, payer_reply_unprocessed,
forbidden_write (guardrail); declared beside the domain (``backoffice.envs.remittance``).

Cost: every read goes by primary key or through an index with an equality field (the
payment's allocations, read once for the end state and the trail; the adjustments of the
claims in scope and the cases of the known categories, each in one pass over the snapshot's
index buckets and the rows the episode wrote), and rows are read in place, never copied, so a
grade costs O(the task's rows + the episode's writes + the trace), whatever the size of the world.

Rule sharing: the grader judges from the answer key, the end state and the trace only. It may
use the domain's public modules in ``envs/remittance/``, and never imports the oracle's or the
catalog's decision code (``backoffice.training``); the oracle never imports the grader, so the
oracle passing every task checks the grader independently.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from backoffice.envs.remittance import GUARDRAIL_CODE
from backoffice.envs.remittance.tables import CASE_CATEGORIES, QUERY_CATEGORY, live_rows_in
from backoffice.graders.checks import result
from backoffice.graders.grade import finalize

if TYPE_CHECKING:
    from backoffice.envs.core.domain import Episode
    from backoffice.envs.core.store import Store

COMPONENTS = ("payment_status", "unapplied", "allocations", "write_offs", "transfers", "cases", "items")


#: every category a case can have: the tools open cases only of these
_CATEGORIES = frozenset((*CASE_CATEGORIES, QUERY_CATEGORY))


def end_state(ep: Episode) -> dict[str, Any]:
    """The end state in the normalised shape of a reference outcome."""
    return _end_state(ep, _payment_allocations(ep), _cases(ep.state))


def _end_state(ep: Episode, payment_allocs: Sequence[Mapping[str, Any]], cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`end_state` from the payment's allocations (every status) and every case."""
    key, st = ep.key, ep.state
    pid = key["payment_id"]
    scope = key["scope_items"]
    in_scope = frozenset(scope)
    pay = st.peek("payments", pid) or {"status": "missing", "unapplied": None}
    allocs: dict[tuple[str, str], int] = defaultdict(int)
    for a in payment_allocs:
        if a["status"] == "active":
            allocs[(a["line_id"], a["item_id"])] += a["amount"]
    wo: list[list[Any]] = []
    tr: list[list[Any]] = []
    for r in live_rows_in(st, "adjustments", "item_id", in_scope):  # adjustments elsewhere are the guardrail's business
        if r["kind"] == "write_off":
            wo.append([r["item_id"], r["reason"], r["code"], r["amount"]])
        else:
            tr.append([r["item_id"], r["code"], r["amount"]])
    items = {}
    for iid in sorted(scope):
        row = st.peek("open_items", iid)
        items[iid] = [row["balance"], row["status"]] if row else None
    return {
        "payment_status": pay["status"],
        "unapplied": pay["unapplied"],
        "allocations": sorted([line, item, amt] for (line, item), amt in allocs.items() if amt),
        "write_offs": sorted(wo),
        "transfers": sorted(tr),
        "cases": sorted([c["category"], c["payment_id"], c["line_id"]] for c in cases),
        "items": items,
    }


def _payment_allocations(ep: Episode) -> list[Mapping[str, Any]]:
    """Every allocation of the task's payment, whatever its status (read in place)."""
    return live_rows_in(ep.state, "allocations", "payment_id", frozenset((ep.key["payment_id"],)))


def _cases(st: Store) -> list[Mapping[str, Any]]:
    """Every case, whatever its payment (read in place)."""
    return live_rows_in(st, "cases", "category", _CATEGORIES)


def _mismatches(actual: Mapping[str, Any], alt: Mapping[str, Any]) -> list[str]:
    return [c for c in COMPONENTS if actual[c] != alt[c]]


def _by_line(allocs: Sequence[Sequence[Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for line, item, amt in allocs:
        out[line][item] = amt
    return out


def _missing(expected: Sequence[Sequence[Any]], got: Sequence[Sequence[Any]]) -> tuple[list[list[Any]], list[list[Any]]]:
    """(expected rows not made, rows made that are not expected), as multisets."""
    if expected == got:
        return [], []  # the same rows in the same order: the same multiset
    if not got or not expected:  # one side empty (nothing made yet, nothing expected): the other side whole
        return sorted(list(r) for r in expected), sorted(list(r) for r in got)
    exp, act = Counter(map(tuple, expected)), Counter(map(tuple, got))
    return sorted(list(r) for r in (exp - act).elements()), sorted(list(r) for r in (act - exp).elements())


#: the tools whose results the trail reads (payer replies that arrived, and were read)
_READS = frozenset(("wait", "get_case", "list_cases"))


def _trail(ep: Episode, payment_allocs: Sequence[Mapping[str, Any]], cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the trace says beyond the end state: allocation rows per line and claim, reversed
    allocations, and which payer queries were answered and then read (from the payment's
    allocations, every status, and every case)."""
    pid = ep.key["payment_id"]
    rows: Counter[tuple[str, str]] = Counter()
    reversed_: list[list[Any]] = []
    for a in payment_allocs:
        if not a["id"].startswith("AL-"):
            continue
        if a["status"] == "active":
            rows[(a["line_id"], a["item_id"])] += 1
        else:
            reversed_.append([a["line_id"], a["item_id"], a["amount"]])
    answered_at: dict[str, int] = {}
    read_at: dict[str, int] = {}
    for rec in ep.trace:
        tool = rec.get("tool")
        if tool not in _READS or rec.get("result_status") != "ok":
            continue
        res = rec.get("result") or {}
        is_map = type(res) is dict or isinstance(res, Mapping)  # (a parsed result is a dict: no ABC check)
        if tool == "wait" and is_map:
            for cid in res.get("answered") or ():
                answered_at.setdefault(cid, rec["step"])
        elif tool == "get_case" and is_map:
            case = res.get("case") or {}
            if case.get("status") == "answered":
                read_at.setdefault(case["id"], rec["step"])
        elif tool == "list_cases" and (is_map or isinstance(res, list)):
            for case in (res.get("cases") or ()) if is_map else res:
                if case.get("status") == "answered":
                    read_at.setdefault(case["id"], rec["step"])
    queries = [c for c in cases if c["category"] == QUERY_CATEGORY and c["payment_id"] == pid]
    unprocessed = sorted(c["id"] for c in queries if c["status"] != "answered" or c["id"] not in read_at)
    return {"rows": rows, "reversed": reversed_, "queries": len(queries), "unprocessed": unprocessed}


def _check(cid: str, passed: bool, code: str | None, detail: Any, gate: bool = False) -> dict[str, Any]:
    return result(cid, "remittance", passed, code, None if passed else detail, gate=gate)


def _compare(ep: Episode, actual: Mapping[str, Any], best: Mapping[str, Any], trail: Mapping[str, Any]) -> dict[str, Any]:
    """How the end state and the trail differ from the closest alternative, per component."""
    exp_lines, expected_allocs, changed_items = _expected(ep, best)
    got_lines = _by_line(actual["allocations"])
    missing_cases, extra_cases = _missing(best["cases"], actual["cases"])
    missing_wo, extra_wo = _missing(best["write_offs"], actual["write_offs"])
    missing_tr, extra_tr = _missing(best["transfers"], actual["transfers"])
    return {
        "wrong_item": sorted(f"{line}->{item}" for line, got in got_lines.items() for item in got if item not in exp_lines.get(line, {})),
        "too_much": sorted(
            f"{line}->{item}" for line, got in got_lines.items() for item, amt in got.items()
            if item in exp_lines.get(line, {}) and amt > exp_lines[line][item]
        ),
        "credits": sorted(
            iid for iid, got in actual["items"].items()
            if got is not None and got[0] < 0 and best["items"][iid][0] >= 0
        ),
        "too_little": sorted(
            f"{line}->{item}" for line, exp in exp_lines.items() for item, amt in exp.items()
            if got_lines.get(line, {}).get(item, 0) < amt
        ),
        "missing_cases": missing_cases, "extra_cases": extra_cases,
        "missing_wo": missing_wo, "extra_wo": extra_wo,
        "missing_tr": missing_tr, "extra_tr": extra_tr,
        "split_rows": sorted(f"{line}->{item}" for (line, item), n in trail["rows"].items() if n > 1),
        "churn": sorted(f"{r[0]}->{r[1]}" for r in trail["reversed"] if tuple(r) in expected_allocs),
        "changed_items": changed_items,
    }


def _expected(ep: Episode, best: Mapping[str, Any]) -> tuple[dict[str, dict[str, int]], set[tuple[Any, ...]], list[str]]:
    """What an alternative alone gives (its allocations by line, as a set, and the claims whose
    balance it changes): computed once an episode with ``ep.memo`` (read them, never change them)."""
    memo = ep.memo
    if memo is not None:
        kept = memo.get(("remittance-expected", id(best)))
        if kept is not None and kept[0] is best:  # the alternative kept: its id stays its own
            return kept[1]
    start = ep.snapshot.table("open_items")
    out = (_by_line(best["allocations"]), {tuple(a) for a in best["allocations"]},
           [iid for iid, (bal, _) in best["items"].items() if iid in start and start[iid]["balance"] != bal])
    if memo is not None:
        memo[("remittance-expected", id(best))] = (best, out)
    return out


def _work_checks(actual: Mapping[str, Any], best: Mapping[str, Any], d: Mapping[str, Any], trail: Mapping[str, Any],
                 matched: str | None, mism: list[str]) -> list[dict[str, Any]]:
    """What the task needs done; each check exists only when the closest alternative needs it."""
    alloc_ok = actual["allocations"] == best["allocations"] and actual["unapplied"] == best["unapplied"]
    alloc_code = "misallocation" if d["wrong_item"] else "over_allocation" if d["too_much"] or d["credits"] else "unapplied_balance_wrong"
    checks = [
        _check("payment_status", actual["payment_status"] == best["payment_status"], "payment_status_wrong",
               {"expected": best["payment_status"], "got": actual["payment_status"]}),
    ]
    if best["allocations"]:
        checks.append(_check("allocations", alloc_ok, alloc_code,
                             {"wrong_item": d["wrong_item"], "too_much": d["too_much"], "too_little": d["too_little"],
                              "unapplied": actual["unapplied"]}))
    if best["write_offs"]:
        checks.append(_check("write_offs", not d["missing_wo"], "wrong_write_off", {"missing": d["missing_wo"]}))
    if best["transfers"]:
        checks.append(_check("patient_transfers", not d["missing_tr"], "patient_responsibility_missed", {"missing": d["missing_tr"]}))
    if best["cases"]:
        checks.append(_check("required_cases", not d["missing_cases"], "missed_case", {"missing": d["missing_cases"]}))
    if any(c[0] == "payer_query" for c in best["cases"]):
        checks.append(_check("payer_replies_processed", trail["queries"] > 0 and not trail["unprocessed"],
                             "payer_reply_unprocessed", {"unprocessed": trail["unprocessed"], "queries": trail["queries"]}))
    if d["changed_items"]:
        wrong_bal = sorted(i for i in d["changed_items"] if actual["items"].get(i) != best["items"][i])
        checks.append(_check("claim_balances", not wrong_bal, None, {"claims": wrong_bal}))
    checks.append(_check("reference_outcome", matched is not None, None, {"closest": best["name"], "differs_in": mism}))
    return checks


def _gates(actual: Mapping[str, Any], d: Mapping[str, Any], duplicate: bool) -> list[dict[str, Any]]:
    """Prohibitions over the whole trail: holding one earns nothing, failing one caps the score."""
    return [
        _check("duplicate_not_applied", not (duplicate and actual["allocations"]), "duplicate_applied",
               {"allocations": actual["allocations"]}, gate=True),
        _check("allocation_targets", duplicate or not d["wrong_item"], "misallocation", {"wrong_item": d["wrong_item"]}, gate=True),
        _check("allocation_amounts", duplicate or not (d["too_much"] or d["credits"]), "over_allocation",
               {"too_much": d["too_much"], "credit_items": d["credits"]}, gate=True),
        _check("no_extra_write_offs", not d["extra_wo"], "wrong_write_off", {"extra": d["extra_wo"]}, gate=True),
        _check("no_extra_transfers", not d["extra_tr"], "wrong_transfer", {"extra": d["extra_tr"]}, gate=True),
        _check("no_extra_cases", not d["extra_cases"], "unneeded_case", {"extra": d["extra_cases"]}, gate=True),
        _check("single_allocation", not d["split_rows"], "duplicate_allocation", {"several_rows": d["split_rows"]}, gate=True),
        _check("no_allocation_churn", not d["churn"], "allocation_churn", {"reversed_correct": d["churn"]}, gate=True),
    ]


def grade(ep: Episode) -> dict[str, Any]:
    """Grade one remittance episode (pure)."""
    key = ep.key
    outcomes = key["reference_outcomes"]
    payment_allocs = _payment_allocations(ep)
    cases = _cases(ep.state)
    actual = _end_state(ep, payment_allocs, cases)
    ranked = sorted(((len(_mismatches(actual, alt)), i) for i, alt in enumerate(outcomes)))
    best = outcomes[ranked[0][1]]
    mism = _mismatches(actual, best)
    matched = best["name"] if not mism else None
    trail = _trail(ep, payment_allocs, cases)
    d = _compare(ep, actual, best, trail)
    checks = _work_checks(actual, best, d, trail, matched, mism) + _gates(actual, d, bool(key.get("duplicate_of")))
    if ep.checks_only:
        return finalize(ep, checks, {}, guardrail_code=GUARDRAIL_CODE)
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
