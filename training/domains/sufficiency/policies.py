"""Policies for the sufficiency domain: the oracle, one wrong policy per failure code, the blind
policies, one policy per documented rule (the oracle ignoring that rule) and the exploit hooks.

The oracle reads only tool results: the case, its type's requirements (the rules), the
documents and the applicant's held records. It applies :func:`rules.assess` to what it was
shown, on the date the tools report, every review round.

Rule-sharing policy: the oracle and the catalog share the domain's public rule helpers
(:mod:`backoffice.envs.sufficiency.rules`: what the rules document says about a document's
validity, computed from observed rows). Neither imports the grader, and the grader imports
neither them nor the rules module (it has its own reading of the requirement rows and judges the
end state against the answer key), so the oracle passing checks the grader independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from backoffice.envs.sufficiency.rules import Assessment, assess, record_failed_conditions
from backoffice.envs.sufficiency.tables import decision_queue
from backoffice.training.integrity.exploits import Hook, repeat_last_write
from backoffice.training.integrity.scale import Paged, Scaled, param, rows_where_args
from backoffice.training.policies.base import Plan, Policy, ScriptedPolicy, call, every_page, pages


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the case): what the integrity probes give an attacker besides the
    brief (``tree_probe.visible_probe``)."""
    return [call("get_case", case_id=brief["params"]["case_id"])]


class Oracle(ScriptedPolicy):
    """Review, attach valid held records, request exactly the uncovered items, wait, resume the
    clock, review again; release and route once sufficient. Subclasses override one decision."""

    name = "oracle"

    # -- the decisions a wrong policy may override -----------------------------------------
    def attach(self, a: Assessment) -> list[str]:
        """Held records to attach: the first valid one for each satisfiable item."""
        return [a.satisfiable_from_records[i][0] for i in sorted(a.satisfiable_from_records)]

    def request(self, a: Assessment, round_no: int) -> list[str]:
        """Items to request from the applicant (empty: request nothing)."""
        return list(a.missing_items)

    def release_now(self, a: Assessment, round_no: int) -> bool:
        return not a.missing_items

    def queue(self, routing: dict[str, Any], amount: int) -> str:
        return decision_queue(routing, amount)

    def route(self, case_id: str, routing: dict[str, Any], amount: int) -> Plan:
        yield call("route_case", case_id=case_id, queue=self.queue(routing, amount))

    resume_after_reply = True
    release_when_sufficient = True

    def before(self, case_id: str) -> Plan:
        """Calls made before the review starts (none for the oracle)."""
        return
        yield {}

    def review(self, items: list[dict[str, Any]], docs: list[dict[str, Any]], held: list[dict[str, Any]],
               name: str, today: str, round_no: int) -> Assessment:
        """The assessment of one review round (the rule, applied to what the tools returned)."""
        return assess(items, docs, held, name, today)

    def wait_for_reply(self, round_no: int) -> bool:
        return True

    # -- the plan --------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        cid = brief["params"]["case_id"]
        yield from self.before(cid)
        got = yield call("get_case", case_id=cid)
        case = got["result"]["case"]
        rules = (yield call("get_requirements", case_type=case["case_type"]))["result"]["tables"]
        held = yield from every_page("search_held_records", "records", case_id=cid)
        for round_no in range(10):
            listed = yield from pages("list_documents", case_id=cid)
            docs = [d for page in listed for d in page["documents"]]
            a = self.review(rules["items"], docs, held, case["applicant_name"], listed[0]["now"][:10], round_no)
            for record_id in self.attach(a):
                yield call("attach_held_record", case_id=cid, record_id=record_id)
            if self.release_now(a, round_no):
                if self.release_when_sufficient:
                    yield call("release_case", case_id=cid)
                yield from self.route(cid, rules["routing"], case["amount_cents"])
                return
            items = self.request(a, round_no)
            if not items:
                return
            yield from self.send_request(cid, items)
            if not self.wait_for_reply(round_no):
                return
            reply = yield call("wait", case_id=cid)
            if reply["status"] != "ok":
                return  # no further reply expected: leave the request outstanding
            if self.resume_after_reply:
                yield call("resume_clock", case_id=cid)

    def send_request(self, case_id: str, items: list[str]) -> Plan:
        """The request of one review round: one call listing every item still needed."""
        yield call("request_items", case_id=case_id, items=items)


