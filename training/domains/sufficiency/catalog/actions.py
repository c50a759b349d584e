"""Every action of every sufficiency tier: how it grounds one native call from the desk and when
it is legal.

The mask expresses legality only (what can be formed and what the tool would accept, as far as
the observations show), never judgement:

- reads: ``get_requirements`` needs the case type (``get_case``); every read is masked once its
  answer is known (the desk tracks the documents and the case state itself). The paginated reads
  stay open while a page remains: the same action fetches the next page;
- the choices (the conclusions tier's ``attach_held_record`` / ``request_missing``, the other
  tiers' ``attach_held_record[h]`` / ``request_items[S]``) need their argument and a case that is
  not released; a second request while the first is still open is legal (the tool accepts it)
  and left to the agent: the grade fails it (``duplicate_request``);
- ``wait`` is masked when the case is known not to await a reply, or a wait already reported that
  no further reply is expected; ``resume_clock`` when the clock is known to run or the case awaits
  a reply; ``release_case`` when the case is known to be released or awaiting a reply (each a
  precondition error the tool would return);
- ``route_*`` need the routing rule (the queue names) and are masked only for the queue the case
  already sits in (the tool rejects it: conflict);
- once the case is released and routed, and for an action whose identical call just failed
  (until a later call succeeds), only ``submit`` is legal.
"""

from __future__ import annotations

from typing import Any

from backoffice.training.catalog.features import Action, Actions
from backoffice.training.domains.sufficiency.catalog.desk import N_HELD, SUBSETS, SufficiencyDesk

ACTIONS: Actions[SufficiencyDesk] = Actions()

Call = dict[str, Any] | None


def _case(tool: str, desk: SufficiencyDesk, **args: Any) -> Call:
    return {"tool": tool, "args": {"case_id": desk.case_id, **args}} if desk.case_id else None


@ACTIONS.action("get_case", "get_case", "Read the task's case (type, applicant, amount, status, clock, queue, date).",
                legal=lambda d: d.open_for("get_case") and d.case is None)
def get_case(desk: SufficiencyDesk) -> Call:
    return _case("get_case", desk)


@ACTIONS.action("get_requirements", "get_requirements",
                "Read the required items, their validity conditions and the routing rule of the case's type.",
                legal=lambda d: d.open_for("get_requirements") and d.case is not None and d.requirements is None)
def get_requirements(desk: SufficiencyDesk) -> Call:
    if not desk.case_id or desk.case is None:
        return None
    return {"tool": "get_requirements", "args": {"case_type": desk.case["case_type"]}}


@ACTIONS.action("search_held_records", "search_held_records",
                "Read the records held about the case's applicant; while the last page returned a next_cursor, read the "
                "next page.", legal=lambda d: d.open_for("search_held_records") and (d.held is None or d.held_cursor is not None))
def search_held_records(desk: SufficiencyDesk) -> Call:
    if desk.held_cursor is not None:
        return _case("search_held_records", desk, cursor=desk.held_cursor)
    return _case("search_held_records", desk)


@ACTIONS.action("list_documents", "list_documents",
                "Read the documents on the case and the review date; while the last page returned a next_cursor, read "
                "the next page.",
                legal=lambda d: d.open_for("list_documents") and (d.documents is None or d.documents_cursor is not None))
def list_documents(desk: SufficiencyDesk) -> Call:
    if desk.documents_cursor is not None:
        return _case("list_documents", desk, cursor=desk.documents_cursor)
    return _case("list_documents", desk)


# -- the conclusions tier's choices ------------------------------------------------------------
@ACTIONS.action("attach_held_record", "attach_held_record",
                "Attach the first valid held record of the first item (by name) a held record can cover.",
                legal=lambda d: d.open_for("attach_held_record") and not d.released() and d.attach_target() is not None)
def attach_first(desk: SufficiencyDesk) -> Call:
    record = desk.attach_target()
    return None if record is None else _case("attach_held_record", desk, record_id=record)


def _missing_legal(desk: SufficiencyDesk) -> bool:
    a = desk.assessment()
    return desk.open_for("request_missing") and not desk.released() and a is not None and bool(a.missing_items)


