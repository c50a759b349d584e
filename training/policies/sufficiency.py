"""Policies for the sufficiency domain: the oracle and one wrong policy per failure code.

The oracle reads only tool results: the case, its type's requirements (the rules), the
documents and the applicant's held records. It applies :func:`rules.assess` to what it was
shown, on the date the tools report, every review round.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.sufficiency.rules import Assessment, assess
from backoffice.envs.sufficiency.tables import decision_queue
from backoffice.training.policies.base import Plan, ScriptedPolicy, call


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

    resume_after_reply = True
    release_when_sufficient = True

    def before(self, case_id: str) -> Plan:
        """Calls made before the review starts (none for the oracle)."""
        return
        yield {}

    # -- the plan --------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        cid = brief["params"]["case_id"]
        yield from self.before(cid)
        got = yield call("get_case", case_id=cid)
        case = got["result"]["case"]
        rules = (yield call("get_requirements", case_type=case["case_type"]))["result"]
        held = (yield call("search_held_records", case_id=cid))["result"]["records"]
        for round_no in range(10):
            listed = (yield call("list_documents", case_id=cid))["result"]
            a = assess(rules["items"], listed["documents"], held, case["applicant_name"], listed["now"][:10])
            for record_id in self.attach(a):
                yield call("attach_held_record", case_id=cid, record_id=record_id)
            if self.release_now(a, round_no):
                if self.release_when_sufficient:
                    yield call("release_case", case_id=cid)
                yield call("route_case", case_id=cid, queue=self.queue(rules["routing"], case["amount_cents"]))
                return
            items = self.request(a, round_no)
            if not items:
                return
            yield call("request_items", case_id=cid, items=items)
            reply = yield call("wait", case_id=cid)
            if reply["status"] != "ok":
                return  # no further reply expected: leave the request outstanding
            if self.resume_after_reply:
                yield call("resume_clock", case_id=cid)


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
        listed = yield call("list_cases", queue="intake")
        others = [c["id"] for c in listed["result"]["cases"] if c["id"] != case_id]
        if others:
            yield call("add_note", case_id=others[0], text="Checked while reviewing the queue.")


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "premature_release": PrematureRelease,
    "over_request": OverRequest,
    "under_request": UnderRequest,
    "ignored_held_record": IgnoredHeldRecord,
    "wrong_queue": WrongQueue,
    "clock_state_wrong": ClockStateWrong,
    "end_status_wrong": EndStatusWrong,
    "forbidden_write": ForbiddenWrite,
}
