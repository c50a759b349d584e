"""The schedules domain: premium instalment schedules of insurance policies."""

from __future__ import annotations

from backoffice.envs.core import BackofficeEnv, Domain, lazy
from backoffice.envs.schedules.generator import DEFECT_TAGS, generate
from backoffice.envs.schedules.tables import RULE_IDS, TABLES
from backoffice.envs.schedules.tools import toolkit

GUARDRAIL_CODE = "collateral_change"
FAILURE_CODES = (
    "rounding_drift", "outstanding_wrong", "prior_not_superseded", "paid_instalment_altered", "wrong_due_dates",
    "approval_missing", "commit_before_approval", "collateral_change", "reminder_mismatch", "mandate_not_updated",
    "unneeded_approval", "extra_schedule", "reminder_on_cancelled",
)

#: the documented rules that decide a task's answer (each proven to bind by a rule policy)
RULES = RULE_IDS

DOMAIN = Domain(
    name="schedules",
    policies="backoffice.training.domains.schedules.policies",
    catalog="backoffice.training.domains.schedules.catalog:CATALOG",
    title="Schedules",
    prefix="SCH",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("backoffice.graders.schedules:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="5",
    sizes={"train": 490, "heldout": 420},
    default_max_steps=60,
    guardrail_code=GUARDRAIL_CODE,
    rules=RULES,
    rule_tools=("get_rules",),
    # commit_before_approval is anchored on a commit_schedule call, refused ones included
    grade_reads=frozenset({"commit_schedule"}),
    tables=TABLES,
)


class SchedulesEnv(BackofficeEnv):
    """Premium instalment schedules: a customer asks to change how they pay an insurance premium.

    ## Description
    A back-office agent works one customer change request on a policy's premium instalment
    schedule: annual or quarterly to monthly, to quarterly, a split of the remaining premium
    into N parts, a payment holiday (deferral) or a new collection day. The outstanding premium
    is the annual premium minus every paid instalment (in any schedule version); paid
    instalments are never touched. A rules document, drawn per portfolio (per task), says where
    remainder cents go, how a collection day of 29-31 falls in shorter months, the minimum
    instalment, the reminder lead time, what happens to a reminder whose date has passed, and
    when (and by whom) approval is required: three triggers (a change that postpones collection,
    more than N instalments, fewer than N days' notice) checked in a drawn order, each naming a
    role. The decision a task holds (its ``outcome_class``) is the approval route (``approval``
    or ``no_approval``) with where the new first instalment's reminder goes (``reminder_at_lead``,
    ``reminder_today``, ``no_reminder``): drawn apart from the world, the portfolio's parameters
    fitted to it, so only the rules read with the request and the book tell it. The policy's
    schedule history holds superseded versions and abandoned drafts around the active one, its
    reminders sent and cancelled ones beside the scheduled; the book holds other customers'
    policies, some of them lookalikes (same surname, address and dates).

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (a dict or its JSON string), see Tools.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after ``reset`` (instructions with today's date and
    the procedure, allowed tools and ``params`` ``request_id`` / ``policy_id`` / ``today``), then
    each tool's result
    (``{"status": "ok", "result": ...}`` or ``{"status": "error", "code", "message"}``).

    ## Rewards
    ``sparse`` (default): the pure grade's score on the terminal step, 0 before. ``shaped``:
    -0.01 per call, -0.05 per rejected call, plus 0.5 * score + 0.5 * pass at the end.

    ## Starting State
    A released task (``options={"task_id": "SCH-T0000"}``), one drawn from the split by seed, or
    a freshly generated one (``options={"generate": n}``; with ``"scale": k`` the same task in a
    book about k times larger: k times the other customers, their schedules, reminders, mandates,
    approvals and change requests, none of which the answer depends on). The clock starts on the
    day the request was received.

    ## Episode End
    Terminates on a successful ``submit``; truncates at ``max_steps`` (default 60).

    ## Arguments
    ``split``, ``reward_mode`` (sparse / shaped / progress), ``call_cost``, ``gate_cap``,
    ``max_steps``, ``trace_path``, ``render_mode``, ``judge``, ``release``: as every backoffice
    env (:class:`~backoffice.envs.core.env.BackofficeEnv`).

    ## Tools
    Reads: get_request, get_policy (the policy and its schedule versions), get_rules, get_schedule,
    list_instalments, get_instruction, list_reminders, list_approvals. Writes:
    create_draft_schedule, add_instalment, remove_instalment, request_approval(policy_id, role,
    reason), wait (advances the clock to the approver's decision), commit_schedule (structured
    error ``approval_required`` while a needed approval is not granted), supersede_schedule,
    cancel_instalments, update_instruction, create_reminder, cancel_reminder. Terminal: submit.
    ``allowed_tools`` is the same full set in every task (what a clerk is given never hints at the
    answer). get_rules returns the one rule-document shape, whole: ``{"rules": [{"id", "title",
    "text", "value"}], "tables": {"approval_roles", "request_kinds", "statuses"}}``, one entry per
    rule of ``DOMAIN.rules``. Every list tool pages the same way: ``limit`` (default 50, at most
    200), ``cursor`` (the previous page's ``next_cursor``), every filter optional, rows in id
    order, ``next_cursor`` and ``total`` in the result.

    ## Grade
    The answer key's ``checks`` evaluated on diff + trace, one pass/fail each (``checks`` and
    ``check_results``), over the whole trail of writes. Work checks (the score is the share
    passed): ``sch.amounts`` / ``sch.due_dates`` (row_equals on what the customer will be
    charged: the new instalments, and no prior instalment left due beside them),
    ``sch.prior_superseded`` (status_is), ``sch.reminders`` (row_equals on the scheduled
    reminders: due date, amount and send date of the new first instalment, which must be an
    instalment the episode created; a gate when no reminder is expected and none was scheduled),
    ``sch.mandate_day`` (field_equals), ``sch.approval_requested`` (tool_called with the expected
    role). Gates (earn nothing, a failed one caps the score at 0.25): ``sch.total_is_outstanding``
    (what the customer will be charged adds up to the outstanding premium, as before any change),
    ``sch.paid_untouched``, ``sch.no_commit_before_approval`` (tool_not_called before the wait that
    follows the required approval request), ``sch.approvals_exact`` (exactly the needed approval
    request, or none), ``sch.single_new_version`` (one new schedule version at most),
    ``sch.reminders_live`` (no scheduled reminder on a cancelled or changed instalment),
    ``sch.other_accounts_unchanged`` (no_change outside the target account) and the guardrail.
    Fields: ``request_kind``, ``approval_required``, ``check_results``, ``new_instalments``,
    ``new_total``.

    ## Failure codes
    rounding_drift, outstanding_wrong, prior_not_superseded (also: a prior instalment left due
    beside the new ones), paid_instalment_altered, wrong_due_dates, approval_missing,
    commit_before_approval, collateral_change, reminder_mismatch, mandate_not_updated,
    unneeded_approval (an approval request when none is needed, to another role than the first
    applying trigger's, or a second one), extra_schedule (a second draft or version),
    reminder_on_cancelled (a scheduled reminder left on an instalment that is cancelled or no
    longer matches it).

    ## Version History
    * v0: initial release (generator version 1).
    * v1: seeds v1 (generator version 3): the whole trail is graded (unneeded or extra approval
      requests, extra schedule versions, reminders on cancelled instalments), checks are work or
      gates, the same ``allowed_tools`` in every task, and the release is rebalanced (490 train /
      420 heldout tasks) so every rule in ``DOMAIN.rules`` (late_reminder included: the lead time
      reaches back before today in about a quarter of the tasks) binds in >= 20 tasks per split,
      about a fifth of the tasks need an approval, and no approval_order position or approver role
      answers more than 10 % of heldout (the constant-role / fixed-position attack).
    * v1, issue 15 (same released tasks): list_instalments, list_reminders and list_approvals are
      paginated (``next_cursor`` in their results), list_reminders takes at least one filter, and
      ``generate`` has a ``scale`` option (scale 1 is the release, byte for byte).
    * seeds v1.2 (generator version 4): ``sch.no_commit_before_approval`` is anchored on the wait
      that follows the required approval request (asking another role, waiting and trying to
      commit failed only as ``unneeded_approval``); tags dealt along a seeded shuffle.
    * seeds v2 (generator version 5, issue 32): the outcome class is the decision (approval
      route + reminder route, six classes, none above 30 %), drawn apart from the world with the
      portfolio parameters fitted to it (approval in about a quarter of the tasks, the first
      applying trigger balanced over the three and uniform over the approval order), so the
      request predicts it no better than the prior; the deferral trigger applies to any change
      that postpones collection; get_rules is the one rule-document shape (ten rules, each
      binding: outstanding, rounding, month_end, minimum_instalment, reminder_lead_time,
      late_reminder, approval_order and the three triggers), today's date is in the brief; every
      list tool pages the same way (no filter required, ``total`` everywhere); decoys beside every
      choice (2-4 schedule versions with the active one at a uniform place, instalment and
      reminder ids in no order); the grade judges what the customer will be charged (a prior
      instalment left due fails amounts and dates; the charged total is a gate) and no longer
      counts the prior version's retirement twice.
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "FAILURE_CODES", "GUARDRAIL_CODE", "SchedulesEnv"]
