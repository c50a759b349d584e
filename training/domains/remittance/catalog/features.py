"""Every feature of every remittance tier, each a function of the desk
(:class:`~.desk.RemittanceDesk`), registered once under each name a tier shows it by.

- what was read and the payment's state, the desk's policies as one-hot categories (every tier);
- conclusions: the duplicate rule's verdict, the match rule's verdict on the current line, the
  projection of the line once applied and a "this is due" flag per step of the procedure;
- facts: plain comparisons between two observed values (a listed payment against this one, a hit
  against the current line, the current line's paid amount against the claim's balance ...);
- raw: per-slot observed values only (money, day numbers, claim-ref digits, episode symbols of
  names and references, one-hot codes and statuses).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from backoffice.envs.remittance.generator import POLICY_CHOICES
from backoffice.envs.remittance.tables import norm, osa_distance
from backoffice.training.catalog.base import scale
from backoffice.training.catalog.features import Feature, Features
from backoffice.training.domains.remittance.catalog.desk import LINE_CASES, N_ADJ, N_HITS, N_LINES, N_LISTED, Line, RemittanceDesk

FEATURES: Features[RemittanceDesk] = Features()

#: the desk's policies that take one of several named actions (``POLICY_CHOICES``): one-hot features
CHOICE_POLICIES = {key: values for key, values in POLICY_CHOICES.items() if all(isinstance(v, str) for v in values)}
POLICY_NAMES = tuple(f"pol.{key}[{value}]" for key, values in CHOICE_POLICIES.items() for value in values)
#: the tolerance feature: policy tolerance_cents / TOL_FULL (the largest a desk sets)
TOL_FULL = max(POLICY_CHOICES["tolerance_cents"])
#: the adjustment codes of the generator (raw: one-hot per adjustment, multi-hot per policy list)
CODES = ("CO-45", "CO-253", "PR-1", "PR-2", "PR-3")
#: case categories of the payment (opened with no line)
PAYMENT_CASES = ("duplicate_remittance", "refund_request", "underpayment", "unidentified_remittance")
REPLY_KINDS = ("applies_to", "recoup", "confirm")
PAYMENT_STATUSES = ("posted", "unposted", "held", "returned")
#: raw: money in cents / MONEY (line and claim amounts, tolerance), payments / PAYMENT_MONEY
MONEY = 1_000_000
PAYMENT_MONEY = 10_000_000
#: raw: dates as (date - DATE_BASE) days / DATE_SPAN
DATE_BASE = dt.date(2025, 1, 1)
DATE_SPAN = 1000
#: raw: claim refs ``CLM-dddddd`` as their digits / REF_SPAN
REF_SPAN = 1_000_000


def on_line(desk: RemittanceDesk) -> bool:
    """What the current line's features need to be other than 0 (their gate)."""
    return desk.current() is not None


def _flag(names: Sequence[tuple[str, str]], fn: Any, gate: Any = None) -> None:
    """Register ``fn(desk) -> bool`` as the 0/1 feature under each ``(name, doc)``."""
    def value(desk: RemittanceDesk) -> float:
        return float(fn(desk))
    for name, doc in names:
        FEATURES.feature(name, doc, gate)(value)


# -- every tier --------------------------------------------------------------------------------------
@FEATURES.block(tuple((n, f"1 if policy {n[4:n.index('[')]} is {n[n.index('[') + 1:-1]}") for n in POLICY_NAMES))
def policy_onehots(desk: RemittanceDesk) -> Sequence[float]:
    return desk.per_policies("onehots", _onehots)


def _onehots(desk: RemittanceDesk) -> tuple[float, ...]:
    pol = desk.pol or {}
    return tuple(float(pol.get(key) == value) for key, values in CHOICE_POLICIES.items() for value in values)


