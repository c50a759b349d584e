"""Every action of every approvals tier: how it is grounded from the desk (:mod:`.desk`) and when
it is legal.

The mask expresses **legality only**, never judgement. An action is masked only when

- its call cannot be formed from what was observed: a read whose argument is unknown (the
  rules before the request, a file or delegations before the person is known, a holder slot
  beyond the roles it looks up), a decision before the band it must cite was read (a decision
  also needs the person it is in the name of, and the row it cites), a ledger entry without a
  beneficiary account, an order release without an order;
- it repeats a read whose answer is already known (a paginated read -- ``list_roles``,
  ``find_people``, ``lookup_role_holders``, ``lookup_delegations`` -- stays available, asking for
  the next page, until its last page was read; in the released worlds every answer fits on one
  page);
- the tool is certain to refuse it, visibly: a second decision (the request is no longer
  open), a ledger entry for an order-type request (or a second one), an order release for a
  ledger-type request or of an order that is not awaiting approval (or already released);
- the work is visibly finished: after a recorded ``reject`` / ``hold`` / ``escalate``, or a
  ``proceed`` and its downstream release, only ``submit``.

So every decision is available as soon as it can be grounded, whatever the facts say: deciding
too early, on the wrong outcome, citing the wrong authority or blocking fact, or releasing money
before a decision are the agent's mistakes to avoid, learned from the features.

Two tiers may give one name to two different actions (the conclusions tier's
``lookup_role_holders[i]`` reads candidate role ``i``, the facts tier's the role of row ``i``, the
raw tier's role slot ``i``): the registry names them apart (``lookup_candidate_holders[i]``,
``lookup_row_holders[i]``, ``lookup_role_holders[i]``; ``lookup_approver_delegations``) and each
tier shows them under its name (:func:`.tiers.shown_as`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backoffice.training.catalog.features import Actions
from backoffice.training.domains.approvals.catalog.desk import N_CANDIDATES, N_PEOPLE, N_ROLES, N_ROWS, OUTCOMES, ApprovalsDesk

ACTIONS: Actions[ApprovalsDesk] = Actions()
Call = dict[str, Any] | None


# -- reads every tier grounds alike --------------------------------------------------------------
@ACTIONS.action("get_request", "get_request", "Read the target request (brief's request_id).",
                legal=lambda desk: not desk.finished() and desk.request is None)
def get_request(desk: ApprovalsDesk) -> Call:
    return desk.request_call()


@ACTIONS.action("get_rules", "get_rules", "Read the rule document and the amount bands of the request's type (needs the request).",
                legal=lambda desk: not desk.finished() and desk.request is not None and desk.rules is None)
def get_rules(desk: ApprovalsDesk) -> Call:
    return desk.rules_call()


@ACTIONS.action("list_roles", "list_roles",
                "Read every approval role (types covered, level, amount limit); the next page while one is left.",
                legal=lambda desk: not desk.finished() and desk.roles is None)
def list_roles(desk: ApprovalsDesk) -> Call:
    return desk.roles_call()


@ACTIONS.action("find_people", "find_people", "Find the people called by the brief's approver_name (every page).",
                legal=lambda desk: not desk.finished() and not desk.find_done and bool(desk.approver_name))
def find_people(desk: ApprovalsDesk) -> Call:
    return desk.find_call()


# -- the approver's file and authority (conclusions) ------------------------------------------------
@ACTIONS.action("get_person", "get_person",
                "Read the resolved approver's reporting line and role assignments (needs find_people).",
                legal=lambda desk: not desk.finished() and desk.approver_id is not None and desk.approver_file() is None)
def get_approver(desk: ApprovalsDesk) -> Call:
    return desk.person_call(desk.approver_id)


def _candidate(desk: ApprovalsDesk, i: int) -> str | None:
    cands = desk.candidates()
    return cands[i] if i < len(cands) else None


def _may_look_up(desk: ApprovalsDesk, role: str | None) -> bool:
    """A role's holders may be looked up: a role is known and its holders are not yet."""
    return not desk.finished() and role is not None and role not in desk.holders


def _candidate_legal(desk: ApprovalsDesk, i: int) -> bool:
    return _may_look_up(desk, _candidate(desk, i))


def n_candidates(desk: ApprovalsDesk) -> int:
    """The candidate roles known (the lookup slots past them are empty)."""
    return len(desk.candidates())


def deciding(desk: ApprovalsDesk) -> bool:
    """What every decision and escalation needs first (their legality's gate): none recorded yet
    and the band to cite known."""
    return desk.may_decide()