@ACTIONS.action("request_missing", "request_items",
                "Ask the applicant for exactly the items still missing (not satisfied, no valid held record).",
                legal=_missing_legal)
def request_missing(desk: SufficiencyDesk) -> Call:
    a = desk.assessment()
    if a is None or not a.missing_items:
        return None
    return _case("request_items", desk, items=list(a.missing_items))


# -- the facts and raw tiers' choices ------------------------------------------------------------
def _attach_legal(desk: SufficiencyDesk, h: int, name: str) -> bool:
    if not desk.choosing() or name in desk.failed:
        return False
    record = desk.held_record(h)
    return record is not None and not desk.is_attached(record)


def attach_slot(desk: SufficiencyDesk, h: int, name: str = "") -> Call:
    record = desk.held_record(h)
    return None if record is None else _case("attach_held_record", desk, record_id=str(record["id"]))


def subset_name(s: tuple[int, ...]) -> str:
    return f"request_items[{','.join(str(i) for i in s)}]"


def _request_legal(desk: SufficiencyDesk, s: tuple[int, ...], last: int, name: str) -> bool:
    return desk.choosing() and desk.requirements is not None and last < len(desk.requirements) and name not in desk.failed


def request_subset(desk: SufficiencyDesk, s: tuple[int, ...], last: int = 0, name: str = "") -> Call:
    reqs = [desk.requirement(i) for i in s]
    if any(r is None for r in reqs):
        return None
    return _case("request_items", desk, items=[str(r["item_type"]) for r in reqs if r])


# (each legality gets its action's name: the failed-call check needs it, built once here)
for _h in range(N_HELD):
    _name = f"attach_held_record[{_h}]"
    ACTIONS.add(Action(_name, "attach_held_record", f"Attach the {_h}-th held record search_held_records returned to the case.",
                       attach_slot, _attach_legal, (_h, _name)))
for _s in SUBSETS:
    ACTIONS.add(Action(subset_name(_s), "request_items",
                       f"Ask the applicant for the required items of item slots {', '.join(str(i) for i in _s)} "
                       f"(the items get_requirements lists at those positions); pauses a running SLA clock.",
                       request_subset, _request_legal, (_s, max(_s), subset_name(_s))))


# -- the procedure --------------------------------------------------------------------------------
@ACTIONS.action("wait", "wait", "Wait for the applicant's reply (new date, uploaded documents).",
                legal=lambda d: d.open_for("wait") and d.status in (None, "awaiting_info") and not d.no_reply)
def wait(desk: SufficiencyDesk) -> Call:
    return _case("wait", desk)


@ACTIONS.action("resume_clock", "resume_clock", "Restart the paused SLA clock.",
                legal=lambda d: d.open_for("resume_clock") and d.clock_state in (None, "paused") and d.status != "awaiting_info")
def resume_clock(desk: SufficiencyDesk) -> Call:
    return _case("resume_clock", desk)


@ACTIONS.action("release_case", "release_case", "Release the case for decision.",
                legal=lambda d: d.open_for("release_case") and d.status in (None, "in_review"))
def release_case(desk: SufficiencyDesk) -> Call:
    return _case("release_case", desk)


def _route(queue: str) -> tuple[Any, Any]:
    key = f"{queue}_queue"

    def ground(desk: SufficiencyDesk) -> Call:
        if desk.routing is None:
            return None
        return _case("route_case", desk, queue=desk.routing[key])

    def legal(desk: SufficiencyDesk) -> bool:
        return desk.open_for(f"route_{queue}") and desk.routing is not None and desk.queue != desk.routing.get(key)

    return ground, legal


_ground, _legal = _route("standard")
ACTIONS.action("route_standard", "route_case", "Route the case to its routing rule's standard decision queue.", legal=_legal)(_ground)
_ground, _legal = _route("senior")
ACTIONS.action("route_senior", "route_case", "Route the case to its routing rule's senior decision queue.", legal=_legal)(_ground)


@ACTIONS.action("submit", "submit", "Finish the episode.")
def submit(desk: SufficiencyDesk) -> Call:
    return {"tool": "submit", "args": {}}


__all__ = ["ACTIONS", "subset_name"]