#: the desk's state: slot -> the names (and docs) each tier shows it under
_DESK_STATE = (
    (("policies_read", "1 once get_policies returned"),),
    (("payment_read", "1 once get_payment returned"),),
    (("payments_listed", "1 once list_payments returned its last page"),),
    (("posted", "1 once post_payment returned ok (any disposition)"), ("payment.posted", "1 once post_payment returned ok")),
    (("any_applied", "1 if some allocation of this payment is active (hold/return would be rejected)"),
     ("payment.allocations_active", "1 if an allocation of this payment was made ok (hold/return are refused then)")),
    (("search_pages_left", "1 if the last search has more pages to fetch (more_hits)"),
     ("search.more_pages", "1 if the last search has more pages to fetch (more_hits)")),
    (("queries_awaiting", "1 if a payer query is awaiting its reply (not yet listed as answered by wait)"),
     ("queries.awaiting", "1 if a payer query is awaiting its reply (wait has not reported it answered)")),
    (("replies_unread", "1 if wait reported an answered payer query that get_case has not read yet"),
     ("queries.answered_unread", "1 if wait reported an answered payer query that was not read yet")),
)


def desk_state(desk: RemittanceDesk) -> Sequence[float]:
    """What was read, whether the payment is posted or has allocations, and whether a search has
    pages left, a query awaits its reply or a reply is unread (every tier reads several: one call)."""
    queries = desk.queries
    return (float(desk.pol is not None), float(desk.payment is not None), float(desk.others is not None), float(desk.posted),
            float(bool(desk.lines) and desk.any_applied()), float(desk.paging is not None),
            float(bool(queries) and desk.awaiting()), float(bool(queries) and desk.answered() is not None))


for _slot, _names in enumerate(_DESK_STATE):
    for _name, _doc in _names:
        FEATURES.add(Feature(_name, _doc, desk_state, (), _slot))


# -- conclusions -----------------------------------------------------------------------------------------
_DUP = (
    ("facts_read", "1 once get_policies, get_payment and list_payments all returned ok"),
    ("dup_found", "1 if list_payments shows another payment, status posted, with the same EFT reference and amount as this "
                  "payment (get_payment)"),
    ("no_dup", "1 if the three reads returned ok and no already posted duplicate was found (the lines are to be worked)"),
    ("dup_case_opened", "1 if the case the duplicate policy asks for (duplicate_remittance or refund_request, no line) was "
                        "opened ok"),
    ("dup_case_due", "1 if dup_found, the duplicate policy asks for a duplicate_remittance case, it is not opened and the "
                     "payment is not posted"),
    ("dup_refund_case_due", "1 if dup_found, the duplicate policy asks for a refund_request case, it is not opened and the "
                            "payment is not posted"),
    *((f"dup_{d}_due", f"1 if dup_found, the case the duplicate policy asks for (if any) is opened, the policy posts with "
                       f"disposition {d} and the payment is not posted") for d in ("hold", "return", "apply")),
)


@FEATURES.block(_DUP)
def duplicate(desk: RemittanceDesk) -> Sequence[float]:
    """The duplicate rule's verdict and what the duplicate policy asks for."""
    facts, dup = desk.facts(), desk.dup()
    disposition, category = desk.duplicate_handling()
    live = not desk.posted
    case_done = not category or category in desk.payment_cases
    return (float(facts), float(dup), float(facts and not dup), float(bool(category) and category in desk.payment_cases),
            float(dup and category == "duplicate_remittance" and not case_done and live),
            float(dup and category == "refund_request" and not case_done and live),
            *(float(dup and disposition == d and case_done and live) for d in ("hold", "return", "apply")))


