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
#: per rule the agent applies; ``training.domains.approvals.policies.RULE_POLICIES`` holds, per rule, the
#: oracle ignoring it (each changes the right end state in >= 20 tasks of each split).
RULES = tuple(rid for rid, _, _ in PROCEDURE)


DOMAIN = Domain(
    name="approvals",
    policies="backoffice.training.domains.approvals.policies",
    catalog="backoffice.training.domains.approvals.catalog:CATALOG",
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
    # the grade reads the calls that wrote (decisions, escalations, releases), never a read alone
    grade_reads=frozenset(),
    tables=TABLES,
)


class ApprovalsEnv(BackofficeEnv):
    """An approval desk: record who approves a pending request, or route it, and release it.

    ## Description
    A colleague asks the desk to record that a named person approves a pending request
    (refund, credit adjustment, write-off, expense claim, purchase order or vendor payment).
    ``get_rules`` returns the desk's rule document: seventeen rules, one check each, and the
    request type's amount bands. The agent finds the band holding the amount, then checks, at
    decision time, that the named person (name *and* department: namesakes work elsewhere) may
    decide: not the requester, not below the requester when the band says so, and one of their
    role assignments or delegations received passing every authority rule (the role covers the
    type, is senior enough, its limit covers the amount; in effect today; not revoked; the
    delegator still holds the role; the cap covers the amount). If they may not, it escalates to
    the band's required role citing the band and the blocking fact (the request, the requester,
    or the one assignment or delegation that fails exactly one rule). If they may, it records
    their decision citing the band and their authority: ``reject`` above the hard limit, ``hold``
    when a required field is empty, else ``proceed`` (and only then posts the ledger entry or
    releases the order). Exactly one decision (or escalation) per request.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (or its JSON string), see ``ToolCallSpace``.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after reset, the tool result after each step.
    Money is integer cents everywhere (brief, rules, tools).

    ## Rewards
    ``sparse``: the pure grade's score on the terminal step. ``shaped``: a small cost per call,
    a larger one per rejected call, plus half the score and half the pass bit at the end.

    ## Starting State
    A released world snapshot: 27 people in a reporting hierarchy plus the approver's one or two
    namesakes, nine roles, three bands for each of six request types, role assignments,
    delegations, a pending queue, history, and the clock. The amount is drawn alike for every
    outcome and the world (limits, bands, hard limits) around it; every request has one or two
    empty fields, required or not by its type's bands; every approver has three assignments and
    three delegations received, the authorising (or blocking) one among near misses. A
    generated task takes a ``scale`` (``reset(options={"generate": n, "scale": k})``): the same
    task in an organisation about k times larger (extra teams with their own people, requests,
    history, and the other desks' roles, assignments and delegations), whose extra rows never
    change the answer.

    ## Episode End
    Terminates on ``submit``; truncates at ``max_steps`` (default 40).

    ## Arguments
    ``split``, ``reward_mode`` (sparse / shaped / progress), ``call_cost``, ``gate_cap``,
    ``max_steps``, ``trace_path``, ``render_mode``, ``judge``, ``release``: as every backoffice
    env (:class:`~backoffice.envs.core.env.BackofficeEnv`).

    ## Tools
    list_pending, get_request, get_rules, list_roles, find_people, get_person,
    lookup_role_holders, lookup_delegations, record_decision, escalate, post_ledger_entry,
    release_order, submit. ``get_rules(request_type)`` returns the rule document whole
    (``{"rules": [{id, title, text}], "tables": {"bands": [...]}}``, bands in id order). The list
    tools (list_pending, list_roles, find_people, lookup_role_holders, lookup_delegations) are
    paginated in id order: ``limit`` rows per call (default 50, at most 200), ``next_cursor``
    (passed back as ``cursor`` for the next page; null on the last) and ``total``.

    ## Grade
    ``approver_valid``, ``outcome_match``, ``side_effects``, ``basis_cited``, ``outcome``, plus
    the checks, ``pass``, ``score``, ``failure_codes`` and ``process_metrics``. Work checks
    (earn the score): ``outcome_match`` (an escalation must go to the band's
    ``required_role_id``), ``basis_cited`` (exactly what the rules cite_authority and
    blocking_fact name: the band and an authorising entry, or the band and the blocking fact;
    nothing else), ``downstream_released`` (proceed tasks). Gates (cap the score at 0.25 when
    they fail): ``approver_valid``, ``single_decision``, ``side_effects``, ``guardrail``.

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
    * v0, seeds v2 (generator version 3): ``get_rules`` returns the one rule-document shape
      (17 rules, each binding in >= 20 tasks of each split; the bands, ids ``BAND-*``, in
      ``tables``); ``lookup_delegations`` is paginated (``direction`` received / given, one
      list ``delegations``) and every list tool returns ``total``; money in cents in the brief;
      the blocking fact of an approver without authority is the assignment or delegation that
      fails exactly one authority rule; the grade accepts exactly the basis the rules name;
      the amount, the empty fields and the approver are drawn alike for every outcome, and the
      authorising or blocking entry stands anywhere among near misses.
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "ApprovalsEnv", "FAILURE_CODES", "RULES"]