class PrematureRelease(Oracle):
    """Releases at the first review whatever is missing."""

    def release_now(self, a: Assessment, round_no: int) -> bool:
        return True


class OverRequest(Oracle):
    """Asks again for an item that is already satisfied, 'to be safe'."""

    def request(self, a: Assessment, round_no: int) -> list[str]:
        return sorted({*a.missing_items, *a.satisfied_items[:1]})


class UnderRequest(Oracle):
    """Forgets the last missing item of every request."""

    def request(self, a: Assessment, round_no: int) -> list[str]:
        return list(a.missing_items[:-1])


class IgnoredHeldRecord(Oracle):
    """Never looks at held records: asks the applicant for those items instead."""

    def attach(self, a: Assessment) -> list[str]:
        return []

    def request(self, a: Assessment, round_no: int) -> list[str]:
        return sorted({*a.missing_items, *a.satisfiable_from_records})

    def release_now(self, a: Assessment, round_no: int) -> bool:
        return not a.missing_items and not a.satisfiable_from_records


class WrongQueue(Oracle):
    """Routes to the other decision queue of the case type (ignores the threshold)."""

    def queue(self, routing: dict[str, Any], amount: int) -> str:
        right = decision_queue(routing, amount)
        return routing["standard_queue"] if right == routing["senior_queue"] else routing["senior_queue"]


class ClockStateWrong(Oracle):
    """Never restarts the SLA clock after a reply."""

    resume_after_reply = False


class EndStatusWrong(Oracle):
    """Routes a sufficient case without releasing it."""

    release_when_sufficient = False


class ForbiddenWrite(Oracle):
    """Also writes a note on a neighbouring case in the intake queue."""

    def before(self, case_id: str) -> Plan:
        listed = yield call("list_cases", queue="intake")  # one page is enough: any other case will do
        others = [c["id"] for c in listed["result"]["cases"] if c["id"] != case_id]
        if others:
            yield call("add_note", case_id=others[0], text="Checked while reviewing the queue.")


class DuplicateRequest(Oracle):
    """Asks for the missing items one request at a time."""

    def send_request(self, case_id: str, items: list[str]) -> Plan:
        if len(items) == 1:
            yield call("request_items", case_id=case_id, items=items)
            yield call("request_items", case_id=case_id, items=items, message="Reminder: we still need this.")
            return
        for item in items:
            yield call("request_items", case_id=case_id, items=[item])


class IrrelevantAttachment(Oracle):
    """Attaches every held record of the applicant at the first review, 'to have everything on file'."""

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        self._first = True
        return super().plan(brief, info)

    def review(self, items, docs, held, name, today, round_no):
        self._held = held
        return super().review(items, docs, held, name, today, round_no)

    def attach(self, a: Assessment) -> list[str]:
        if not self._first:
            return super().attach(a)
        self._first = False
        return [r["id"] for r in sorted(self._held, key=lambda r: r["id"])]


class EventNotProcessed(Oracle):
    """Sends the first request, then never waits for the reply."""

    def wait_for_reply(self, round_no: int) -> bool:
        return False


class DuplicateDecision(Oracle):
    """Routes to the other decision queue first, then to the right one."""

    def route(self, case_id: str, routing: dict[str, Any], amount: int) -> Plan:
        right = decision_queue(routing, amount)
        other = routing["standard_queue"] if right == routing["senior_queue"] else routing["senior_queue"]
        yield call("route_case", case_id=case_id, queue=other)
        yield call("route_case", case_id=case_id, queue=right)


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "premature_release": PrematureRelease,
    "over_request": OverRequest,
    "under_request": UnderRequest,
    "ignored_held_record": IgnoredHeldRecord,
    "duplicate_request": DuplicateRequest,
    "irrelevant_attachment": IrrelevantAttachment,
    "wrong_queue": WrongQueue,
    "clock_state_wrong": ClockStateWrong,
    "end_status_wrong": EndStatusWrong,
    "event_not_processed": EventNotProcessed,
    "duplicate_decision": DuplicateDecision,
    "forbidden_write": ForbiddenWrite,
}


# -- blind policies: they never judge a document ---------------------------------------------------
class _Blind(ScriptedPolicy):
    """Reads the case and its requirements only (never a document nor a held record)."""

    name = "blind"

    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        cid = brief["params"]["case_id"]
        case = (yield call("get_case", case_id=cid))["result"]["case"]
        rules = (yield call("get_requirements", case_type=case["case_type"]))["result"]["tables"]
        yield from self.act_on(cid, case, rules)

    def act_on(self, cid: str, case: dict[str, Any], rules: dict[str, Any]) -> Plan:  # pragma: no cover
        raise NotImplementedError
        yield {}