_LINE = (
    ("has_cur", "1 if there is a current line"),
    ("cur_needs_name_search", "1 if the current line's ref search found no unique matching claim and its name is not "
                              "searched yet"),
    ("cur_matched", "1 if exactly one claim matches the current line (ref/name search by the match rule, or the payer's "
                    "reply)"),
    ("cur_ambiguous", "1 if the current line's name search found several claims matching patient, date, amount and payer "
                      "(and no reply named one)"),
    ("cur_no_claim", "1 if neither the current line's ref nor its name search found a matching claim"),
    ("cur_recoup", "1 if the payer replied that the current line is recouped (not to be applied)"),
    *((f"adj{j}_pending", f"1 if the current line has adjustment #{j} and it was neither written off nor transferred")
      for j in range(N_ADJ)),
    *((f"adj{j}_contractual", f"1 if the current line's adjustment #{j} code is in policy contractual_codes")
      for j in range(N_ADJ)),
    *((f"adj{j}_patient", f"1 if the current line's adjustment #{j} code is in policy patient_codes") for j in range(N_ADJ)),
    ("cur_excess", "1 if matched and the line's paid amount exceeds applied + what the claim can still take (balance - "
                   "pending policy-coded adjustments): an overpayment"),
    ("cur_rest_zero", "1 if matched and the claim's projected rest (balance - pending policy-coded adjustments - "
                      "allocation still due) is 0"),
    ("cur_rest_within_tol", "1 if matched and 0 < projected rest <= policy tolerance_cents"),
    ("cur_rest_beyond_tol", "1 if matched and projected rest > policy tolerance_cents"),
    ("cur_balance_positive", "1 if the current line's matched claim has a balance > 0 now"),
    ("cur_small_written_off", "1 if a small_balance write-off was made ok on the current line's claim"),
    ("cur_queried", "1 if the payer was queried ok about the current line"),
)


@FEATURES.block(_LINE, gate=on_line)
def current_line(desk: RemittanceDesk) -> Sequence[float]:
    """The match rule's verdict on the current line and its projection once applied."""
    ln = desk.current()
    if ln is None:
        return (0.0,) * len(_LINE)
    contractual, patient = desk.codes("contractual_codes"), desk.codes("patient_codes")
    codes = ln.line["adj_codes"]
    projected = (0.0,) * 5
    if ln.status == "matched" and ln.item is not None:
        tol = desk.tolerance()
        _, excess, rest = desk.projection(ln)
        projected = (float(excess > 0), float(rest == 0), float(0 < rest <= tol), float(rest > tol),
                     float(desk.item_balance(ln) > 0))
    return (1.0, float(ln.status == "unknown" and ln.ref_done and not ln.name_done), float(ln.status == "matched"),
            float(ln.status == "ambiguous"), float(ln.status == "none"), float(ln.status == "recoup"),
            *(float(desk.pending_adj(ln, j) is not None) for j in range(N_ADJ)),
            *(float(j < len(codes) and codes[j] in contractual) for j in range(N_ADJ)),
            *(float(j < len(codes) and codes[j] in patient) for j in range(N_ADJ)),
            *projected, float(ln.small_wo), float(ln.queried))


def _covers(category: str) -> Any:
    return lambda d: (ln := d.current()) is not None and d.covered(ln, category)


for _word, _cat in (("underpayment", "underpayment"), ("refund", "refund_request"), ("unidentified", "unidentified_remittance")):
    _flag(((f"cur_{_word}_case", f"1 if an {_cat} case covers the current line (opened for it, or for the payment under "
                                 f"case_scope payment)"),
           (f"cur.case[{_cat}]", f"1 if a {_cat} case covers the current line (opened for it, or for the payment under "
                                 f"case_scope payment)")), _covers(_cat), on_line)

_DUES = (
    *((f"wo_adj{j}_due", f"1 if matched, adj{j}_pending and adj{j}_contractual (policy: write each contractual code off)")
      for j in range(N_ADJ)),
    *((f"tr_adj{j}_due", f"1 if matched, adj{j}_pending and adj{j}_patient (policy: move each patient code to the patient)")
      for j in range(N_ADJ)),
    ("cur_alloc_due", "1 if matched and min(line paid - applied, claim balance - pending policy-coded adjustments) > 0"),
    ("credit_alloc_due", "1 if cur_excess and policy overpayment_action is credit (apply the whole line: allocate_whole)"),
    ("refund_case_due", "1 if cur_excess, policy overpayment_action is refund_case and no refund_request case covers the "
                        "line"),
    ("underpayment_case_due", "1 if cur_rest_beyond_tol, policy short_payment_action is case and neither an underpayment "
                              "case nor a payer query covers the line"),
    ("small_write_off_due", "1 if cur_rest_within_tol, no policy-coded adjustment pending, no allocation due, policy "
                            "tolerance_action is write_off, and no small_balance write-off made"),
    ("unidentified_case_due", "1 if cur_no_claim, policy unreferenced_action is case and no unidentified_remittance case "
                              "covers the line"),
    ("query_due", "1 if the payer was not queried about the line and it is cur_ambiguous (policy ambiguous_action) or "
                  "cur_no_claim under policy unreferenced_action query"),
)


