"""The approvals domain: an approval desk deciding pending requests on behalf of named approvers."""

from __future__ import annotations

from typing import Any

from backoffice.envs.approvals.generator import DEFECT_TAGS, generate
from backoffice.envs.approvals.tools import toolkit
from backoffice.envs.core import BackofficeEnv, Domain, Episode

FAILURE_CODES = (
    "invalid_approver", "self_approval", "wrong_outcome", "side_effect_before_decision",
    "basis_missing_or_wrong", "expired_delegation_used", "over_limit", "forbidden_write",
)


def _grade(episode: Episode) -> dict[str, Any]:
    # imported lazily: the grader imports this package's authority module
    from backoffice.graders.approvals import grade

    return grade(episode)


DOMAIN = Domain(
    name="approvals",
    title="Approvals",
    prefix="APR",
    toolkit=toolkit,
    generate=generate,
    grade=_grade,
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="1",
    sizes={"train": 480, "heldout": 240},
    default_max_steps=40,
    guardrail_code="forbidden_write",
)


class ApprovalsEnv(BackofficeEnv):
    """An approval desk: record who approves a pending request, or route it, and release it.

    ## Description
    A colleague asks the desk to record that a named person approves a pending request
    (refund, credit adjustment, write-off, expense claim, purchase order or vendor payment).
    The agent must check, at decision time, that the person may approve it: a role covering the
    request type with enough level and amount limit, held directly or through a delegation that
    is in effect (window, revocation, cap), separation of duties (not the requester, not in the
    requester's reporting line when the rule says so), the rule's hard limit and required
    fields. It then records ``proceed`` (and only then posts the ledger entry or releases the
    order), ``hold``, ``reject``, or escalates to the role the rule requires, citing the rule and
    the authority it relied on.

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

    ## Episode End
    Terminates on ``submit``; truncates at ``max_steps`` (default 40).

    ## Arguments
    ``split`` (train / heldout / generated), ``reward_mode`` (sparse / shaped), ``max_steps``,
    ``trace_path``.

    ## Tools
    list_pending, get_request, get_rules, list_roles, find_people, get_person,
    lookup_role_holders, lookup_delegations, record_decision, escalate, post_ledger_entry,
    release_order, submit.

    ## Grade
    ``approver_valid``, ``outcome_match``, ``side_effects``, ``basis_cited``, ``outcome``, plus
    the checks, ``pass``, ``score``, ``failure_codes`` and ``process_metrics``.

    ## Failure codes
    invalid_approver, self_approval, wrong_outcome, side_effect_before_decision,
    basis_missing_or_wrong, expired_delegation_used, over_limit, forbidden_write.

    ## Version History
    * v0: initial release (generator version 1).
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "ApprovalsEnv", "FAILURE_CODES"]