class ReleaseAtOnce(_Blind):
    """Releases the case and routes it by the threshold without looking at its documents."""

    def act_on(self, cid, case, rules):
        yield call("release_case", case_id=cid)
        yield call("route_case", case_id=cid, queue=decision_queue(rules["routing"], case["amount_cents"]))


class RouteToOneQueue(_Blind):
    """Releases every case to its type's standard decision queue."""

    def act_on(self, cid, case, rules):
        yield call("release_case", case_id=cid)
        yield call("route_case", case_id=cid, queue=rules["routing"]["standard_queue"])


class RequestEverything(_Blind):
    """Asks for every required item each round, waits, resumes; releases when no reply is left."""

    def act_on(self, cid, case, rules):
        items = [r["item_type"] for r in rules["items"]]
        for _ in range(6):
            yield call("request_items", case_id=cid, items=items)
            reply = yield call("wait", case_id=cid)
            if reply["status"] != "ok":
                return
            yield call("resume_clock", case_id=cid)
        yield call("release_case", case_id=cid)
        yield call("route_case", case_id=cid, queue=decision_queue(rules["routing"], case["amount_cents"]))


class RequestWithoutReading(_Blind):
    """Asks for every required item and submits (never reads the file, never waits)."""

    def act_on(self, cid, case, rules):
        yield call("request_items", case_id=cid, items=[r["item_type"] for r in rules["items"]])


class AttachEverything(_Blind):
    """Attaches every held record of the applicant, then releases and routes by the threshold."""

    def act_on(self, cid, case, rules):
        held = yield from every_page("search_held_records", "records", case_id=cid)
        for r in held:
            yield call("attach_held_record", case_id=cid, record_id=r["id"])
        yield call("release_case", case_id=cid)
        yield call("route_case", case_id=cid, queue=decision_queue(rules["routing"], case["amount_cents"]))


class _AttachByPosition(_Blind):
    """Attaches one held record by where it is listed (never by what it says), then releases
    and routes by the threshold."""

    last = False

    def act_on(self, cid, case, rules):
        held = yield from every_page("search_held_records", "records", case_id=cid)
        if held:
            yield call("attach_held_record", case_id=cid, record_id=held[-1 if self.last else 0]["id"])
        yield call("release_case", case_id=cid)
        yield call("route_case", case_id=cid, queue=decision_queue(rules["routing"], case["amount_cents"]))


class AttachFirstListed(_AttachByPosition):
    pass


class AttachLastListed(_AttachByPosition):
    last = True


class NeverRequest(Oracle):
    """Constant outcome 'release': attaches what held records cover, never asks the applicant."""

    def release_now(self, a: Assessment, round_no: int) -> bool:
        return True


BLIND_POLICIES: dict[str, type[Policy]] = {
    "release_at_once": ReleaseAtOnce,
    "route_to_one_queue": RouteToOneQueue,
    "request_everything": RequestEverything,
    "request_without_reading": RequestWithoutReading,
    "attach_everything": AttachEverything,
    "never_request": NeverRequest,
    "attach_first_listed": AttachFirstListed,
    "attach_last_listed": AttachLastListed,
}


# -- rule policies: the oracle ignoring one documented rule ----------------------------------------
def _relaxed(item: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**item, **changes}


class _IgnoreCondition(Oracle):
    """The oracle with one validity condition dropped from every requirement."""

    changes: dict[str, Any] = {}

    def review(self, items, docs, held, name, today, round_no):
        return super().review([_relaxed(i, **self.changes) for i in items], docs, held, name, today, round_no)


class IgnoreSignature(_IgnoreCondition):
    changes = {"signature_required": False}


class IgnoreNameMatch(_IgnoreCondition):
    changes = {"name_must_match": False}


class IgnoreAge(_IgnoreCondition):
    changes = {"max_age_days": None}


class IgnoreHeldRecordAcceptance(_IgnoreCondition):
    changes = {"accept_held_record": True}


class IgnoreLegibility(Oracle):
    def review(self, items, docs, held, name, today, round_no):
        return super().review(items, [{**d, "legible": True} for d in docs],
                              [{**h, "legible": True} for h in held], name, today, round_no)