@FEATURES.block(_DUES, gate=on_line)
def dues(desk: RemittanceDesk) -> Sequence[float]:
    """What the desk's policies still ask for on the current line."""
    ln = desk.current()
    if ln is None:
        return (0.0,) * len(_DUES)
    due = desk.dues(ln)
    return tuple(float(due[name]) for name, _ in _DUES)


def _line_handled(desk: RemittanceDesk, ln: Line | None) -> bool:
    return True if ln is None else desk.handled(ln)


_PROGRESS = (
    ("cur_line_handled", "1 if there is no current line, or its match is determined and none of the *_due flags of the line "
                         "is on"),
    ("next_line_due", "1 if no_dup, lines_unsearched and cur_line_handled"),
    ("post_apply_due", "1 if no_dup, every line searched, cur_line_handled, no query awaiting, no reply unread, and not posted"),
)


@FEATURES.block(_PROGRESS)
def progress(desk: RemittanceDesk) -> Sequence[float]:
    """Where the procedure stands: the current line done, the next line or the post due."""
    handled = _line_handled(desk, desk.current())
    no_dup, live = desk.facts() and not desk.dup(), not desk.posted
    unread = any(q["state"] == "answered" for q in desk.queries)
    return (float(handled), float(no_dup and desk.started < len(desk.lines) and handled and live),
            float(no_dup and desk.started == len(desk.lines) and handled and not desk.awaiting() and not unread and live))


_flag((("lines_unsearched", "1 if some line of the payment (get_payment) has not been searched by search_next_line yet"),),
      lambda d: d.started < len(d.lines))


@FEATURES.feature("unapplied_fraction", "payment unapplied / payment amount (from get_payment, allocate results)")
def unapplied_fraction(desk: RemittanceDesk) -> float:
    return scale(desk.unapplied, max(1, int(desk.payment["amount"]))) if desk.payment is not None else 0.0


@FEATURES.feature("lines_total", "number of remittance lines / 5")
def lines_total(desk: RemittanceDesk) -> float:
    return scale(len(desk.lines), 5)


@FEATURES.feature("lines_searched_fraction", "lines searched by search_next_line / lines")
def lines_searched_fraction(desk: RemittanceDesk) -> float:
    return scale(desk.started, max(1, len(desk.lines)))


@FEATURES.feature("lines_handled_fraction", "lines searched whose match is determined and on which no *_due flag is on (as "
                                            "for the current line) / lines")
def lines_handled_fraction(desk: RemittanceDesk) -> float:
    return scale(sum(desk.handled(x) for x in desk.lines[:desk.started]), max(1, len(desk.lines)))


@FEATURES.feature("tolerance", f"policy tolerance_cents / {TOL_FULL}")
@FEATURES.feature("pol.tolerance", f"policy tolerance_cents / {TOL_FULL}")
def tolerance(desk: RemittanceDesk) -> float:
    return desk.per_policies("tolerance", _tolerance)


def _tolerance(desk: RemittanceDesk) -> float:
    return scale(desk.tolerance(), TOL_FULL)


# -- facts and raw: what both show ---------------------------------------------------------------------
@FEATURES.block(tuple((f"payment.case[{c}]", f"1 if a {c} case was opened ok for the whole payment (no line)")
                      for c in PAYMENT_CASES))
def payment_cases(desk: RemittanceDesk) -> Sequence[float]:
    cases = desk.payment_cases
    return tuple(float(c in cases) for c in PAYMENT_CASES) if cases else _NO_PAYMENT_CASES


_NO_PAYMENT_CASES = (0.0,) * len(PAYMENT_CASES)


