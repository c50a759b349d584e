"""The remittance tiers as declarations over the registries (:mod:`.features`, :mod:`.actions`).

Every tier plays the same episode: read the policies, the payment and the payer's payments; hold
or return a duplicate as the policy says; per line, search its claim ref (then its patient's
name), find its claim, handle the policy-coded adjustments, apply it, and open the case, query
the payer or write off the small rest the policies ask for; wait for the payer's replies and read
them; post the payment. The tiers differ in what they compute for the agent:

- ``conclusions``: the match rule's verdict on the current line (``cur_matched``,
  ``cur_ambiguous``, ``cur_no_claim``), the duplicate rule's (``dup_found``), the projection of the
  line once applied (``cur_excess``, ``cur_rest_within_tol`` ...) and a "this is due" flag per step
  (``wo_adj0_due``, ``cur_alloc_due``, ``next_line_due``, ``post_apply_due``); its actions write to
  the matched claim and compute the allocation (``min(paid - applied, balance)``), and a reply
  read matches the line to the claim it names.
- ``facts``: observed facts and plain comparisons between two observed values (per listed
  payment "it is this payment", "posted", "same reference", "same amount"; per hit its ref's
  nearness and its patient, date, amount, payer and responsibility against the line's; on the
  current line and claim "paid > balance", "paid > allocated", "balance <= tolerance"). Which hit
  is the claim (``open_hit[i]`` makes it the current claim), which amount to apply
  (``allocate[line_paid]`` / ``allocate[claim_balance]``) and the order of the work are the agent's.
- ``raw``: per-slot observed values only (money, day numbers, claim-ref digits, episode symbols of
  names and references, one-hot codes and statuses); primitive actions (``search_line[l]``,
  ``read_reply[l]``): every comparison and every amount relation is the agent's.
"""

from __future__ import annotations

from backoffice.training.catalog.features import Action
from backoffice.training.catalog.tier import Hyper, Tier, two_envs
from backoffice.training.domains.remittance.catalog.actions import ACTIONS
from backoffice.training.domains.remittance.catalog.desk import LINE_CASES, N_ADJ, N_HITS, N_LINES, N_LISTED
from backoffice.training.domains.remittance.catalog.feature_policies import conclusions_policy, facts_policy, raw_policy
from backoffice.training.domains.remittance.catalog.features import (
    CODES,
    FEATURES,
    PAYMENT_CASES,
    PAYMENT_STATUSES,
    POLICY_NAMES,
    REPLY_KINDS,
)

_HYPER = {
    "reward_mode": Hyper("progress", "under the shaped reward submitting early scores about what posting at once does; the "
                                     "progress reward pays each first step closer to the accepted end state"),
    "call_cost": Hyper(0.0, "free successful calls: with the per-call cost PPO settled on posting and submitting at once"),
    "finish_bias": Hyper(-5.0, "a strong prior against the ending actions for a long procedure"),
    "n_steps": Hyper(256, "long rollouts: a payment is up to 24 calls"),
    "gamma": Hyper(0.999, "a long horizon: the cases the posting policies ask for come late in the procedure"),
    "ent_coef": Hyper(0.03, "enough exploration to open the cases the policies ask for"),
}
#: the feature policies' longest released episode is 29 calls (the conclusions tier's: 24)
MAX_STEPS = 40

_READS = ("get_policies", "get_payment", "list_payments")
_LINE_CASE_ACTIONS = ("case_underpayment", "case_refund", "case_unidentified")
_FINISH = ("case_duplicate", "case_duplicate_refund", "post_apply", "post_hold", "post_return", "submit")


def _claim_actions() -> tuple[str | Action, ...]:
    """The facts and raw tiers' actions on the current line and its current claim."""
    return (
        ACTIONS.shown_as("search_by_name", "tiers:search_by_name"), "more_hits", *(f"open_hit[{i}]" for i in range(N_HITS)),
        *(ACTIONS.shown_as(f"write_off_adj[{j}]", f"tiers:write_off_adj[{j}]") for j in range(N_ADJ)),
        *(ACTIONS.shown_as(f"transfer_adj[{j}]", f"tiers:transfer_adj[{j}]") for j in range(N_ADJ)),
        "allocate[line_paid]", "allocate[claim_balance]", ACTIONS.shown_as("write_off_small", "tiers:write_off_small"),
        *_LINE_CASE_ACTIONS, "query_payer", "wait",
    )


CONCLUSIONS = Tier(
    name="conclusions",
    features=(
        "facts_read", "dup_found", "no_dup", *POLICY_NAMES, "dup_case_opened", "dup_case_due", "dup_refund_case_due",
        *(f"dup_{d}_due" for d in ("hold", "return", "apply")), "posted", "any_applied", "search_pages_left",
        "lines_unsearched", "has_cur", "cur_needs_name_search", "cur_matched", "cur_ambiguous", "cur_no_claim", "cur_recoup",
        *(f"adj{j}_pending" for j in range(N_ADJ)), *(f"adj{j}_contractual" for j in range(N_ADJ)),
        *(f"adj{j}_patient" for j in range(N_ADJ)), *(f"wo_adj{j}_due" for j in range(N_ADJ)),
        *(f"tr_adj{j}_due" for j in range(N_ADJ)), "cur_alloc_due", "cur_excess", "cur_rest_zero", "cur_rest_within_tol",
        "cur_rest_beyond_tol", "cur_balance_positive", "cur_small_written_off", "cur_underpayment_case", "cur_refund_case",
        "cur_unidentified_case", "cur_queried", "unidentified_case_due", "query_due", "credit_alloc_due", "refund_case_due",
        "underpayment_case_due", "small_write_off_due", "cur_line_handled", "next_line_due", "queries_awaiting",
        "replies_unread", "post_apply_due", "unapplied_fraction", "lines_total", "lines_searched_fraction",
        "lines_handled_fraction", "tolerance",
    ),
    actions=(
        *_READS, "search_next_line", "search_by_name", "more_hits", *(f"write_off_adj[{j}]" for j in range(N_ADJ)),
        *(f"transfer_adj[{j}]" for j in range(N_ADJ)), "allocate", "allocate_whole", "write_off_small",
        *_LINE_CASE_ACTIONS, "query_payer", "wait", "get_case", *_FINISH,
    ),
    hyperparams={**_HYPER, "timesteps": Hyper(400_000, "the budget its three seeds were measured on")},
    max_steps=MAX_STEPS,
    feature_policy=conclusions_policy,
)