class IgnorePresence(Oracle):
    """Treats an item with no document at all as present."""

    def review(self, items, docs, held, name, today, round_no):
        a = super().review(items, docs, held, name, today, round_no)
        absent = {i for i in a.missing_items if a.failures.get(i) == ("presence",)}
        return Assessment(tuple(sorted({*a.satisfied_items, *absent})), a.satisfiable_from_records,
                          tuple(i for i in a.missing_items if i not in absent), a.failures)


class IgnoreHeldRecordValidity(Oracle):
    """Takes any held record of an item as valid (never checks its date, name or legibility)."""

    def review(self, items, docs, held, name, today, round_no):
        def ok(d: dict[str, Any]) -> dict[str, Any]:
            return {**d, "legible": True, "signed": True, "name_on_document": name, "issued_on": today}

        docs = [ok(d) if d.get("source") == "held_record" else d for d in docs]
        return super().review(items, docs, [ok(h) for h in held], name, today, round_no)


class ReviewOnce(Oracle):
    """Trusts a reply: once the applicant has answered, the case is taken as sufficient."""

    def release_now(self, a: Assessment, round_no: int) -> bool:
        return round_no >= 1 or not a.missing_items


class _StaleDate(Oracle):
    """Keeps an item satisfied at the first review satisfied for good (ignores the new date)."""

    def plan(self, brief, info):
        self._ok_at_start: set[str] | None = None
        return super().plan(brief, info)

    def review(self, items, docs, held, name, today, round_no):
        a = super().review(items, docs, held, name, today, round_no)
        if self._ok_at_start is None:
            self._ok_at_start = set(a.satisfied_items)
        keep = {i for i in a.missing_items if i in self._ok_at_start}
        return Assessment(tuple(sorted({*a.satisfied_items, *keep})), a.satisfiable_from_records,
                          tuple(i for i in a.missing_items if i not in keep), a.failures)


class ConstantQueue(Oracle):
    """Routes every released case to its type's standard queue (ignores the threshold)."""

    def queue(self, routing: dict[str, Any], amount: int) -> str:
        return routing["standard_queue"]


class IgnoreNotAfterReviewDate(Oracle):
    """Takes a document (or held record) dated after the review date as issued on it."""

    def review(self, items, docs, held, name, today, round_no):
        def dated(d: dict[str, Any]) -> dict[str, Any]:
            return {**d, "issued_on": min(str(d.get("issued_on")), today)}

        return super().review(items, [dated(d) for d in docs], [dated(h) for h in held], name, today, round_no)


class AttachEveryValidRecord(Oracle):
    """Attaches every held record that meets its item's conditions, covered item or not."""

    def review(self, items, docs, held, name, today, round_no):
        by_item = {r["item_type"]: r for r in items}
        attached = {d.get("held_record_id") for d in docs}
        self._valid = [h["id"] for h in held if h["item_type"] in by_item and h["id"] not in attached
                       and not record_failed_conditions(h, by_item[h["item_type"]], name, today)]
        return super().review(items, docs, held, name, today, round_no)

    def attach(self, a: Assessment) -> list[str]:
        return sorted(set(self._valid))


class ThresholdExclusive(Oracle):
    """Routes an amount exactly at the senior threshold to the standard queue."""

    def queue(self, routing: dict[str, Any], amount: int) -> str:
        return routing["senior_queue"] if amount > routing["senior_threshold_cents"] else routing["standard_queue"]


#: the documented rules of the desk (``DOMAIN.rules``), each with the oracle ignoring it
RULE_POLICIES: dict[str, type[Policy]] = {
    "presence": IgnorePresence,
    "legibility": IgnoreLegibility,
    "signature": IgnoreSignature,
    "name_match": IgnoreNameMatch,
    "age": IgnoreAge,
    "held_record_acceptance": IgnoreHeldRecordAcceptance,
    "held_record_validity": IgnoreHeldRecordValidity,
    "use_held_records": IgnoredHeldRecord,
    "request_only_uncovered": OverRequest,
    "wait_for_replies": EventNotProcessed,
    "review_each_reply": ReviewOnce,
    "review_on_new_date": _StaleDate,
    "sla_pause_resume": ClockStateWrong,
    "routing_threshold": ConstantQueue,
    "not_after_review_date": IgnoreNotAfterReviewDate,
    "attach_only_uncovered": AttachEveryValidRecord,
    "one_request_per_review": DuplicateRequest,
    "threshold_inclusive": ThresholdExclusive,
}