def n_listed(desk: RemittanceDesk) -> int:
    """Listed payments filled (their slots' features are 0 past them)."""
    return len(desk.others or ())


def n_hits(desk: RemittanceDesk) -> int:
    """The current line's hits filled (their slots' features are 0 past them)."""
    ln = desk.current()
    return len(ln.hits) if ln is not None else 0


def n_lines(desk: RemittanceDesk) -> int:
    return len(desk.lines)


def _listed(desk: RemittanceDesk, k: int) -> dict[str, Any] | None:
    others = desk.others or []
    return others[k] if k < min(len(others), N_LISTED) else None


@FEATURES.block_family((
    ("listed[{i}].present", "1 if list_payments returned a {i}-th payment"),
    ("listed[{i}].is_this_payment", "1 if the {i}-th listed payment is this payment (same id)"),
    *((f"listed[{{i}}].status[{s}]", f"1 if the {{i}}-th listed payment's status is {s}") for s in PAYMENT_STATUSES),
), N_LISTED, count=n_listed)
def listed(desk: RemittanceDesk, k: int) -> Sequence[float]:
    o = _listed(desk, k)
    if o is None:
        return (0.0,) * (2 + len(PAYMENT_STATUSES))
    return (1.0, float(o.get("id") == desk.pid), *(float(o.get("status") == s) for s in PAYMENT_STATUSES))


_CUR_STATE = (
    ("cur.present", "1 if there is a current line"),
    ("cur.name_searched", "1 if the current line's patient name was searched"),
    ("cur.hits_by_name", "1 if the hits shown come from a search by the patient's name (0: by the line's claim ref)"),
    *((f"cur.adj[{j}].written_off", f"1 if adjustment #{j} of the current line was written off ok (write_off_adj)")
      for j in range(N_ADJ)),
    *((f"cur.adj[{j}].transferred", f"1 if adjustment #{j} of the current line was moved to the patient ok (transfer_adj)")
      for j in range(N_ADJ)),
    *((f"cur.reply[{k}]", f"1 if the payer's answer read for the current line is {k}") for k in REPLY_KINDS),
    ("claim.present", "1 if there is a current claim (open_hit on the current line)"),
)


@FEATURES.block(_CUR_STATE, gate=on_line)
def current_state(desk: RemittanceDesk) -> Sequence[float]:
    """The current line's searches, adjustments used and reply, and whether a claim is open."""
    ln = desk.current()
    if ln is None:
        return (0.0,) * len(_CUR_STATE)
    kind = ln.reply.get("kind")
    return (1.0, float(ln.name_searched), float(ln.by_name),
            *(float(ln.used_adj.get(j) == "write_off") for j in range(N_ADJ)),
            *(float(ln.used_adj.get(j) == "transfer") for j in range(N_ADJ)),
            *(float(kind == k) for k in REPLY_KINDS), float(desk.claim is not None))


def _hit(desk: RemittanceDesk, i: int) -> dict[str, Any] | None:
    ln = desk.current()
    return ln.hits[i] if ln is not None and i < min(len(ln.hits), N_HITS) else None


@FEATURES.block_family((
    ("hit[{i}].present", "1 if the current line's last search returned an {i}-th hit"),
    ("hit[{i}].payer_is_payment_payer", "1 if the {i}-th hit is billed to this payment's payer"),
    ("hit[{i}].responsibility[payer]", "1 if the {i}-th hit is an insurer (payer-responsibility) item"),
    ("hit[{i}].is_current_claim", "1 if the {i}-th hit is the current claim (opened with open_hit)"),
), N_HITS, count=n_hits)
def hit(desk: RemittanceDesk, i: int) -> Sequence[float]:
    h = _hit(desk, i)
    if h is None:
        return 0.0, 0.0, 0.0, 0.0
    current = desk.claim.get("id") if desk.claim is not None else None
    return (1.0, float(h.get("payer_id") == desk.payment_payer()), float(h.get("responsibility") == "payer"),
            float(h.get("id") == current))