@ACTIONS.family("lookup_candidate_holders[{i}]", N_CANDIDATES, "lookup_role_holders",
                "Holders now of candidate role {i} (the {i}-th by id of the roles of the delegations the approver "
                "received: rule delegator_holds).", legal=_candidate_legal, count=n_candidates)
def lookup_candidate_holders(desk: ApprovalsDesk, i: int) -> Call:
    return desk.holders_call(_candidate(desk, i))


@ACTIONS.action("lookup_approver_delegations", "lookup_delegations",
                "Every delegation the resolved approver received, in effect or not (include_inactive; needs find_people).",
                legal=lambda desk: not desk.finished() and desk.approver_id is not None and desk.approver_delegations() is None)
def lookup_approver_delegations(desk: ApprovalsDesk) -> Call:
    return desk.delegations_call(desk.approver_id)


def _approver_decision(desk: ApprovalsDesk, outcome: str) -> Call:
    # well-formed as soon as the approver and the band are known: it cites the authority found so
    # far, or the band alone (a decision without authority is the agent's mistake)
    band = desk.band()
    if desk.request_id is None or band is None or desk.approver_id is None:
        return None
    return desk.decision_call(outcome, desk.approver_id, [band["id"], *desk.authority()])


def _approver_may_decide(desk: ApprovalsDesk) -> bool:
    return desk.may_decide() and desk.approver_id is not None


@ACTIONS.action("decide_reject", "record_decision",
                "Record the approver's outcome 'reject', citing the band and the authority found so far (the band alone while none).",
                legal=_approver_may_decide, gate=deciding)
def decide_reject(desk: ApprovalsDesk) -> Call:
    return _approver_decision(desk, "reject")


@ACTIONS.action("decide_hold", "record_decision",
                "Record the approver's outcome 'hold', citing the band and the authority found so far (the band alone while none).",
                legal=_approver_may_decide, gate=deciding)
def decide_hold(desk: ApprovalsDesk) -> Call:
    return _approver_decision(desk, "hold")


@ACTIONS.action("escalate", "escalate",
                "Escalate the request to the band's required_role_id, citing the band and the blocking fact found so "
                "far (the band alone while none).", legal=lambda desk: desk.may_decide(), gate=deciding)
def escalate(desk: ApprovalsDesk) -> Call:
    band = desk.band()
    if desk.request_id is None or band is None:
        return None
    blocking = desk.blocking()
    return desk.escalate_call(band, [band["id"]] + ([blocking] if blocking is not None else []))


@ACTIONS.action("decide_proceed", "record_decision",
                "Record the approver's outcome 'proceed', citing the band and the authorising assignments or delegations "
                "found so far (the band alone while none was found).", legal=_approver_may_decide, gate=deciding)
def decide_proceed(desk: ApprovalsDesk) -> Call:
    return _approver_decision(desk, "proceed")


# -- the person on file and their rows (facts, raw) ------------------------------------------------------
def _person_legal(desk: ApprovalsDesk, p: int) -> bool:
    return not desk.finished() and p < len(desk.people) and desk.people[p]["id"] not in desk.files


@ACTIONS.family("get_person[{i}]", N_PEOPLE, "get_person",
                "Open the file of person slot {i} (the {i}-th person find_people returned, by id): reporting line and role "
                "assignments. That person is then on file: the row slots, lookup_delegations and the decisions are theirs.",
                legal=_person_legal)
def get_person(desk: ApprovalsDesk, p: int) -> Call:
    return None if p >= len(desk.people) else desk.person_call(desk.people[p]["id"])


@ACTIONS.action("lookup_delegations", "lookup_delegations",
                "Every delegation received/given by the person on file, in effect or not (include_inactive).",
                legal=lambda desk: not desk.finished() and desk.on_file is not None and desk.on_file_delegations() is None)
def lookup_delegations(desk: ApprovalsDesk) -> Call:
    return desk.delegations_call(desk.on_file)


def _row_role_legal(desk: ApprovalsDesk, s: int) -> bool:
    return _may_look_up(desk, desk.row_role(s))


@ACTIONS.family("lookup_row_holders[{i}]", N_ROWS, "lookup_role_holders",
                "Holders now of the role of row slot {i} (the role the assignment or delegation is for).", legal=_row_role_legal)
def lookup_row_holders(desk: ApprovalsDesk, s: int) -> Call:
    return desk.holders_call(desk.row_role(s))


