"""The approvals tiers as declarations over the registries (:mod:`.features`, :mod:`.actions`).

- ``conclusions``: the procedure's conclusions are features (which outcome the rule document
  reaches, whose authority is found, what blocks); the agent learns which reads to make, what to
  cite and when to stop.
- ``facts``: every one-step comparison (the cited rule's values against the request, each
  assignment or delegation row against each authority rule); which person's file to open,
  which row to cite and the outcome are the agent's.
- ``raw``: one-hot categories and values (amounts, levels, dates as days from the desk clock);
  every comparison is the agent's.

A feature or action name is one fact or call in every tier that shows it. Two actions that
tiers of an earlier version showed under one name (``lookup_role_holders[i]``: a candidate role,
a row's role or a role slot; ``lookup_delegations``: the approver's or the person's on file) are
registered apart and shown under the tier's name (:func:`shown_as`); so are two features of
``conclusions`` (``FEATURES.shown_as``): ``rules_read`` (the band is known, not only the rules) and
``delegations_read`` (the approver's delegations, not the on-file person's).
The shipped models' ``catalog_hash`` holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from backoffice.envs.approvals.tables import INFO_FIELDS, REQUEST_TYPES
from backoffice.training.catalog.features import Action
from backoffice.training.catalog.tier import Hyper, Tier, two_envs
from backoffice.training.domains.approvals.catalog.actions import ACTIONS
from backoffice.training.domains.approvals.catalog.desk import N_BANDS, N_CANDIDATES, N_PEOPLE, N_ROLES, N_ROWS, OUTCOMES
from backoffice.training.domains.approvals.catalog.feature_policies import FactsProcedure, RawProcedure, conclusions_policy
from backoffice.training.domains.approvals.catalog.features import FEATURES


def slots(family: str, n: int, fields: Iterable[str]) -> tuple[str, ...]:
    """``family[i].field`` for each slot ``i < n``, slot-major (every field of slot 0, then 1 ...)."""
    fields = tuple(fields)
    return tuple(f"{family}[{i}].{f}" for i in range(n) for f in fields)


def shown_as(pattern: str, registered: str, n: int | None = None) -> tuple[Action, ...]:
    """The registry's action(s) ``registered`` shown under ``pattern`` (``{i}``: the slot)."""
    if n is None:
        return (ACTIONS.shown_as(pattern, registered),)
    return tuple(ACTIONS.shown_as(pattern.format(i=i), registered.format(i=i)) for i in range(n))



def family(pattern: str, n: int) -> tuple[str, ...]:
    return tuple(pattern.format(i=i) for i in range(n))


#: the desk's progress, shown alike by the facts and raw tiers
_PROGRESS = ("request_read", "rules_read", "roles_read", "people_read", "person_on_file", "delegations_read",
             "decision_recorded", "decided_proceed", "downstream_done", "last_write_error")
_PERSON = ("present", "name_equal", "department_equal", "on_file", "is_requester")
_REQUIRES = tuple(f"requires[{f}]" for f in INFO_FIELDS)

#: shared by every tier. Escalating right after the rules is correct about half the time and
#: ends the episode early; with less entropy and shorter rollouts the policy settles there
#: before a proceed (about ten reads, then the release) is ever completed.
_HYPER = {
    "ent_coef": Hyper(0.1, "keep exploring past the early escalation that is right about half the time"),
    "n_steps": Hyper(128, "8 x 128-step rollouts: long enough to finish a proceed and its release"),
}

CONCLUSIONS = Tier(
    name="conclusions",
    features=(
        "request_read", FEATURES.shown_as("rules_read", "rule.present"), "roles_read", "approver_resolved", "approver_not_found", "person_read",
        FEATURES.shown_as("delegations_read", "approver_delegations_read"), "is_ledger_type", "is_order_type", "amount_log", "amount_over_hard_limit_ratio",
        "over_hard_limit", "missing_required_field", "n_missing_fields", "approver_is_requester", "rule_sod_line",
        "requester_in_line", "line_breach", "sod_breach", "sod_checked", "sod_clear", "n_assignments",
        "assignment_candidate_now", "n_delegations_inactive", "blocking_fact_found", "n_candidate_roles",
        "candidates_checked", "candidates_unchecked", "all_candidates_checked", "holds_candidate_role",
        "n_delegations_received", "delegation_candidate_role", "delegation_capped_below", "delegation_unconfirmed",
        "delegation_usable", "authority_found", "authority_search_complete", "no_usable_authority",
        "procedure_reject", "procedure_hold", "procedure_escalate", "procedure_proceed", "procedure_open",
        "decision_recorded", "decided_proceed", "decided_other", "downstream_done", "downstream_due", "last_write_error",
    ),
    actions=(
        "get_request", "get_rules", "list_roles", "find_people", "get_person",
        *shown_as("lookup_role_holders[{i}]", "lookup_candidate_holders[{i}]", N_CANDIDATES),
        *shown_as("lookup_delegations", "lookup_approver_delegations"),
        "decide_reject", "decide_hold", "escalate", "decide_proceed", "post_ledger_entry", "release_order", "submit",
    ),
    hyperparams=_HYPER,
    max_steps=30,
    feature_policy=conclusions_policy,
)

