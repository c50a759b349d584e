"""The approvals domain: an approval desk deciding pending requests on behalf of named approvers."""

from __future__ import annotations

from backoffice.envs.approvals.generator import DEFECT_TAGS, generate
from backoffice.envs.approvals.tables import PROCEDURE, TABLES
from backoffice.envs.approvals.tools import toolkit
from backoffice.envs.core import BackofficeEnv, Domain, lazy

FAILURE_CODES = (
    "invalid_approver", "self_approval", "wrong_outcome", "side_effect_before_decision",
    "basis_missing_or_wrong", "expired_delegation_used", "over_limit", "extra_decision", "forbidden_write",
)

#: The rules of the desk procedure, as ``get_rules`` shows them (``tables.PROCEDURE``): one entry
#: per rule the agent applies; ``training.policies.approvals.RULE_POLICIES`` holds, per rule, the
#: oracle ignoring it (each changes the right end state in >= 20 tasks of each split).
RULES = tuple(rid for rid, _, _ in PROCEDURE)


DOMAIN = Domain(
    name="approvals",
    policies="backoffice.training.policies.approvals",
    catalog="backoffice.training.catalog.approvals:ApprovalsCatalog",
    title="Approvals",
    prefix="APR",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("backoffice.graders.approvals:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="3",
    sizes={"train": 480, "heldout": 240},
    default_max_steps=40,
    guardrail_code="forbidden_write",
    rules=RULES,
    rule_tools=("get_rules",),
    tables=TABLES,
)


class ApprovalsEnv(BackofficeEnv):
    """An approval desk: record who approves a pending request, or route it, and release it.

    ## Description
    A colleague asks the desk to record that a named person approves a pending request
    (refund, credit adjustment, write-off, expense claim, purchase order or vendor payment).
    The agent must first check, at decision time, that the person may decide on it: a role
    covering the request type with enough level and amount limit, held directly or through a
    delegation that is in effect (window, revocation, cap), and separation of duties (not the
    requester, not in the requester's reporting line when the rule says so). If they may not, it
    escalates to the role the rule requires, citing the rule and the fact that blocks the
    approver (the request, the requester, the delegation not in effect, the assignment or
    delegation that falls short). If they may, it records their decision citing the rule and
    their authority: ``reject`` above the rule's hard limit, ``hold`` when a required field is
    empty, else ``proceed`` (and only then posts the ledger entry or releases the order).
    Exactly one decision (or escalation) per request.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (or its JSON string), see ``ToolCallSpace``.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after reset, the tool result after each step.

    ## Rewards
    ``sparse``: the pure grade's score on the terminal step. ``shaped``: a small cost per call,
    a larger one per rejected call, plus half the score and half the pass bit at the end.

    ## Starting State
    A released world snapshot: about 27 people in a reporting hierarchy, nine roles, rules for
    six request types, role assignments, delegations, a pending queue, history, and the clock.
    A generated task takes a ``scale`` (``reset(options={"generate": n, "scale": k})``): the
    same task in an organisation about k times larger (extra teams with their own people,
    requests, history, and the other desks' roles, assignments and delegations), whose extra
    rows never change the answer.

    ## Episode End
    Terminates on ``submit``; truncates at ``max_steps`` (default 40).

    ## Arguments
    ``split`` (train / heldout / generated), ``reward_mode`` (sparse / shaped), ``max_steps``,
    ``trace_path``.

    ## Tools
    list_pending, get_request, get_rules, list_roles, find_people, get_person,
    lookup_role_holders, lookup_delegations, record_decision, escalate, post_ledger_entry,
    release_order, submit. The list tools (list_pending, list_roles, find_people,
    lookup_role_holders) are paginated in id order: ``limit`` rows per call (default 50, at most
    200) and ``next_cursor``, passed back as ``cursor`` for the next page (null on the last).

    ## Grade
    ``approver_valid``, ``outcome_match``, ``side_effects``, ``basis_cited``, ``outcome``, plus
    the checks, ``pass``, ``score``, ``failure_codes`` and ``process_metrics``. Work checks
    (earn the score): ``outcome_match``, ``basis_cited``, ``downstream_released`` (proceed
    tasks). Gates (cap the score at 0.25 when they fail): ``approver_valid``,
    ``single_decision``, ``side_effects``, ``guardrail``.

    ## Failure codes
    invalid_approver, self_approval, wrong_outcome, side_effect_before_decision,
    basis_missing_or_wrong, expired_delegation_used, over_limit, extra_decision (more than one
    decision or escalation on the request), forbidden_write.

    ## Version History
    * v0: initial release (generator version 1).
    * v0, seeds v1 (generator version 2): the approver is checked first and every decision
      names them and cites their authority; escalations cite the blocking fact; every decision
      on the request is graded (extra_decision); outcome classes rebalanced with decoys.
    * v0, seeds v1: list tools paginate with ``limit`` / ``cursor`` (``list_pending`` in id
      order, replacing its ``page`` argument); generated worlds take a ``scale``; released
      tasks unchanged.
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "ApprovalsEnv", "FAILURE_CODES", "RULES"]