# -- facts ------------------------------------------------------------------------------------------------
@FEATURES.feature("payment.unapplied_fraction", "payment unapplied / payment amount (get_payment, then allocate results)")
def payment_unapplied(desk: RemittanceDesk) -> float:
    pay = desk.payment
    return scale(desk.unapplied, max(1, int(pay.get("amount") or 0))) if pay is not None else 0.0


@FEATURES.block_family((
    ("listed[{i}].reference_equal", "1 if the {i}-th listed payment's EFT reference equals this payment's (get_payment)"),
    ("listed[{i}].amount_equal", "1 if the {i}-th listed payment's amount equals this payment's (get_payment)"),
), N_LISTED, count=n_listed)
def listed_facts(desk: RemittanceDesk, k: int) -> Sequence[float]:
    o, pay = _listed(desk, k), desk.payment
    if o is None:
        return 0.0, 0.0
    return (float(pay is not None and o.get("reference") == pay.get("reference")),
            float(pay is not None and o.get("amount") == pay.get("amount")))


@FEATURES.feature("lines.total", f"number of remittance lines / {N_LINES}")
def lines_count(desk: RemittanceDesk) -> float:
    return scale(len(desk.lines), N_LINES)


@FEATURES.feature("lines.searched", f"lines searched by search_next_line / {N_LINES}")
def lines_searched(desk: RemittanceDesk) -> float:
    return scale(sum([ln.searched for ln in desk.lines]), N_LINES)


@FEATURES.block_family((
    ("cur.adj[{i}].present", "1 if the current line has an adjustment #{i}"),
    ("cur.adj[{i}].code_contractual", "1 if the current line's adjustment #{i} code is in policy contractual_codes"),
    ("cur.adj[{i}].code_patient", "1 if the current line's adjustment #{i} code is in policy patient_codes"),
), N_ADJ, gate=on_line)
def adjustment_facts(desk: RemittanceDesk, j: int) -> Sequence[float]:
    ln = desk.current()
    adj = ln.adj(j) if ln is not None else None
    if adj is None:
        return 0.0, 0.0, 0.0
    return 1.0, float(adj[0] in desk.str_codes("contractual_codes")), float(adj[0] in desk.str_codes("patient_codes"))


_CUR_FACTS = (
    ("cur.allocated", "1 if an allocation from the current line was made ok"),
    ("cur.paid_gt_claim_balance", "1 if the current line's paid amount > the current claim's balance (as last read)"),
    ("cur.paid_gt_allocated", "1 if the current line's paid amount > what was allocated from it"),
    ("cur.queried", "1 if the payer was queried ok about the current line"),
    ("cur.reply_read", "1 if the payer's answer about the current line was read (get_case)"),
    ("claim.balance_positive", "1 if the current claim's balance (as last read) is > 0"),
    ("claim.balance_le_tolerance", "1 if the current claim's balance (as last read) is <= policy tolerance_cents"),
)


@FEATURES.block(_CUR_FACTS, gate=on_line)
def current_facts(desk: RemittanceDesk) -> Sequence[float]:
    ln = desk.current()
    if ln is None:
        return (0.0,) * len(_CUR_FACTS)
    paid = int(ln.line.get("paid_amount") or 0)
    claimed = desk.claim is not None
    bal = desk.claim_balance()
    return (float(ln.applied > 0), float(claimed and paid > bal), float(paid > ln.applied), float(bool(ln.query)),
            float(bool(ln.reply)), float(claimed and bal > 0), float(claimed and bal <= desk.tolerance()))


@lru_cache(maxsize=1 << 16)
def refs_near(hit_ref: str, line_ref: str) -> bool:
    """A hit's claim ref is within two typing errors of the line's (normalised; the line has a
    ref): a pure function of the two refs, remembered (the episodes compare the same few pairs)."""
    ref = norm(line_ref)
    return bool(ref) and osa_distance(norm(hit_ref), ref) <= 2