_DECISIONS = tuple(name for outcome in OUTCOMES for name in family(f"decide_{outcome}[{{i}}]", N_ROWS))
_ESCALATIONS = ("escalate_cite_request", "escalate_cite_requester", "escalate_cite_approver", *family("escalate_cite[{i}]", N_ROWS))
_ENDS = ("post_ledger_entry", "release_order", "submit")

FACTS = Tier(
    name="facts",
    features=(
        *_PROGRESS,
        "request_is_ledger_type", "request_is_order_type", "request_amount_log", "order_awaiting_approval",
        *(f"request_empty[{f}]" for f in INFO_FIELDS),
        "rule.present", "rule.amount_gt_hard_limit", "rule.required_level", "rule.sod_not_requester",
        "rule.sod_not_in_requester_line", *(f"rule.{r}" for r in _REQUIRES),
        *slots("person", N_PEOPLE, _PERSON),
        "requester_in_reporting_line",
        *slots("row", N_ROWS, ("present", "is_delegation", "covers_request_type", "level_ge_required", "limit_ge_amount",
                               "cap_below_amount", "from_le_today", "to_ge_today", "revoked_by_now", "holders_read",
                               "delegator_among_holders")),
    ),
    actions=(
        "get_request", "get_rules", "list_roles", "find_people", *family("get_person[{i}]", N_PEOPLE), "lookup_delegations",
        *shown_as("lookup_role_holders[{i}]", "lookup_row_holders[{i}]", N_ROWS),
        *_DECISIONS, *_ESCALATIONS, *_ENDS,
    ),
    hyperparams={
        **_HYPER,
        "timesteps": Hyper(600_000, "the slot-factored policy reaches its plateau within it"),
        "policy": Hyper("slots", "one scorer shared by the rows and one by the people: what is learnt of a row holds in every slot"),
        "train_split": Hyper("generated", "fresh generated tasks: on the released train tasks the policy fits those tasks"),
    },
    max_steps=30,
    feature_policy=FactsProcedure,
    slot_actions={"get_person": "person", "lookup_role_holders": "row", "escalate_cite": "row",
                  "decide_reject": "row", "decide_hold": "row", "decide_proceed": "row"},
)

RAW = Tier(
    name="raw",
    features=(
        *_PROGRESS,
        "request.amount", *(f"request.type[{t}]" for t in REQUEST_TYPES), *(f"request.empty[{f}]" for f in INFO_FIELDS),
        "order.awaiting_approval",
        *slots("band", N_BANDS, ("present", "min_amount", "max_amount", "hard_limit", "required_level", "sod_not_requester",
                                 "sod_not_in_requester_line", *_REQUIRES)),
        *slots("role", N_ROLES, (*(f"covers[{t}]" for t in REQUEST_TYPES), "amount_limit", "level")),
        *slots("person", N_PEOPLE, _PERSON),
        "reporting_line.has_requester",
        *slots("row", N_ROWS, ("present", "is_delegation", *(f"role[{r}]" for r in range(N_ROLES)), "valid_from",
                               "valid_to", "revoked_at", "cap", "holders_read", "delegator_among_holders")),
    ),
    actions=(
        "get_request", "get_rules", "list_roles", "find_people", *family("get_person[{i}]", N_PEOPLE), "lookup_delegations",
        *family("lookup_role_holders[{i}]", N_ROLES), *_DECISIONS, *_ESCALATIONS, *_ENDS,
    ),
    hyperparams={**_HYPER, **two_envs(512)},
    max_steps=30,
    feature_policy=RawProcedure,
)

__all__ = ["CONCLUSIONS", "FACTS", "RAW", "shown_as", "slots"]
