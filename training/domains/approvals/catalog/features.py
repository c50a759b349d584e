"""Every feature of every approvals tier, each one function of the desk (:mod:`.desk`), in
``[-1, 1]`` and ``0`` until what it reads was read.

Three kinds, by what they leave to the agent (a tier picks by name, :mod:`.tiers`):

- **observed facts** (every tier): what was read (``request_read``, ``person_on_file``), values
  as the tools return them, per slot (a person, a band, a role, a row: the on-file person's
  assignments then delegations by id): amounts in cents / 1e9, dates as days from the desk clock
  / 1000, levels / 4, one-hot categories, ids only as "same entity" flags;
- **comparisons** of two observed values (``rule.amount_gt_hard_limit``,
  ``row[s].level_ge_required``), against the cited rule (the band holding the amount, which the
  catalog grounds in every tier);
- **conclusions** of the rule document about the approver (``sod_breach``, ``authority_found``,
  ``procedure_proceed`` ...), computed by the desk with the domain's rule helpers.

A fact two tiers show under two names is one function registered under both names
(``is_ledger_type`` / ``request_is_ledger_type``). Where two tiers give one name to two
different facts, the registry names one of them otherwise and the tier shows it under its name
(``FEATURES.shown_as``): ``rule.present`` is the conclusions tier's ``rules_read`` (the band is
known, not only the rules), ``approver_delegations_read`` its ``delegations_read`` (the
approver's, not the on-file person's).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from backoffice.envs.approvals.rules import ORDER_TYPES, authorising, is_ledger_type, is_missing
from backoffice.envs.approvals.tables import INFO_FIELDS, REQUEST_TYPES, today
from backoffice.training.catalog.features import Features
from backoffice.training.domains.approvals.catalog.desk import N_BANDS, N_CANDIDATES, N_PEOPLE, N_ROLES, N_ROWS, ApprovalsDesk

FEATURES: Features[ApprovalsDesk] = Features()
feature, block, block_family = FEATURES.feature, FEATURES.block, FEATURES.block_family

def approver_known(desk: ApprovalsDesk) -> bool:
    """What the approver's features need to be other than 0 (their gate): the approver resolved,
    their file opened or their delegations read."""
    return desk.approver_id is not None or desk.on_file is not None or desk.delegations_of is not None


#: amounts in cents are given as cents / AMOUNT_FULL (the largest released value is 2e8)
AMOUNT_FULL = 1e9
#: dates are given as days from the desk clock / DAYS_FULL
DAYS_FULL = 1000.0


def _clip(x: float) -> float:
    return float(max(-1.0, min(1.0, x)))


def _money(x: int | None) -> float:
    """An amount in cents / :data:`AMOUNT_FULL` (1 when null: no bound)."""
    return 1.0 if x is None else _clip(x / AMOUNT_FULL)


def _days(a: str, b: str) -> float:
    """``a - b`` in days (dates or datetimes, ISO)."""
    def parse(x: str) -> dt.datetime:
        return dt.datetime.fromisoformat(x if len(x) > 10 else x + "T00:00:00")
    return (parse(a) - parse(b)).total_seconds() / 86400.0


# -- what has been read and written -------------------------------------------------------------
@feature("request_read", "1 once get_request returned the target request")
def request_read(desk: ApprovalsDesk) -> float:
    return float(desk.request is not None)


@feature("rules_read", "1 once get_rules returned the request type's bands")
def rules_read(desk: ApprovalsDesk) -> float:
    return float(desk.rules is not None)


@feature("roles_read", "1 once list_roles returned every role (its last page)")
def roles_read(desk: ApprovalsDesk) -> float:
    return float(desk.roles is not None)


@feature("people_read", "1 once find_people returned its last page")
def people_read(desk: ApprovalsDesk) -> float:
    return float(desk.find_done)


@feature("person_on_file", "1 once get_person opened someone's file (the person on file)")
def person_on_file(desk: ApprovalsDesk) -> float:
    return float(desk.on_file is not None)


@feature("delegations_read", "1 once lookup_delegations returned the on-file person's delegations")
def delegations_read(desk: ApprovalsDesk) -> float:
    return float(desk.on_file_delegations() is not None)


@feature("decision_recorded", "1 once a decision (record_decision or escalate) on the request succeeded")
def decision_recorded(desk: ApprovalsDesk) -> float:
    return float(desk.decision is not None)


@feature("decided_proceed", "1 if the recorded decision's outcome is proceed")
def decided_proceed(desk: ApprovalsDesk) -> float:
    return float(desk.decision == "proceed")


@feature("decided_other", "1 if the recorded decision is hold, reject or escalate")
def decided_other(desk: ApprovalsDesk) -> float:
    return float(desk.decision is not None and desk.decision != "proceed")


@feature("downstream_done", "1 once the ledger entry was posted or the order released (post_ledger_entry or release_order succeeded)")
def downstream_done(desk: ApprovalsDesk) -> float:
    return float(desk.downstream_done)


@feature("downstream_due", "1 if decided_proceed and not downstream_done (the release is the remaining work)")
def downstream_due(desk: ApprovalsDesk) -> float:
    return float(desk.decision == "proceed" and not desk.downstream_done)


@feature("last_write_error", "1 if the last writing call returned an error")
def last_write_error(desk: ApprovalsDesk) -> float:
    return float(desk.last_write_error)


# -- the request --------------------------------------------------------------------------------
@feature("request_is_ledger_type", "1 if the request type is refund / credit_adjustment / write_off / expense_claim")
@feature("is_ledger_type", "1 if the request type is refund / credit_adjustment / write_off / expense_claim (released by post_ledger_entry)")
def ledger_type(desk: ApprovalsDesk) -> float:
    return float(desk.request is not None and is_ledger_type(desk.request["type"]))


@feature("request_is_order_type", "1 if the request type is purchase_order / vendor_payment")
@feature("is_order_type", "1 if the request type is purchase_order / vendor_payment (released by release_order)")
def order_type(desk: ApprovalsDesk) -> float:
    return float(desk.request is not None and desk.request["type"] in ORDER_TYPES)


@feature("request_amount_log", "log10(request amount in cents) / 10")
@feature("amount_log", "log10(request amount in cents) / 10")
def amount_log(desk: ApprovalsDesk) -> float:
    return 0.0 if desk.request is None else min(1.0, math.log10(max(1, desk.request["amount"])) / 10)


@feature("request.amount", f"the request amount in cents / {AMOUNT_FULL:.0e}")
def request_amount(desk: ApprovalsDesk) -> float:
    return 0.0 if desk.request is None else _money(desk.request["amount"])


@block([(f"request.type[{t}]", f"1 if the request type is {t}") for t in REQUEST_TYPES])
def request_type(desk: ApprovalsDesk) -> Sequence[float]:
    rtype = None if desk.request is None else desk.request["type"]
    return [float(t == rtype) for t in REQUEST_TYPES]


@block([(f"request.empty[{fld}]", f"1 if the request's {fld} is null or blank") for fld in INFO_FIELDS])
@block([(f"request_empty[{fld}]", f"1 if the request's {fld} is empty (null or blank)") for fld in INFO_FIELDS])
def request_empty(desk: ApprovalsDesk) -> Sequence[float]:
    req = desk.request
    return [0.0] * len(INFO_FIELDS) if req is None else [float(is_missing(req.get(fld))) for fld in INFO_FIELDS]


@feature("order.awaiting_approval", "1 if the request's order has status awaiting_approval")
@feature("order_awaiting_approval", "1 if the request's order has status awaiting_approval")
def order_awaiting(desk: ApprovalsDesk) -> float:
    return float(desk.request is not None and desk.order is not None and desk.order.get("status") == "awaiting_approval")


# -- the cited rule: the band holding the amount --------------------------------------------------
@feature("rule.present", "1 once the cited rule is known: the band of get_rules whose [min_amount, max_amount] holds "
         "the amount (the top band above every band)")
def rule_present(desk: ApprovalsDesk) -> float:
    return float(desk.band() is not None)


@feature("rule.amount_gt_hard_limit", "1 if the amount > the cited rule's hard_limit")
@feature("over_hard_limit", "1 if the request amount is above the band's hard_limit (rule hard_limit: reject)")
def over_hard_limit(desk: ApprovalsDesk) -> float:
    band = desk.band()
    return float(band is not None and desk.request is not None and desk.request["amount"] > band["hard_limit"])


@feature("amount_over_hard_limit_ratio", "(amount - the band's hard_limit) / hard_limit, clipped to [-1, 1] (0 until both read)")
def amount_over_hard_limit_ratio(desk: ApprovalsDesk) -> float:
    band, req = desk.band(), desk.request
    if band is None or req is None:
        return 0.0
    hard = band["hard_limit"]
    return max(-1.0, min(1.0, (req["amount"] - hard) / max(1, hard)))


@feature("rule.required_level", "the cited rule's required_level / 4")
def rule_required_level(desk: ApprovalsDesk) -> float:
    band = desk.band()
    return 0.0 if band is None else _clip(band["required_level"] / 4)


@feature("rule.sod_not_requester", "1 once the band is known (rule requester holds in every band)")
def rule_sod_not_requester(desk: ApprovalsDesk) -> float:
    band = desk.band()
    return float(band is not None and bool(band.get("sod_not_requester", True)))


@feature("rule.sod_not_in_requester_line", "the cited rule's sod_not_in_requester_line flag")
@feature("rule_sod_line", "1 if the band sets sod_not_in_requester_line")
def rule_sod_line(desk: ApprovalsDesk) -> float:
    band = desk.band()
    return float(band is not None and bool(band["sod_not_in_requester_line"]))


@block([(f"rule.requires[{fld}]", f"1 if {fld} is in the cited rule's required_fields") for fld in INFO_FIELDS])
def rule_requires(desk: ApprovalsDesk) -> Sequence[float]:
    band = desk.band()
    return [0.0] * len(INFO_FIELDS) if band is None else [float(fld in band["required_fields"]) for fld in INFO_FIELDS]


@feature("missing_required_field", "1 if a field in the band's required_fields is empty on the request (rule required_fields: hold)")
def missing_required_field(desk: ApprovalsDesk) -> float:
    return float(desk.n_missing_fields() > 0)


@feature("n_missing_fields", "number of required fields empty on the request / 4")
def n_missing_fields(desk: ApprovalsDesk) -> float:
    return min(1.0, desk.n_missing_fields() / 4)


# -- the bands, roles, people and rows by slot ---------------------------------------------------------
_BAND_VALUES = 7 + len(INFO_FIELDS)


@block_family([
    ("band[{i}].present", "1 if get_rules returned a band {i} (bands by min_amount)"),
    ("band[{i}].min_amount", f"band {{i}}'s min_amount in cents / {AMOUNT_FULL:.0e}"),
    ("band[{i}].max_amount", f"band {{i}}'s max_amount in cents / {AMOUNT_FULL:.0e} (1 when null: no bound)"),
    ("band[{i}].hard_limit", f"band {{i}}'s hard_limit in cents / {AMOUNT_FULL:.0e}"),
    ("band[{i}].required_level", "band {i}'s required_level / 4"),
    ("band[{i}].sod_not_requester", "1 when band {i} is present (rule requester holds in every band)"),
    ("band[{i}].sod_not_in_requester_line", "band {i}'s sod_not_in_requester_line flag"),
    *((f"band[{{i}}].requires[{fld}]", f"1 if {fld} is in band {{i}}'s required_fields") for fld in INFO_FIELDS),
], N_BANDS)
def band_slot(desk: ApprovalsDesk, i: int) -> Sequence[float]:
    bands = desk.rules or []
    if i >= min(len(bands), N_BANDS):
        return [0.0] * _BAND_VALUES
    band = bands[i]
    return [1.0, _money(band["min_amount"]), _money(band["max_amount"]), _money(band["hard_limit"]),
            _clip(band["required_level"] / 4), float(bool(band.get("sod_not_requester", True))),
            float(bool(band["sod_not_in_requester_line"])), *(float(fld in band["required_fields"]) for fld in INFO_FIELDS)]


_ROLE_VALUES = len(REQUEST_TYPES) + 2


@block_family([
    *((f"role[{{i}}].covers[{t}]", f"1 if {t} is in role {{i}}'s request_types") for t in REQUEST_TYPES),
    ("role[{i}].amount_limit", f"role {{i}}'s amount_limit in cents / {AMOUNT_FULL:.0e}"),
    ("role[{i}].level", "role {i}'s level / 4 (0: no role slot {i}; roles by id)"),
], N_ROLES)
def role_slot(desk: ApprovalsDesk, i: int) -> Sequence[float]:
    roles = desk.roles or []
    if i >= min(len(roles), N_ROLES):
        return [0.0] * _ROLE_VALUES
    role = roles[i]
    return [*(float(t in role["request_types"]) for t in REQUEST_TYPES), _money(role["amount_limit"]), _clip(role["level"] / 4)]


@block_family([
    ("person[{i}].present", "1 if find_people returned a person slot {i}"),
    ("person[{i}].name_equal", "1 if person {i}'s name equals the brief's approver_name (the same string)"),
    ("person[{i}].department_equal", "1 if person {i}'s department equals the brief's approver_department (the same category)"),
    ("person[{i}].on_file", "1 if person {i} is the person on file (same entity)"),
    ("person[{i}].is_requester", "1 if person {i}'s id is the request's requester_id (same entity)"),
], N_PEOPLE)
def person_slot(desk: ApprovalsDesk, i: int) -> Sequence[float]:
    if i >= min(len(desk.people), N_PEOPLE):
        return (0.0, 0.0, 0.0, 0.0, 0.0)
    person, req = desk.people[i], desk.request
    return (1.0, float(person.get("name") == desk.approver_name), float(person.get("department") == desk.approver_dept),
            float(person["id"] == desk.on_file), float(req is not None and person["id"] == req["requester_id"]))


@feature("reporting_line.has_requester", "1 if one of the on-file person's reporting_line ids is the requester (same entity)")
@feature("requester_in_reporting_line", "1 if the requester's id is in the on-file person's reporting_line")
def on_file_line_has_requester(desk: ApprovalsDesk) -> float:
    file, req = desk.file(), desk.request
    return float(file is not None and req is not None and req["requester_id"] in file["line"])


@block_family([
    ("row[{i}].present", "1 if the person on file has a row slot {i}"),
    ("row[{i}].is_delegation", "1 if row {i} is a delegation received (else a role assignment)"),
    ("row[{i}].holders_read", "1 once the holders now of row {i}'s role were looked up"),
    ("row[{i}].delegator_among_holders", "1 if row {i} is a delegation whose delegator is among the holders now of its "
     "role (looked up; same entity)"),
], N_ROWS)
def row_slot(desk: ApprovalsDesk, i: int) -> Sequence[float]:
    rows = desk.rows()
    if i >= len(rows):
        return (0.0, 0.0, 0.0, 0.0)
    kind, row = rows[i]
    holders = desk.holders.get(row["role_id"])
    delegation = kind == "delegation"
    return (1.0, float(delegation), float(holders is not None),
            float(delegation and holders is not None and any(h["person_id"] == row["delegator_id"] for h in holders)))


@block_family([
    ("row[{i}].covers_request_type", "1 if the request type is in row {i}'s role's request_types"),
    ("row[{i}].level_ge_required", "1 if row {i}'s role level >= the cited rule's required_level"),
    ("row[{i}].limit_ge_amount", "1 if row {i}'s role amount_limit >= the amount"),
    ("row[{i}].cap_below_amount", "1 if row {i} is a delegation whose cap is below the amount"),
    ("row[{i}].from_le_today", "1 if row {i}'s valid_from <= today (the desk clock's date)"),
    ("row[{i}].to_ge_today", "1 if row {i}'s valid_to >= today or is null"),
    ("row[{i}].revoked_by_now", "1 if row {i} has a revoked_at at or before now"),
], N_ROWS)
def row_comparisons(desk: ApprovalsDesk, i: int) -> Sequence[float]:
    rows = desk.rows()
    out = [0.0] * 7
    if i >= len(rows):
        return out
    kind, row = rows[i]
    req, now, band = desk.request, desk.now, desk.band()
    role = desk.roles_by_id().get(row["role_id"])
    if role is not None and req is not None:
        out[0] = float(req["type"] in role["request_types"])
        out[2] = float(role["amount_limit"] >= req["amount"])
        if band is not None:
            out[1] = float(role["level"] >= band["required_level"])
    if kind == "delegation" and req is not None:
        out[3] = float(row.get("cap") is not None and row["cap"] < req["amount"])
    if now is not None:
        day = today(now)
        out[4] = float(row.get("valid_from") is None or row["valid_from"] <= day)
        out[5] = float(row.get("valid_to") is None or day <= row["valid_to"])
        out[6] = float(row.get("revoked_at") is not None and row["revoked_at"] <= now)
    return out


_ROW_VALUES = N_ROLES + 4


@block_family([
    *((f"row[{{i}}].role[{r}]", f"1 if row {{i}}'s role is role slot {r} (same entity)") for r in range(N_ROLES)),
    ("row[{i}].valid_from", f"row {{i}}'s valid_from - today, in days / {DAYS_FULL:.0f} (-1 when null)"),
    ("row[{i}].valid_to", f"row {{i}}'s valid_to - today, in days / {DAYS_FULL:.0f} (1 when null)"),
    ("row[{i}].revoked_at", f"row {{i}}'s revoked_at - now, in days / {DAYS_FULL:.0f} (1 when null)"),
    ("row[{i}].cap", f"row {{i}}'s cap in cents / {AMOUNT_FULL:.0e} (1 when null or an assignment)"),
], N_ROWS)
def row_values(desk: ApprovalsDesk, i: int) -> Sequence[float]:
    rows = desk.rows()
    out = [0.0] * _ROW_VALUES
    if i >= len(rows):
        return out
    kind, row = rows[i]
    # the role's slot among the listed roles (the last one, should a repeated list_roles list it twice)
    slot = max((r for r, role in enumerate((desk.roles or [])[:N_ROLES]) if role["id"] == row["role_id"]), default=None)
    if slot is not None:
        out[slot] = 1.0
    now = desk.now
    if now is not None:
        day = today(now)
        vf, vt, rv = row.get("valid_from"), row.get("valid_to"), row.get("revoked_at")
        out[N_ROLES] = -1.0 if vf is None else _clip(_days(vf, day) / DAYS_FULL)
        out[N_ROLES + 1] = 1.0 if vt is None else _clip(_days(vt, day) / DAYS_FULL)
        out[N_ROLES + 2] = 1.0 if rv is None else _clip(_days(rv, now) / DAYS_FULL)
    out[N_ROLES + 3] = _money(row.get("cap") if kind == "delegation" else None)
    return out


# -- the approver: separation of duties (conclusions) ------------------------------------------------
@feature("approver_resolved", "1 once find_people returned exactly the person with the brief's approver_name and approver_department")
def approver_resolved(desk: ApprovalsDesk) -> float:
    return float(desk.approver_id is not None)


@feature("approver_not_found", "1 if find_people returned no person with that name and department")
def approver_not_found(desk: ApprovalsDesk) -> float:
    return float(desk.find_done and desk.approver_id is None)


@feature("person_read", "1 once get_person returned the approver's reporting line", approver_known)
def person_read(desk: ApprovalsDesk) -> float:
    return float(desk.approver_file() is not None)


@feature("approver_delegations_read", "1 once lookup_delegations returned every delegation the approver received", approver_known)
def approver_delegations_read(desk: ApprovalsDesk) -> float:
    return float(desk.approver_delegations() is not None)


@feature("approver_is_requester", "1 if the resolved approver's id is the request's requester_id", approver_known)
def approver_is_requester(desk: ApprovalsDesk) -> float:
    return float(desk.is_self())


@feature("requester_in_line", "1 if the requester is in the approver's reporting_line (get_person)", approver_known)
def requester_in_line(desk: ApprovalsDesk) -> float:
    line, req = desk.approver_line(), desk.request
    return float(req is not None and line is not None and req["requester_id"] in line)


@feature("line_breach", "1 if the band sets sod_not_in_requester_line and the requester is in the approver's reporting_line", approver_known)
def line_breach(desk: ApprovalsDesk) -> float:
    return float(desk.line_breach())


@feature("sod_breach", "1 if approver_is_requester or line_breach (rules requester, reporting_line: the approver may not decide)", approver_known)
def sod_breach(desk: ApprovalsDesk) -> float:
    return float(desk.sod_breach())


@feature("sod_checked", "1 once the separation-of-duties facts are known: request, band and approver read, and the "
         "reporting line read unless the band does not set sod_not_in_requester_line (or the approver is the requester)", approver_known)
def sod_checked(desk: ApprovalsDesk) -> float:
    return float(desk.sod_checked())


@feature("sod_clear", "1 if sod_checked and not sod_breach", approver_known)
def sod_clear(desk: ApprovalsDesk) -> float:
    return float(desk.sod_checked() and not desk.sod_breach())


# -- the approver's authority (conclusions) ----------------------------------------------------------
@feature("n_assignments", "role assignments of the approver (any window, get_person) / 5", approver_known)
def n_assignments(desk: ApprovalsDesk) -> float:
    return min(1.0, len(desk.approver_assignments() or []) / 5)


@feature("assignment_candidate_now", "1 if an assignment of the approver in its window now has a role covering the request type", approver_known)
def assignment_candidate_now(desk: ApprovalsDesk) -> float:
    req = desk.request
    if req is None:
        return 0.0
    roles = desk.roles_by_id()
    return float(any(desk.in_window(rh) and req["type"] in roles.get(rh["role_id"], {}).get("request_types", ())
                     for rh in desk.approver_assignments() or []))


@feature("n_delegations_inactive", "delegations received by the approver not in their window or revoked now / 5", approver_known)
def n_delegations_inactive(desk: ApprovalsDesk) -> float:
    return min(1.0, (len(desk.approver_delegations() or []) - len(desk.approver_delegations_now() or [])) / 5)


@feature("n_delegations_received", "delegations received by the approver in their window and not revoked now / 5", approver_known)
def n_delegations_received(desk: ApprovalsDesk) -> float:
    return min(1.0, len(desk.approver_delegations_now() or []) / 5)


@feature("blocking_fact_found", "1 if the approver may not decide and the fact that blocks them is known (what escalate cites)")
def blocking_fact_found(desk: ApprovalsDesk) -> float:
    return float(desk.conclusion() == "escalate" and desk.blocking() is not None)


@block([
    ("n_candidate_roles", "number of candidate roles: the roles of the delegations the approver received, whose holders "
     "rule delegator_holds reads (lookup slots, by role id) / 5"),
    ("candidates_checked", "candidate roles whose holders were looked up / 5"),
    ("candidates_unchecked", "candidate roles not yet looked up / 5"),
    ("all_candidates_checked", "1 if the holders of every candidate role were looked up (and the delegations were read)"),
], approver_known)
def candidates(desk: ApprovalsDesk) -> Sequence[float]:
    cands = desk.candidates()
    checked = sum(1 for r in cands if r in desk.holders)
    return (len(cands) / N_CANDIDATES, checked / N_CANDIDATES, (len(cands) - checked) / N_CANDIDATES,
            float(desk.approver_delegations() is not None and checked == len(cands)))


@feature("holds_candidate_role", "1 if an assignment of the approver passes every authority rule (role_type, role_level, "
         "role_limit, window)", approver_known)
def holds_candidate_role(desk: ApprovalsDesk) -> float:
    failures = desk.failures()[0]
    return float(any(not failures.get(rh["id"], ["?"]) for rh in desk.approver_assignments() or []))


@feature("delegation_candidate_role", "1 if a delegation received, in its window and not revoked, is for a role covering the "
         "type with level and amount limit enough", approver_known)
def delegation_candidate_role(desk: ApprovalsDesk) -> float:
    return float(bool(desk.sufficient_delegations()))


@feature("delegation_capped_below", "1 if such a delegation has a cap below the amount", approver_known)
def delegation_capped_below(desk: ApprovalsDesk) -> float:
    req = desk.request
    return float(req is not None and any(d["cap"] is not None and d["cap"] < req["amount"] for d in desk.sufficient_delegations()))


@feature("delegation_unconfirmed", "1 if a delegation received awaits the lookup of its role's holders", approver_known)
def delegation_unconfirmed(desk: ApprovalsDesk) -> float:
    return float(any(d["role_id"] not in desk.holders for d in desk.approver_delegations() or []))


@feature("delegation_usable", "1 if a delegation received passes every authority rule (its delegator among the role's holders)", approver_known)
def delegation_usable(desk: ApprovalsDesk) -> float:
    failures = desk.failures()[0]
    return float(any(not failures.get(d["id"], ["?"]) for d in desk.approver_delegations() or []))


@feature("authority_found", "1 if holds_candidate_role or delegation_usable (an authority id to cite)")
def authority_found(desk: ApprovalsDesk) -> float:
    return float(bool(authorising(desk.failures()[0])))


@feature("authority_search_complete", "1 if authority_found, or the authority rules of every assignment and delegation are known")
def authority_search_complete(desk: ApprovalsDesk) -> float:
    return float(desk.search_complete())


@feature("no_usable_authority", "1 if the search is complete and no authority was found (rule escalation)")
def no_usable_authority(desk: ApprovalsDesk) -> float:
    return float(desk.no_usable_authority())


# -- the procedure's conclusion from the facts read so far (at most one is 1) ----------------------------
_CONCLUSIONS = ("reject", "hold", "escalate", "proceed", None)


@block([
    ("procedure_reject", "1 if sod_clear, authority_found and over_hard_limit (rule hard_limit)"),
    ("procedure_hold", "1 if sod_clear, authority_found, not over_hard_limit and missing_required_field (rule required_fields)"),
    ("procedure_escalate", "1 if request and band read and sod_breach, or no_usable_authority, or find_people found "
     "no such approver (rule escalation)"),
    ("procedure_proceed", "1 if sod_clear, authority_found, within the hard limit and no required field missing (rule required_fields)"),
    ("procedure_open", "1 if none of the four procedure_* conclusions holds yet (more reads are needed)"),
])
def procedure(desk: ApprovalsDesk) -> Sequence[float]:
    conclusion = desk.conclusion()
    return [float(conclusion == c) for c in _CONCLUSIONS]


__all__ = ["AMOUNT_FULL", "DAYS_FULL", "FEATURES"]