_SHARED = ("policies_read", "payment_read", "payments_listed")

FACTS = Tier(
    name="facts",
    features=(
        *_SHARED, "pol.tolerance", *POLICY_NAMES, "payment.posted", *(f"payment.case[{c}]" for c in PAYMENT_CASES),
        "payment.allocations_active", "search.more_pages", "payment.unapplied_fraction",
        *(f"listed[{k}].{n}" for k in range(N_LISTED)
          for n in ("present", "is_this_payment", "status[posted]", "reference_equal", "amount_equal")),
        "lines.total", "lines.searched", "cur.present", "cur.name_searched", "cur.hits_by_name",
        *(f"cur.adj[{j}].{n}" for j in range(N_ADJ)
          for n in ("present", "code_contractual", "code_patient", "written_off", "transferred")),
        "cur.allocated", "cur.paid_gt_claim_balance", "cur.paid_gt_allocated", *(f"cur.case[{c}]" for c in LINE_CASES),
        "cur.queried", "cur.reply_read", *(f"cur.reply[{k}]" for k in REPLY_KINDS), "claim.present",
        "claim.balance_positive", "claim.balance_le_tolerance",
        *(f"hit[{i}].{n}" for i in range(N_HITS)
          for n in ("present", "ref_near_line_ref", "patient_equal", "service_date_equal", "amount_due_equal_billed",
                    "payer_is_payment_payer", "responsibility[payer]", "ref_equal_reply_ref", "is_current_claim")),
        "queries.awaiting", "queries.answered_unread",
    ),
    actions=(*_READS, ACTIONS.shown_as("search_next_line", "tiers:search_next_line"), *_claim_actions(), "get_case", *_FINISH),
    hyperparams={**_HYPER,
                 "timesteps": Hyper(1_200_000, "the slot policy learns the refund cases late; it was still rising at 900k"),
                 "ent_coef": Hyper(0.06, "more exploration than the conclusions tier: the conclusions tier's value stalled"),
                 "policy": Hyper("slots", "one scorer for the hits, the listed payments as a set: the flat MLP stalled"),
                 "gate_cap": Hyper(False, "the terminal shaping on the work share: a write to a look-alike claim no longer "
                                          "costs more than leaving the line undone"),
                 "finish_tools": Hyper(("post_payment",), "the finishing prior on posting too: a uniform policy posts within "
                                                          "the first steps"),
                 "gae_lambda": Hyper(0.99, "a line's case is credited through the episode's own later rewards"),
                 "task_sampling": Hyper("greedy-failures", "half the draws from the train tasks the greedy policy fails: the "
                                                           "rare refund cases")},
    max_steps=MAX_STEPS,
    feature_policy=facts_policy,
    slot_actions={"open_hit": "hit"},
    slot_sets=("listed",),
)

RAW = Tier(
    name="raw",
    features=(
        *_SHARED, FEATURES.shown_as("pol.tolerance", "raw:pol.tolerance"), *POLICY_NAMES,
        *(f"pol.contractual_codes[{c}]" for c in CODES), *(f"pol.patient_codes[{c}]" for c in CODES),
        "payment.amount", "payment.reference", "payment.posted", *(f"payment.case[{c}]" for c in PAYMENT_CASES),
        "payment.allocations_active", "search.more_pages",
        *(f"listed[{k}].{n}" for k in range(N_LISTED)
          for n in ("present", "is_this_payment", *(f"status[{s}]" for s in PAYMENT_STATUSES), "reference", "amount")),
        *(f"line[{ln}].{n}" for ln in range(N_LINES)
          for n in ("present", "searched", "is_current", "queried", "answered", "reply_read")),
        "cur.present", "cur.ref_kind[claim]", "cur.ref", "cur.patient", "cur.service_date", "cur.billed", "cur.paid",
        FEATURES.shown_as("cur.allocated", "raw:cur.allocated"),
        *(f"cur.adj[{j}].{n}" for j in range(N_ADJ)
          for n in (*(f"code[{c}]" for c in CODES), "code[other]", "amount", "written_off", "transferred")),
        "cur.name_searched", "cur.hits_by_name", *(f"cur.case[{c}]" for c in LINE_CASES),
        *(f"cur.reply[{k}]" for k in REPLY_KINDS), "cur.reply_ref", "claim.present", "claim.balance",
        *(f"hit[{i}].{n}" for i in range(N_HITS)
          for n in ("present", "ref", "patient", "service_date", "amount_due", "balance", "payer_is_payment_payer",
                    "responsibility[payer]", "is_current_claim")),
    ),
    actions=(*_READS, *(f"search_line[{i}]" for i in range(N_LINES)), *_claim_actions(),
             *(f"read_reply[{i}]" for i in range(N_LINES)), *_FINISH),
    hyperparams={**_HYPER, **two_envs(1024)},
    max_steps=MAX_STEPS,
    feature_policy=raw_policy,
)

__all__ = ["CONCLUSIONS", "FACTS", "MAX_STEPS", "RAW"]
