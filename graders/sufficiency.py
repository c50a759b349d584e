"""The sufficiency grader: per-round scorers on the state of each review, plus the end state.

Rounds: round 0 is the first review; each successful ``wait`` on the task's case delivers a
reply and opens the next round, so the review after a reply is judged on the documents and the
date *of that round*, recomputed from the end state (every document records the round it joined
the case) and the trace (the date each reply arrived). Per round, with ``requested`` the items
asked for in that round and ``attached`` the held records put on the case in it:

- ``premature_release``: the case was released while an item was still uncovered;
- ``over_request``: requested ∩ ``satisfied_items``;
- ``under_request``: the round ended without release and a gap (a ``missing_items`` item, or a
  ``satisfiable_from_records`` item not attached) was left uncovered;
- ``ignored_held_record``: requested ∩ ``satisfiable_from_records``;
- ``duplicate_request``: more than one request to the applicant in the round (one request per
  review lists everything still needed);
- ``irrelevant_attachment``: a held record attached in the round covers no gap of that round
  (its item was already covered, the record fails a condition, or another record was attached
  for the same item).

The whole trail: ``event_not_processed`` when a scripted reply of the answer key's rounds was
never delivered (never waited for), ``duplicate_decision`` when the case was routed more than
once. End state against the answer key's ``expected``: ``end_status`` (end_status_wrong),
``clock_state`` and the SLA dates ``sla_due_on`` (the start's due date plus the key's
``sla_paused_days``) / ``paused_at`` (clock_state_wrong) and
``queue`` (wrong_queue). The guardrail flags any write outside the case's own rows
(forbidden_write).

Work and gates: a check of something the task needs done is *work* (the gaps covered, the
replies processed, an end-state field the task must change); a prohibition is a *gate*
(premature release, over / duplicate requests, ignored held records, irrelevant attachments,
duplicate decisions, an end-state field the task must leave as it was, the guardrail): holding
it earns nothing, failing it caps the score.

Rule-sharing policy: the oracle and the catalog share the domain's public rule helpers
(:mod:`backoffice.envs.sufficiency.rules`, what the rules document says about documents, computed
from observed rows); the grader shares none of them. It judges each round with its own reading of
the requirement rows (:func:`document_valid`, :func:`review`) and the end state against the answer
key, and imports no policy, catalog or rules code, so the oracle passing checks the grader
independently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from backoffice.envs.core.domain import Episode
from backoffice.envs.core.store import Snapshot
from backoffice.envs.sufficiency import FAILURE_CODES
from backoffice.envs.sufficiency.reads import rows_by
from backoffice.envs.sufficiency.tables import add_days, day_number
from backoffice.graders import finalize, result

ROUND_SCORERS = ("premature_release", "over_request", "under_request", "ignored_held_record",
                 "duplicate_request", "irrelevant_attachment")
END_SCORERS = ("end_status_wrong", "clock_state_wrong", "wrong_queue")
TRAIL_SCORERS = ("event_not_processed", "duplicate_decision")
__all__ = ["FAILURE_CODES", "ROUND_SCORERS", "END_SCORERS", "TRAIL_SCORERS", "grade", "review", "score_round", "split_rounds"]
#: round scorers that are prohibitions (gates); under_request is work when the task has a gap
GATE_SCORERS = frozenset(ROUND_SCORERS) - {"under_request"}


# -- the grader's own reading of the requirements ------------------------------------------------
@lru_cache(maxsize=8192, typed=True)
def _name_key(name: Any) -> str:
    """A name as compared: letter case and runs of spaces aside (a pure function: cached)."""
    return " ".join(str(name or "").split()).casefold()


def _issued(doc: Mapping[str, Any], req: Mapping[str, Any], name_key: str, held: bool) -> int | None:
    """The issue date (a day number) of ``doc`` when it meets every condition of ``req`` but its
    age (its item type already known to match), else ``None``. ``held``: the document is (or
    would be, once attached) a held record; ``name_key``: the applicant's :func:`_name_key`."""
    if held and not req["accept_held_record"]:
        return None
    if not doc.get("legible") or (req["signature_required"] and not doc.get("signed")):
        return None
    if req["name_must_match"] and _name_key(doc.get("name_on_document")) != name_key:
        return None
    return day_number(str(doc.get("issued_on")))