@FEATURES.block_family((
    ("hit[{i}].ref_near_line_ref", "1 if the {i}-th hit's claim ref is within two typing errors of the line's claim ref "
                                   "(normalised)"),
    ("hit[{i}].patient_equal", "1 if the {i}-th hit's patient name equals the line's"),
    ("hit[{i}].service_date_equal", "1 if the {i}-th hit's service date equals the line's"),
    ("hit[{i}].amount_due_equal_billed", "1 if the {i}-th hit's amount due equals the line's billed amount"),
    ("hit[{i}].ref_equal_reply_ref", "1 if the {i}-th hit's claim ref is the one named by the payer's reply read for the "
                                     "line"),
), N_HITS, count=n_hits)
def hit_facts(desk: RemittanceDesk, i: int) -> Sequence[float]:
    h, ln = _hit(desk, i), desk.current()
    if h is None or ln is None:
        return (0.0,) * 5
    line = ln.line
    reply_ref = str(ln.reply.get("claim_ref") or "")
    return (float(refs_near(str(h.get("claim_ref") or ""), str(line.get("claim_ref") or ""))),
            float(h.get("patient_name") == line.get("patient_name")), float(h.get("service_date") == line.get("service_date")),
            float(h.get("amount_due") == line.get("billed_amount")), float(bool(reply_ref) and h.get("claim_ref") == reply_ref))


# -- raw ----------------------------------------------------------------------------------------------------
def money(cents: Any, full: int = MONEY) -> float:
    return scale(None if cents is None else float(cents), full)


def day(date: Any) -> float:
    try:
        days = (dt.date.fromisoformat(str(date)[:10]) - DATE_BASE).days
    except ValueError:
        return 0.0
    return scale(days, DATE_SPAN)


def ref_digits(ref: Any) -> int | None:
    """The six digits of a claim ref ``CLM-dddddd`` (any case or spacing), else ``None``."""
    n = norm(str(ref or ""))
    return int(n[3:]) if n.startswith("CLM") and len(n) == 9 and n[3:].isdigit() else None


@FEATURES.feature("raw:pol.tolerance", "policy tolerance_cents / 1e6 (the money scale)")
def raw_tolerance(desk: RemittanceDesk) -> float:
    return desk.per_policies("raw:tolerance", _raw_tolerance)


def _raw_tolerance(desk: RemittanceDesk) -> float:
    return money(desk.tolerance())


@FEATURES.block(tuple((f"pol.{kind}[{c}]", f"1 if policy {kind} lists {c}") for kind in ("contractual_codes", "patient_codes")
                      for c in CODES))
def code_lists(desk: RemittanceDesk) -> Sequence[float]:
    return desk.per_policies("code_lists", _code_lists)


def _code_lists(desk: RemittanceDesk) -> tuple[float, ...]:
    contractual, patient = desk.str_codes("contractual_codes"), desk.str_codes("patient_codes")
    return (*(float(c in contractual) for c in CODES), *(float(c in patient) for c in CODES))


@FEATURES.feature("payment.amount", "the payment's amount (cents / 1e7)")
def payment_amount(desk: RemittanceDesk) -> float:
    return money(desk.payment.get("amount"), PAYMENT_MONEY) if desk.payment is not None else 0.0


@FEATURES.feature("payment.reference", "the payment's EFT reference (episode symbol)")
def payment_reference(desk: RemittanceDesk) -> float:
    return desk.sym("reference", desk.payment.get("reference")) if desk.payment is not None else 0.0


@FEATURES.block_family((
    ("listed[{i}].reference", "the {i}-th listed payment's EFT reference (episode symbol)"),
    ("listed[{i}].amount", "the {i}-th listed payment's amount (cents / 1e7)"),
), N_LISTED, count=n_listed)
def listed_values(desk: RemittanceDesk, k: int) -> Sequence[float]:
    o = _listed(desk, k)
    if o is None:
        return 0.0, 0.0
    return desk.sym("reference", o.get("reference")), money(o.get("amount"), PAYMENT_MONEY)


