"""The remittance domain: a hospital's receivables desk posts an insurer's remittance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backoffice.envs.core import BackofficeEnv, Domain, lazy
from backoffice.envs.core.domain import default_report_fields, default_step_shaping
from backoffice.envs.remittance.generator import DEFECT_TAGS, POLICY_CHOICES, RULES, generate
from backoffice.envs.remittance.tables import TABLES
from backoffice.envs.remittance.tools import toolkit

#: failure code of a write outside the answer key's targets (the guardrail)
GUARDRAIL_CODE = "forbidden_write"
#: every failure code the grader emits (each proven by a wrong policy)
FAILURE_CODES = (
    "misallocation", "over_allocation", "unapplied_balance_wrong", "duplicate_applied", "missed_case",
    "unneeded_case", "wrong_write_off", "wrong_transfer", "patient_responsibility_missed", "payment_status_wrong",
    "duplicate_allocation", "allocation_churn", "payer_reply_unprocessed", GUARDRAIL_CODE,
)

#: Training-only cost of one reversal: fixing a mistake may still pass, but it costs reward.
REVERSAL_PENALTY = 0.2


def step_shaping(record: Mapping[str, Any]) -> float:
    """Per-step shaping: the default step costs plus a penalty per successful reversal."""
    base = default_step_shaping(record)
    if record["tool"] == "reverse_allocation" and record["result_status"] == "ok":
        base -= REVERSAL_PENALTY
    return base


def report_fields(key: Mapping[str, Any], grade_: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluation-record extras: defect tags, outcome class and the matched alternative."""
    return {**default_report_fields(key, grade_), "matched_alternative": grade_.get("matched_alternative")}


DOMAIN = Domain(
    name="remittance",
    policies="backoffice.training.domains.remittance.policies",
    catalog="backoffice.training.domains.remittance.catalog:CATALOG",
    title="Remittance",
    prefix="REM",
    toolkit=toolkit,
    generate=generate,
    grade=lazy("backoffice.graders.remittance:grade"),
    defect_tags=DEFECT_TAGS,
    failure_codes=FAILURE_CODES,
    generator_version="4",
    sizes={"train": 400, "heldout": 200},
    default_max_steps=60,
    guardrail_code=GUARDRAIL_CODE,
    report_fields=report_fields,
    step_shaping=step_shaping,
    rules=RULES,
    rule_tools=("get_policies",),
    # the grade reads a payer reply as read once get_case or list_cases returned it (no write)
    grade_reads=frozenset({"get_case", "list_cases"}),
    variants={"duplicate_payment": len(POLICY_CHOICES["duplicate_action"])},
    tables=TABLES,
)