def _role_slot_legal(desk: ApprovalsDesk, i: int) -> bool:
    return _may_look_up(desk, desk.role_slot(i))


@ACTIONS.family("lookup_role_holders[{i}]", N_ROLES, "lookup_role_holders",
                "Holders now of role slot {i} (the {i}-th role list_roles returned, by id).", legal=_role_slot_legal)
def lookup_role_holders(desk: ApprovalsDesk, i: int) -> Call:
    return desk.holders_call(desk.role_slot(i))


def _row_may_decide(desk: ApprovalsDesk, s: int) -> bool:
    return desk.may_decide() and desk.on_file is not None and s < len(desk.rows())


def _row_decision(outcome: str) -> None:
    """Register ``decide_<outcome>[s]``: the on-file person's decision citing row ``s``."""
    @ACTIONS.family(f"decide_{outcome}[{{i}}]", N_ROWS, "record_decision",
                    f"Record the on-file person's decision '{outcome}', citing the band holding the amount and row slot {{i}} "
                    "(their assignment or delegation) as the authority.", legal=_row_may_decide, gate=deciding)
    def decide(desk: ApprovalsDesk, s: int) -> Call:
        band, rows = desk.band(), desk.rows()
        if desk.request_id is None or band is None or desk.on_file is None or s >= len(rows):
            return None
        return desk.decision_call(outcome, desk.on_file, [band["id"], rows[s][1]["id"]])


for _outcome in OUTCOMES:
    _row_decision(_outcome)


def _escalation(desk: ApprovalsDesk, cited: str | None) -> Call:
    band = desk.band()
    if desk.request_id is None or desk.request is None or band is None or not cited:
        return None
    return desk.escalate_call(band, [band["id"], cited])


def _cite_request(desk: ApprovalsDesk) -> Call:
    return _escalation(desk, None if desk.request is None else desk.request["id"])


def _cite_requester(desk: ApprovalsDesk) -> Call:
    return _escalation(desk, None if desk.request is None else desk.request.get("requester_id"))


def _cite_approver(desk: ApprovalsDesk) -> Call:
    return _escalation(desk, desk.on_file)


def _grounded(ground: Callable[[ApprovalsDesk], Call]) -> Callable[[ApprovalsDesk], bool]:
    """Legal while a decision may be made and ``ground`` can form the call."""
    return lambda desk: desk.may_decide() and ground(desk) is not None


for _name, _doc, _ground in (
    ("escalate_cite_request", "Escalate to the required_role_id of the band holding the amount, citing that band and "
     "the request id.", _cite_request),
    ("escalate_cite_requester", "Escalate to the band's required_role_id, citing the band and the requester's person id.",
     _cite_requester),
    ("escalate_cite_approver", "Escalate to the band's required_role_id, citing the band and the on-file person's id.",
     _cite_approver),
):
    ACTIONS.action(_name, "escalate", _doc, legal=_grounded(_ground), gate=deciding)(_ground)


def _cite_row_legal(desk: ApprovalsDesk, s: int) -> bool:
    return desk.may_decide() and escalate_cite(desk, s) is not None


@ACTIONS.family("escalate_cite[{i}]", N_ROWS, "escalate",
                "Escalate to the band's required_role_id, citing the band and row slot {i} (an assignment or delegation of "
                "the person on file).", legal=_cite_row_legal, gate=deciding)
def escalate_cite(desk: ApprovalsDesk, s: int) -> Call:
    rows = desk.rows()
    return _escalation(desk, rows[s][1]["id"] if s < len(rows) else None)


# -- the release and the end (every tier) -----------------------------------------------------------
@ACTIONS.action("post_ledger_entry", "post_ledger_entry",
                "Post the ledger entry of a refund / credit adjustment / write-off / expense claim: its beneficiary_account, "
                "its full amount (possible before a decision too: releasing before a valid proceed is a mistake).",
                legal=lambda desk: desk.may_release(ledger=True))
def post_ledger_entry(desk: ApprovalsDesk) -> Call:
    return desk.ledger_call()


@ACTIONS.action("release_order", "release_order",
                "Release the request's order (purchase order / vendor payment); possible before a decision too.",
                legal=lambda desk: desk.may_release(ledger=False))
def release_order(desk: ApprovalsDesk) -> Call:
    return desk.order_call()


@ACTIONS.action("submit", "submit", "Finish the episode.")
def submit(desk: ApprovalsDesk) -> Call:
    return {"tool": "submit", "args": {}}


__all__ = ["ACTIONS"]