@FEATURES.block_family((
    ("line[{i}].present", "1 if the payment has a line #{i}"),
    ("line[{i}].searched", "1 if line #{i} was searched with search_line"),
    ("line[{i}].is_current", "1 if line #{i} is the current line"),
    ("line[{i}].queried", "1 if the payer was queried ok about line #{i}"),
    ("line[{i}].answered", "1 if wait reported the payer's answer about line #{i}"),
    ("line[{i}].reply_read", "1 if the payer's answer about line #{i} was read (read_reply)"),
), N_LINES, count=n_lines)
def line_values(desk: RemittanceDesk, index: int) -> Sequence[float]:
    if index >= min(len(desk.lines), N_LINES):
        return (0.0,) * 6
    slot = desk.lines[index]
    return (1.0, float(slot.searched), float(index == desk.cur), float(bool(slot.query)),
            float(slot.query in ("answered", "read")), float(slot.query == "read"))


_CUR_RAW = (
    ("cur.ref_kind[claim]", "1 if the current line's claim ref is a CLM-dddddd claim ref"),
    ("cur.ref", "the current line's claim ref digits / 1e6 (0 unless CLM-dddddd)"),
    ("cur.patient", "the current line's patient name (episode symbol)"),
    ("cur.service_date", "the current line's service date (days since 2025-01-01 / 1000)"),
    ("cur.billed", "the current line's billed amount (cents / 1e6)"),
    ("cur.paid", "the current line's paid amount (cents / 1e6)"),
    ("raw:cur.allocated", "cents allocated ok from the current line / 1e6"),
    ("cur.reply_ref", "the claim ref named by the payer's answer read for the current line: digits / 1e6"),
    ("claim.balance", "the current claim's balance as last read (cents / 1e6)"),
)


@FEATURES.block(_CUR_RAW, gate=on_line)
def current_values(desk: RemittanceDesk) -> Sequence[float]:
    ln = desk.current()
    if ln is None:
        return (0.0,) * len(_CUR_RAW)
    line = ln.line
    digits = ref_digits(line.get("claim_ref"))
    return (float(digits is not None), scale(digits, REF_SPAN), desk.sym("name", line.get("patient_name")),
            day(line.get("service_date")), money(line.get("billed_amount")), money(line.get("paid_amount")), money(ln.applied),
            scale(ref_digits(ln.reply.get("claim_ref")), REF_SPAN), money(desk.claim_balance()) if desk.claim is not None else 0.0)


@FEATURES.block_family((
    *((f"cur.adj[{{i}}].code[{c}]", f"1 if the current line's adjustment #{{i}} code is {c}") for c in CODES),
    ("cur.adj[{i}].code[other]", "1 if the current line has an adjustment #{i} with another code"),
    ("cur.adj[{i}].amount", "the current line's adjustment #{i} amount (cents / 1e6)"),
), N_ADJ, gate=on_line)
def adjustment_values(desk: RemittanceDesk, j: int) -> Sequence[float]:
    ln = desk.current()
    adj = ln.adj(j) if ln is not None else None
    if adj is None:
        return (0.0,) * (len(CODES) + 2)
    return (*(float(adj[0] == c) for c in CODES), float(adj[0] not in CODES), money(adj[1]))


@FEATURES.block_family((
    ("hit[{i}].ref", "the {i}-th hit's claim ref digits / 1e6 (0 unless CLM-dddddd)"),
    ("hit[{i}].patient", "the {i}-th hit's patient name (episode symbol)"),
    ("hit[{i}].service_date", "the {i}-th hit's service date (days since 2025-01-01 / 1000)"),
    ("hit[{i}].amount_due", "the {i}-th hit's amount due (cents / 1e6)"),
    ("hit[{i}].balance", "the {i}-th hit's balance as last read (cents / 1e6)"),
), N_HITS, count=n_hits)
def hit_values(desk: RemittanceDesk, i: int) -> Sequence[float]:
    h = _hit(desk, i)
    if h is None:
        return (0.0,) * 5
    return (scale(ref_digits(h.get("claim_ref")), REF_SPAN), desk.sym("name", h.get("patient_name")), day(h.get("service_date")),
            money(h.get("amount_due")), money(h.get("balance")))


__all__ = ["CODES", "FEATURES", "LINE_CASES", "POLICY_NAMES", "REPLY_KINDS", "TOL_FULL"]