class RemittanceEnv(BackofficeEnv):
    """Post an insurer's remittance against a hospital's open items.

    ## Description
    A hospital's receivables desk receives one insurer payment covering many claims. Each
    remittance line carries a claim ref, patient, service date, billed and paid amounts and
    adjustment codes. The agent matches every line to its claim (refs may carry typing errors and
    similar refs of other patients exist), allocates the money, writes off contractual
    adjustments and small differences, transfers patient responsibility to the patient, opens
    cases with the payer, queries the payer when a line is ambiguous (the reply arrives after a
    ``wait`` and must be read), spots duplicate remittances, and posts the payment. The desk's policies
    (``get_policies``: which codes are contractual or the patient's, the tolerance and what to do with
    small differences, short payments, unmatched lines, overpayments and duplicates, and whether cases
    are opened per line or per payment) vary from desk to desk: the same procedure under one assumed
    set of policies passes at most 5 % of either split.

    ## Action Space
    A tool call ``{"tool": name, "args": {...}}`` (or the same as a JSON string), see Tools.

    ## Observation Space
    Canonical ASCII JSON text: the task brief after reset, then each tool's result
    (``{"status": "ok", "result": ...}`` or ``{"status": "error", "code", "message"}``).

    ## Rewards
    ``sparse`` (default): the pure grade's ``score`` on the terminal step, 0 before. ``shaped``:
    -0.01 per call, -0.05 per rejected call, an extra -0.2 per reversed allocation, and
    ``0.5 * score + 0.5 * pass`` at the end. Reversals never change the pure grade.

    ## Starting State
    A released snapshot (``seeds/remittance``): accounts, open items, payments with remittance
    lines, historical allocations, policies, an empty audit table, the clock. ``reset`` drops
    every write (audit rows included) and the state hash equals the manifest's.

    ## Episode End
    Terminates on ``submit``; truncates at ``max_steps`` (default 60).

    ## Arguments
    ``split``, ``reward_mode`` (sparse / shaped / progress), ``call_cost``, ``gate_cap``,
    ``max_steps``, ``trace_path``, ``render_mode``, ``judge``, ``release``: as every backoffice
    env (:class:`~backoffice.envs.core.env.BackofficeEnv`).

    ## Tools
    get_policies, get_payment, list_payments, search_open_items (order fixed by the task's seed,
    not by quality), get_open_item, allocate, reverse_allocation, write_off, transfer_to_patient,
    open_case, query_payer, get_case, list_cases, wait, post_payment, submit (terminal).
    get_policies returns the desk's rule document whole (``{"rules": [{id, title, text, value}],
    "tables": {}}``). The list tools (list_payments, list_cases, search_open_items) return one page
    at a time (``limit``, default 50, at most 200; ``cursor``: the previous page's ``next_cursor``,
    ``None`` on the last page) and ``total``. No tool
    scans a table that grows with the world: generated tasks at ``reset(options={"generate": i,
    "scale": k})`` (a world about k times the released size, the same task) cost about the same
    per call (benchmarks/bench_scale.py).

    ## Grade
    The end state (payment status, unapplied balance, allocations, write-off and transfer rows,
    cases, claim balances and statuses) is compared with every accepted alternative of
    ``reference_outcomes``; ``matched_alternative`` names the one matched (``None`` if none),
    ``closest_alternative`` and ``differs_in`` explain a failure. The whole trail counts: one
    allocation per line and claim, no correct allocation reversed, no extra write-off, transfer,
    case or payer query, and every payer query answered (``wait``) and read (``get_case``).
    Work checks (payment status, allocations, write-offs, transfers, cases, replies processed,
    claim balances, reference outcome) exist only where the task needs that work; the rest are
    gates that cap the score when they fail. ``process_metrics`` adds reversals, queries, cases
    opened, waits and allocations made. Reversing a wrong allocation and applying the line right
    still passes (the shaped reward pays for the reversal).

    ## Failure codes
    misallocation, over_allocation, unapplied_balance_wrong, duplicate_applied, missed_case,
    unneeded_case, wrong_write_off, wrong_transfer (a transfer to the patient the remittance does
    not call for), patient_responsibility_missed, payment_status_wrong, duplicate_allocation (a
    line applied to one claim in several allocations), allocation_churn (a correct allocation
    reversed), payer_reply_unprocessed (a payer query never answered or its reply never read),
    forbidden_write (guardrail).

    ## Rules
    The ids of ``get_policies``' entries: tolerance_cents, tolerance_action, contractual_codes,
    patient_codes, other_codes, short_payment_action, unreferenced_action, overpayment_action,
    duplicate_action, case_scope, ambiguous_action, match_rule, posting; each binds in >= 20
    tasks per split (``RULE_POLICIES``).

    ## Version History
    * v0: initial release (generator version 1).
    * v1 (generator version 2): most payments carry several traps; every ref search finds similar
      claims and the line's claim sits at a uniformly drawn position among the hits; payer
      replies and duplicates of more kinds; whole-trail grading with work checks and gates.
    * seeds v1.2 (generator version 3): the short-payment policy says what the payer-query
      alternative takes (wait for the reply, read it with get_case, act on it), as the grade
      does; tags dealt along a seeded shuffle.
    * seeds v2 (generator version 4): one rule document; desks differ in every policy (codes,
      tolerance and its action, short payments, unmatched lines, overpayments incl. a credit,
      six duplicate actions dealt evenly over the release's duplicates, case scope); payments
      carry four traps; lists return ``total`` and search pages by ``cursor``.
    """

    domain = DOMAIN


__all__ = ["DOMAIN", "FAILURE_CODES", "GUARDRAIL_CODE", "RemittanceEnv"]