def _fresh(issued: int | None, day: int, max_age: int | None) -> bool:
    """A document issued on day number ``issued`` (``None``: it fails another condition) is
    valid on day number ``day``: issued on or before it and no older than ``max_age`` days."""
    if issued is None:
        return False
    age = day - issued
    return age >= 0 and (max_age is None or age <= max_age)


def document_valid(doc: Mapping[str, Any], req: Mapping[str, Any], applicant_name: str, day: str) -> bool:
    """Whether ``doc`` (a document, or a held record once attached: ``source == "held_record"``)
    meets requirement row ``req`` on ``day``: the right item, a held record only where the item
    accepts one, legible, signed and in the applicant's name where required, issued on or before
    ``day`` and no older than ``max_age_days``."""
    if doc.get("item_type") != req["item_type"]:
        return False
    issued = _issued(doc, req, _name_key(applicant_name), doc.get("source") == "held_record")
    return _fresh(issued, day_number(day), req["max_age_days"])


@dataclass(frozen=True)
class Review:
    """One review of a case: each required item is satisfied, satisfiable from held records, or missing."""

    satisfied_items: tuple[str, ...]
    satisfiable_from_records: dict[str, tuple[str, ...]]  # item -> valid held record ids, sorted
    missing_items: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "satisfied_items": list(self.satisfied_items),
            "satisfiable_from_records": sorted(self.satisfiable_from_records),
            "missing_items": list(self.missing_items),
        }


def review(reqs: Iterable[Mapping[str, Any]], docs: Sequence[Mapping[str, Any]],
           held: Iterable[Mapping[str, Any]], applicant_name: str, day: str) -> Review:
    """Review a case on ``day`` from its requirement rows, documents and the applicant's held
    records (items by item type, record ids sorted)."""
    satisfied, satisfiable, missing, _ = _Prepared(reqs, held, docs, applicant_name, rounds=False).review(day_number(day))
    return Review(tuple(satisfied), satisfiable, tuple(missing))


def _row_id(r: Mapping[str, Any]) -> str:
    return r["id"]


def _item_type(r: Mapping[str, Any]) -> str:
    return r["item_type"]


#: a document's source as the rounds read it
_APPLICANT, _HELD, _OTHER = 0, 1, 2


class _Prepared:
    """A case's requirements, held records and documents with everything that does not depend
    on the review date read once (per grade): per requirement (by item type), its item, its
    ``max_age_days``, the documents of its item as ``(review round joined, source, issued)``
    and the held records of its item (by id) as ``(record id, issued)``, where ``issued`` is the
    day number the document was issued on when it meets every condition of the requirement but
    age, else ``None``. ``rounds=False``: every document counts as on the case (a plain review;
    documents need no ``review_round``)."""

    __slots__ = ("items",)

    def __init__(self, reqs: Iterable[Mapping[str, Any]], held: Iterable[Mapping[str, Any]],
                 docs: Iterable[Mapping[str, Any]], applicant_name: str, rounds: bool = True):
        name_key = _name_key(applicant_name)
        docs_of: dict[Any, list[Mapping[str, Any]]] = {}
        for d in docs:
            docs_of.setdefault(d.get("item_type"), []).append(d)
        records_of: dict[Any, list[Mapping[str, Any]]] = {}
        for r in sorted(held, key=_row_id):
            records_of.setdefault(r.get("item_type"), []).append(r)
        items: list[tuple[str, int | None, list[tuple[int, int, int | None]], list[tuple[str, int | None]]]] = []
        for req in sorted(reqs, key=_item_type):
            item = req["item_type"]
            facts = []
            for d in docs_of.get(item, ()):
                issued = _issued(d, req, name_key, d.get("source") == "held_record")
                if not rounds:
                    facts.append((-1, _APPLICANT, issued))
                    continue
                source = d["source"]
                facts.append((d["review_round"], _APPLICANT if source == "applicant" else _HELD if source == "held_record" else _OTHER, issued))
            records = [(r["id"], _issued(r, req, name_key, True)) for r in records_of.get(item, ())]
            items.append((item, req["max_age_days"], facts, records))
        #: per requirement: (item, max_age_days, [(round, source, issued)], [(record id, issued)])
        self.items = items

    def review(self, day: int, index: int = 0) -> tuple[list[str], dict[str, tuple[str, ...]], list[str], list[str]]:
        """The review of round ``index`` on day number ``day``, of the documents on the case when
        the round opens (joined in an earlier round, or in this one from the applicant):
        satisfied items, satisfiable items (-> valid held record ids), missing items, and the
        items still missing once the held records attached in this round are on the case
        (every list in requirement order)."""
        satisfied: list[str] = []
        missing: list[str] = []
        satisfiable: dict[str, tuple[str, ...]] = {}
        still_missing: list[str] = []
        for item, max_age, facts, records in self.items:
            covered = attached = False
            for joined, source, issued in facts:
                if issued is None:
                    continue
                age = day - issued
                if age < 0 or (max_age is not None and age > max_age):
                    continue
                if joined < index or (joined == index and source == _APPLICANT):
                    covered = True
                    break
                if joined == index and source == _HELD:
                    attached = True
            if covered:
                satisfied.append(item)
                continue
            usable = tuple(rid for rid, issued in records if _fresh(issued, day, max_age))
            if usable:
                satisfiable[item] = usable
            else:
                missing.append(item)
            if not attached:
                still_missing.append(item)
        return satisfied, satisfiable, missing, still_missing