# -- exploit hooks (see backoffice.training.integrity.exploits) -----------------------------------------------
def _last_ok(trace: Sequence[Mapping[str, Any]], tool: str) -> Mapping[str, Any] | None:
    for rec in reversed(trace):
        if rec["tool"] == tool and rec["result_status"] == "ok":
            return rec
    return None


def extra_request(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """After the oracle's request, before its wait: the same request again; on a case the oracle
    releases at once: a request for the first required item before the release."""
    if action.get("tool") == "wait":
        rec = _last_ok(trace, "request_items")
        return [{"tool": "request_items", "args": dict(rec["args"])}] if rec else []
    if action.get("tool") == "release_case":
        rec = _last_ok(trace, "get_requirements")
        if rec is None:
            return []
        return [{"tool": "request_items", "args": {"case_id": action["args"]["case_id"],
                                                   "items": [rec["result"]["tables"]["items"][0]["item_type"]]}}]
    return []


def extra_decision(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before the oracle's route: a route to the other decision queue of the case type."""
    if action.get("tool") != "route_case":
        return []
    rec = _last_ok(trace, "get_requirements")
    if rec is None:
        return []
    routing = rec["result"]["tables"]["routing"]
    other = routing["standard_queue"] if action["args"]["queue"] == routing["senior_queue"] else routing["senior_queue"]
    return [{"tool": "route_case", "args": {"case_id": action["args"]["case_id"], "queue": other}}]


def all_items_request(action: dict[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Boundary values: before the oracle's first write, a request listing every item the case
    type requires (the largest request there is)."""
    if action.get("tool") not in ("attach_held_record", "request_items", "release_case"):
        return []
    rec = _last_ok(trace, "get_requirements")
    if rec is None:
        return []
    items = [i["item_type"] for i in rec["result"]["tables"]["items"]]
    return [{"tool": "request_items", "args": {"case_id": action["args"]["case_id"], "items": items}}]


EXPLOITS: dict[str, Hook | None] = {
    "extra_request": extra_request,
    "extra_decision": extra_decision,
    # the oracle's last write again: a second route to the same queue is rejected (conflict,
    # nothing changes); a second request in the last review round is a duplicate_request
    "repeated_write": repeat_last_write,
    "boundary_values": all_items_request,
    # not applicable: no sufficiency tool updates a field to a value the agent chooses (the only
    # writes are attach, request, release, route and notes), and a route to the queue a case
    # already sits in is rejected (conflict) rather than applied
    "value_preserving_update": None,
    # not applicable: every value an agent writes that the grade reads is an id or an item-type
    # code (enumerations, not normalised free text); notes and request messages are not graded
    "formatting_only": None,
}


# -- scale (tests/integrity/test_scale.py): the paginated tools, read in a world thirty times the size ------
def _held_records(env: Any, args: dict[str, Any]) -> list[Any]:
    case = env.state.get("cases", args["case_id"])
    return [r["id"] for r in env.state.rows("held_records", applicant_id=case["applicant_id"], **{k: v for k, v in args.items() if k != "case_id"})]


def _case_with_records(env: Any) -> dict[str, Any]:
    """The first case (by id) whose applicant holds records, and the item type of the first."""
    for case in env.state.iter_rows("cases"):
        held = env.state.rows("held_records", applicant_id=case["applicant_id"])
        if held:
            return {"case_id": case["id"], "item_type": held[0]["item_type"]}
    raise AssertionError("no applicant holds a record")


SCALE = Scaled(
    world={"generate": 5, "scale": 30},
    paged=(
        Paged("list_cases", "cases", rows_where_args("cases"), lambda env: {"queue": "intake"}, min_rows=51),
        Paged("list_documents", "documents", rows_where_args("documents"), param("case_id")),
        Paged("search_held_records", "records", _held_records, param("case_id")),
        Paged("search_held_records", "records", _held_records, lambda env: {"case_id": _case_with_records(env)["case_id"]}, min_rows=1),
        Paged("search_held_records", "records", _held_records, _case_with_records, min_rows=1),
    ),
    wrong=("forbidden_write", "irrelevant_attachment", "wrong_queue", "ignored_held_record"),
)