# -- the rounds ----------------------------------------------------------------------------------
def split_rounds(trace: Sequence[Mapping[str, Any]], case_id: str, start: str) -> list[dict[str, Any]]:
    """The successful calls of each review round and the date-time the round opened."""
    calls: list[Mapping[str, Any]] = []
    rounds: list[dict[str, Any]] = [{"at": start, "calls": calls}]
    for rec in trace:
        if rec["result_status"] != "ok":
            continue
        if rec["tool"] == "wait" and isinstance(rec["args"], Mapping) and rec["args"].get("case_id") == case_id:
            calls = []
            rounds.append({"at": rec["result"]["now"], "calls": calls})
        else:
            calls.append(rec)
    return rounds


def _for_case(calls: Sequence[Mapping[str, Any]], tool: str, case_id: str) -> list[Mapping[str, Any]]:
    return [c for c in calls if c["tool"] == tool and c["args"].get("case_id") == case_id]


def score_round(index: int, at: str, calls: Sequence[Mapping[str, Any]], case: Mapping[str, Any],
                reqs: Sequence[Mapping[str, Any]], held: Sequence[Mapping[str, Any]],
                docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Assess one round on its own state and score the agent's actions in it."""
    return _score_round(index, at, calls, case, _Prepared(reqs, held, docs, case["applicant_name"]), docs)


def _score_round(index: int, at: str, calls: Sequence[Mapping[str, Any]], case: Mapping[str, Any],
                 prepared: _Prepared, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`score_round` with the case's requirements, held records and documents prepared
    once per grade (``prepared`` holds ``docs``)."""
    cid = case["id"]
    attached = [d for d in docs if d["review_round"] == index and d["source"] == "held_record"]
    satisfied, satisfiable, missing, after_missing = prepared.review(day_number(at[:10]), index)
    requests = []
    released = False
    for c in calls:
        tool = c["tool"]
        if tool == "request_items":
            if c["args"].get("case_id") == cid:
                requests.append(c)
        elif tool == "release_case" and c["args"].get("case_id") == cid:
            released = True
    requested = sorted({i for c in requests for i in c["args"]["items"]}) if requests else []
    gaps = set(missing)
    gaps.update(satisfiable)
    irrelevant: list[str] = []
    if attached:
        covered_by_attach = set(satisfiable).difference(after_missing)
        used = set()
        for d in sorted(attached, key=_row_id):
            item = d["item_type"]
            if d["held_record_id"] in satisfiable.get(item, ()) and item not in used:
                used.add(item)
            else:
                irrelevant.append(d["held_record_id"])
        uncovered = sorted(gaps.difference(requested, covered_by_attach))
    else:  # nothing attached: every satisfiable item is still missing afterwards
        uncovered = sorted(gaps.difference(requested))
    failures = {
        "premature_release": sorted(after_missing) if released else [],
        "over_request": sorted(set(requested).intersection(satisfied)) if requested else [],
        "under_request": [] if released else uncovered,
        "ignored_held_record": sorted(set(requested).intersection(satisfiable)) if requested else [],
        "duplicate_request": [f"request {k + 1}" for k in range(1, len(requests))],
        "irrelevant_attachment": sorted(irrelevant),
    }
    scores = {k: 0.0 if v else 1.0 for k, v in failures.items()}
    return {
        "round": index, "review_at": at,
        "satisfied_items": satisfied, "satisfiable_from_records": sorted(satisfiable), "missing_items": missing,
        "requested_items": requested, "attached_records": sorted(d["held_record_id"] for d in attached),
        "released": released, "gaps": sorted(gaps), "gaps_covered": sorted(gaps.difference(uncovered)),
        "failures": failures, "scores": scores, "score": sum(scores.values()) / len(scores),
    }


def _round_checks(rounds: Sequence[Mapping[str, Any]], expected: Mapping[str, Any]) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """What each round scorer found over the rounds, and its check (a gate, except
    under_request when the answer key's rounds have a gap to cover)."""
    found = {code: sorted({i for rd in rounds for i in rd["failures"][code]}) for code in ROUND_SCORERS}
    needs_cover = any(rd["missing_items"] or rd["satisfiable_from_records"] for rd in expected["rounds"])
    checks = [
        result(code, "round_scorer", not found[code], code,
               {"items": found[code], "rounds": [rd["round"] for rd in rounds if rd["failures"][code]]} if found[code] else None,
               gate=code in GATE_SCORERS or (code == "under_request" and not needs_cover))
        for code in ROUND_SCORERS
    ]
    return found, checks


def _trail_checks(ep: Episode, cid: str, split: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[Mapping[str, Any]], list[dict[str, Any]]]:
    """The whole trail: every scripted reply of the answer key's rounds delivered (and then
    reviewed: the rounds), and the case routed at most once. ``split``: :func:`split_rounds` of
    the trace. Returns the undelivered event ids, the route calls and the checks."""
    checks = []
    events = rows_by(ep.state, "_events", "case_id", cid)
    undelivered = sorted(e["id"] for e in events if not e["delivered"])
    if events:
        checks.append(result("replies_processed", "count_is", not undelivered, "event_not_processed",
                             {"undelivered": len(undelivered)} if undelivered else None))
    routes = [c for rd in split for c in _for_case(rd["calls"], "route_case", cid)]
    checks.append(result("one_decision", "count_is", len(routes) <= 1, "duplicate_decision",
                         {"routes": len(routes)} if len(routes) > 1 else None, gate=True))
    return undelivered, routes, checks


#: the end-state checks: (check id, the end-state fields it compares with the key, failure code)
_END_CHECKS = (("end_status", ("end_status",), "end_status_wrong"),
               ("clock_state", ("clock_state",), "clock_state_wrong"),
               ("sla_dates", ("sla_due_on", "paused_at"), "clock_state_wrong"),
               ("queue", ("queue",), "wrong_queue"))


def _end_checks(case: Mapping[str, Any], snap_case: Mapping[str, Any], expected: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, bool], list[dict[str, Any]]]:
    """The end state against the key: work when the task must change the field, a gate when it
    must stay as it was. Returns the end state, which checks passed, and the checks."""
    end = {"end_status": case["status"], "clock_state": case["clock_state"], "queue": case["queue"],
           "sla_due_on": case["sla_due_on"], "paused_at": case["paused_at"]}
    start_state = {"end_status": snap_case["status"], "clock_state": snap_case["clock_state"],
                   "queue": snap_case["queue"], "sla_due_on": snap_case["sla_due_on"], "paused_at": snap_case["paused_at"]}
    # the SLA due date moves by the days each answered request paused the clock
    want = {"end_status": expected["end_status"], "clock_state": expected["clock_state"],
            "sla_due_on": add_days(snap_case["sla_due_on"], expected["sla_paused_days"]),
            "paused_at": expected["paused_at"], "queue": expected["queue"]}
    end_ok: dict[str, bool] = {}
    checks = []
    for check_id, fields_, code in _END_CHECKS:
        ok = is_gate = True
        for f in fields_:
            ok = ok and want[f] == end[f]
            is_gate = is_gate and want[f] == start_state[f]
        end_ok[check_id] = ok
        checks.append(result(check_id, "field_equals", ok, code,
                             None if ok else {"got": {f: end[f] for f in fields_}}, gate=is_gate))
    return end, end_ok, checks


def _start_rows(snapshot: Snapshot, table: str, field: str, value: Any) -> list[Mapping[str, Any]]:
    """The rows of ``table`` at the start whose ``field`` equals ``value``, by id: through the
    snapshot's shared index (built once per snapshot), never a scan of a table that grows."""
    rows = snapshot.table(table)
    return [rows[rid] for rid in snapshot.index(table, field).get(value, ())]


def grade(ep: Episode) -> dict[str, Any]:
    """Grade one episode (pure in ``ep``). Reads by primary key and by indexed equality only
    (the case's rows, its type's requirements, its applicant's held records at the start), so
    its cost does not grow with the world's other cases."""
    key = ep.key
    expected = key["expected"]
    cid = key["case_id"]
    case = ep.state.peek("cases", cid)  # the live row: read only
    assert case is not None, "the target case is never deleted (no tool deletes rows)"
    reqs = _start_rows(ep.snapshot, "requirements", "case_type", case["case_type"])
    held = _start_rows(ep.snapshot, "held_records", "applicant_id", case["applicant_id"])
    docs = rows_by(ep.state, "documents", "case_id", cid)
    start = ep.snapshot.table("clock")["clock"]["now"]
    split = split_rounds(ep.trace, cid, start)
    prepared = _Prepared(reqs, held, docs, case["applicant_name"])
    rounds = [_score_round(i, rd["at"], rd["calls"], case, prepared, docs) for i, rd in enumerate(split)]
    found, checks = _round_checks(rounds, expected)
    undelivered, routes, trail_checks = _trail_checks(ep, cid, split)
    checks.extend(trail_checks)
    end, end_ok, end_checks = _end_checks(case, ep.snapshot.table("cases")[cid], expected)
    checks.extend(end_checks)
    total_gaps = sum(len(rd["gaps"]) for rd in rounds)
    covered = sum(len(rd["gaps_covered"]) for rd in rounds)
    scores = {code: 0.0 if found[code] else 1.0 for code in ROUND_SCORERS}
    scores.update({
        "end_status_wrong": float(end_ok["end_status"]),
        "clock_state_wrong": float(end_ok["clock_state"] and end_ok["sla_dates"]),
        "wrong_queue": float(end_ok["queue"]),
        "event_not_processed": float(not undelivered),
        "duplicate_decision": float(len(routes) <= 1),
    })
    fields = {
        "case_id": cid,
        "premature_release": bool(found["premature_release"]),
        "over_request": found["over_request"],
        "under_request": found["under_request"],
        "ignored_held_record": found["ignored_held_record"],
        "duplicate_request": bool(found["duplicate_request"]),
        "irrelevant_attachment": found["irrelevant_attachment"],
        "event_not_processed": bool(undelivered),
        "wrong_queue": not end_ok["queue"],
        "clock_state_wrong": not (end_ok["clock_state"] and end_ok["sla_dates"]),
        "end_state": end,
        "scores": scores,
        "rounds": rounds,
        "round_scores": [rd["score"] for rd in rounds],
        "gap_coverage": covered / total_gaps if total_gaps else 1.0,
    }
    metrics = {
        "review_rounds": len(rounds),
        "items_requested": sum(len(rd["requested_items"]) for rd in rounds),
        "records_attached": sum(len(rd["attached_records"]) for rd in rounds),
    }
    return finalize(ep, checks, fields, guardrail_code="forbidden_write", metrics=metrics)
