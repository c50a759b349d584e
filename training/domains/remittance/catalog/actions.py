"""Every action of every remittance tier: how it grounds one native call from the desk and when it
is legal.

Mask: legality only.
- (a) an action needs its arguments: line actions need a current line, claim writes a claim (the
  conclusions tier's matched claim, the other tiers' current claim), adjustment slots an
  adjustment of that index, amounts must be >= 1, a reply read an answered query, a line search
  an unsearched line of the read payment;
- (b) reads are not repeated once answered (the three reads once their last page came back; a
  name search once per line, in the conclusions tier only while the line's match is
  undetermined);
- (c) calls the tool would reject from what was observed: an allocation beyond the unapplied
  amount or the line's unallocated paid amount, a write-off or transfer beyond the claim's
  balance, a second case of the same category on the same line, a second query while one awaits
  its reply, ``wait`` with no reply pending, hold or return with active allocations, a second
  write of the same remittance adjustment;
- (d) after ``post_payment`` succeeded the payment is final: only ``submit``.

Amounts are grounded by arithmetic on what was read, never by the desk's policy. The conclusions
tier's ``allocate`` applies ``min(line paid - applied, claim balance)``; the other tiers'
``allocate[line_paid]`` / ``allocate[claim_balance]`` apply one of two values read. A line case
names its line, or no line when the desk's ``case_scope`` is ``payment``.

Where the conclusions tier and the other tiers give one name two groundings or legalities (a
write goes to the matched claim or to the current claim), the other tiers' is registered as
``tiers:<name>`` and shown under ``<name>`` (:func:`shown_as`).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from backoffice.training.catalog.features import Action, Actions, InTable, derived
from backoffice.training.domains.remittance.catalog.desk import (
    CASE_ACTIONS,
    CASE_NOTES,
    N_ADJ,
    N_HITS,
    N_LINES,
    PAYMENT_CASE_ACTIONS,
    Line,
    RemittanceDesk,
)

ACTIONS: Actions[RemittanceDesk] = Actions()

Call = dict[str, Any] | None


_NONE: frozenset[str] = frozenset()
SEARCH_LINE = tuple(f"search_line[{i}]" for i in range(N_LINES))
READ_REPLY = tuple(f"read_reply[{i}]" for i in range(N_LINES))
OPEN_HIT = tuple(f"open_hit[{i}]" for i in range(N_HITS))


# -- legality: a table of the legal names per group of actions, computed once a step -------------------
# Each table reads the desk once for its group (the mask builder then checks membership,
# :class:`InTable`); an action's ``legal(desk)`` reads the same table.
@derived
def desk_actions(desk: RemittanceDesk) -> Set[str]:
    """Every tier's actions legal now but the line slots and the claim writes: nothing once
    posted; each read until its last page came back (the payment only if the brief names it),
    ``more_hits`` while a search has pages left; with the payment named: ``wait`` while a query
    awaits its reply, ``get_case`` while a reply is unread, a payment case not opened yet,
    ``post_apply``, hold or return with no active allocation, the next line's search while a
    line is unsearched; on a current line, a case its category does not cover yet and a query
    unless one awaits its reply."""
    if desk.posted:
        return _NONE
    legal: set[str] = set()
    add = legal.add
    if desk.pol is None:
        add("get_policies")
    if desk.others is None:
        add("list_payments")
    if desk.paging is not None:
        add("more_hits")
    if not desk.pid:
        return legal
    if desk.payment is None:
        add("get_payment")
    # (each loop is skipped where it has nothing to look at: this runs every step)
    queries, lines, cases = desk.queries, desk.lines, desk.payment_cases
    if queries:
        if desk.awaiting():
            add("wait")
        if desk.answered() is not None:
            add("get_case")
    if cases:
        for name, category in PAYMENT_CASE_ACTIONS.items():
            if category not in cases:
                add(name)
    else:
        legal.update(PAYMENT_CASE_ACTIONS)
    add("post_apply")
    if not (lines and desk.any_applied()):
        add("post_hold")
        add("post_return")
    if not lines:
        return legal
    if desk.started < len(lines):
        add("search_next_line")
    for line in lines:
        if not line.searched:
            add("tiers:search_next_line")
            break
    ln = desk.open_line()
    if ln is not None:
        for name, category in CASE_ACTIONS.items():
            if not desk.covered(ln, category):
                add(name)
        if not (queries and desk.awaiting(ln)):
            add("query_payer")
    return legal


@derived
def line_slots(desk: RemittanceDesk) -> Set[str]:
    """The raw tier's line slots legal now (the payment named and not posted): the search of a
    line not searched yet, the read of a line's answered reply."""
    if desk.posted or not desk.pid:
        return _NONE
    legal = {SEARCH_LINE[i] for i, ln in enumerate(desk.lines[:N_LINES]) if not ln.searched}
    legal.update(READ_REPLY[q["line"]] for q in desk.queries if q["state"] == "answered" and q["line"] < N_LINES)
    return legal


@derived
def matched_line(desk: RemittanceDesk) -> Set[str]:
    """The conclusions tier's actions on the current line legal now (a current line, the payment
    named and not posted): the name search while the line's match is undetermined and its name
    not searched; on the matched claim, an adjustment not handled yet of at most the claim's
    balance, an allocation of ``min(paid - applied, balance)`` or of the whole unapplied paid
    amount of at most the payment's unapplied amount, a small write-off of a positive balance."""
    ln = desk.open_line()
    if ln is None:
        return _NONE
    legal: set[str] = set()
    if ln.status == "unknown" and not ln.name_done:
        legal.add("search_by_name")
    if ln.status != "matched" or ln.item is None:
        return legal
    bal = desk.item_balance(ln)
    for j in range(N_ADJ):
        adj = desk.pending_adj(ln, j)
        if adj is not None and 1 <= adj[1] <= bal:
            legal.update((f"write_off_adj[{j}]", f"transfer_adj[{j}]"))
    if 0 < desk.alloc_amount(ln) <= desk.unapplied:
        legal.add("allocate")
    if 0 < desk.unapplied_paid(ln) <= desk.unapplied:
        legal.add("allocate_whole")
    if bal > 0:
        legal.add("write_off_small")
    return legal


@derived
def claim_line(desk: RemittanceDesk) -> Set[str]:
    """The facts and raw tiers' actions on the current line legal now (a current line, the
    payment named and not posted; shown names): the name search once per line (the line has a
    name); opening any hit of its last search but the current claim; on the current claim, an
    adjustment not yet written of at most the balance (a transfer only off an insurer item), an
    allocation of at most the unapplied amount and the line's unallocated paid amount to an
    insurer item, a small write-off of a positive balance."""
    ln = desk.open_line()
    if ln is None:
        return _NONE
    legal: set[str] = set()
    if not ln.name_searched and ln.line.get("patient_name"):
        legal.add("search_by_name")
    claim = desk.claim
    current = claim.get("id") if claim is not None else None
    for i, h in enumerate(ln.hits[:N_HITS]):
        if h.get("id") != current:
            legal.add(OPEN_HIT[i])
    if claim is None:
        return legal
    bal, payer_item = desk.claim_balance(), desk.payer_item()
    for j in range(N_ADJ):
        adj = ln.adj(j)
        if adj is not None and j not in ln.used_adj and 1 <= adj[1] <= bal:
            legal.add(f"write_off_adj[{j}]")
            if payer_item:
                legal.add(f"transfer_adj[{j}]")
    paid = int(ln.line.get("paid_amount") or 0)
    for key, amount in (("line_paid", paid), ("claim_balance", bal)):
        if payer_item and 1 <= amount <= desk.unapplied and ln.applied + amount <= paid:
            legal.add(f"allocate[{key}]")
    if bal >= 1:
        legal.add("write_off_small")
    return legal


def _in(table: Any, name: str) -> InTable:
    return InTable(table, name)


# -- reads, the duplicate, the post -----------------------------------------------------------------------
@ACTIONS.action("get_policies", "get_policies", "Read the desk's posting policies (one rule document: tolerance, codes, "
                "short payments, unreferenced lines, overpayments, duplicates, case scope).",
                legal=_in(desk_actions, "get_policies"))
def get_policies(desk: RemittanceDesk) -> Call:
    return {"tool": "get_policies", "args": {}}


@ACTIONS.action("get_payment", "get_payment", "Read the payment (brief's payment_id) with its remittance lines.",
                legal=_in(desk_actions, "get_payment"))
def get_payment(desk: RemittanceDesk) -> Call:
    return {"tool": "get_payment", "args": {"payment_id": desk.pid}} if desk.pid else None


@ACTIONS.action("list_payments", "list_payments", "List the payer's payments (brief's payer_id) with the payment's EFT "
                "reference (all of them before get_payment) to spot an already posted duplicate; the next page while pages "
                "remain.", legal=_in(desk_actions, "list_payments"))
def list_payments(desk: RemittanceDesk) -> Call:
    if desk.pay_cursor:
        return {"tool": "list_payments", "args": {**desk.pay_filter, "cursor": desk.pay_cursor}}
    ref = {"reference": desk.payment["reference"]} if desk.payment is not None else {}
    return {"tool": "list_payments", "args": {"payer_id": desk.payer_id, **ref}}


@ACTIONS.action("more_hits", "search_open_items", "Fetch the next page of the last search's hits (while pages remain).",
                legal=_in(desk_actions, "more_hits"))
def more_hits(desk: RemittanceDesk) -> Call:
    paging = desk.paging
    return {"tool": "search_open_items", "args": {**paging["args"], "cursor": paging["cursor"]}} if paging else None


@ACTIONS.action("wait", "wait", "Wait until the next payer reply is due.", legal=_in(desk_actions, "wait"))
def wait(desk: RemittanceDesk) -> Call:
    return {"tool": "wait", "args": {}}


@ACTIONS.action("get_case", "get_case", "Read the first answered, unread payer query; its line becomes current.",
                legal=_in(desk_actions, "get_case"))
def get_case(desk: RemittanceDesk) -> Call:
    q = desk.answered()
    return {"tool": "get_case", "args": {"case_id": q["id"]}} if q else None


def _payment_case(category: str) -> Any:
    def ground(desk: RemittanceDesk) -> Call:
        if not desk.pid:
            return None
        return {"tool": "open_case", "args": {"payment_id": desk.pid, "category": category, "line_id": "",
                                              "note": "This EFT reference and amount were already posted."}}
    return ground


for _name, _doc in (("case_duplicate", "Open a duplicate_remittance case for the whole payment."),
                    ("case_duplicate_refund", "Open a refund_request case for the whole payment (no line).")):
    ACTIONS.action(_name, "open_case", _doc, legal=_in(desk_actions, _name))(_payment_case(PAYMENT_CASE_ACTIONS[_name]))


def _post(disposition: str) -> Any:
    def ground(desk: RemittanceDesk) -> Call:
        return {"tool": "post_payment", "args": {"payment_id": desk.pid, "disposition": disposition}} if desk.pid else None
    return ground


ACTIONS.action("post_apply", "post_payment", "Post the payment with disposition apply.",
               legal=_in(desk_actions, "post_apply"))(_post("apply"))
for _d in ("hold", "return"):
    ACTIONS.action(f"post_{_d}", "post_payment", f"Post the payment with disposition {_d} (no active allocations).",
                   legal=_in(desk_actions, f"post_{_d}"))(_post(_d))


@ACTIONS.action("submit", "submit", "Finish the episode (always one native submit call).")
def submit(desk: RemittanceDesk) -> Call:
    return {"tool": "submit", "args": {}}


# -- the current line: searches, cases, query -----------------------------------------------------------------
def _line_action(fn: Any) -> Any:
    """A line action's grounding: ``fn(desk, line)`` once the brief names the payment and there is
    a current line."""
    def ground(desk: RemittanceDesk, *args: Any) -> Call:
        ln = desk.current()
        if not desk.pid or ln is None:
            return None
        return fn(desk, ln, *args)
    return ground


@ACTIONS.action("search_next_line", "search_open_items", "Search the claim ref of the next unsearched line (its patient name "
                "if it has no ref); that line becomes current.", legal=_in(desk_actions, "search_next_line"))
def search_next_line(desk: RemittanceDesk) -> Call:
    if desk.started >= len(desk.lines):
        return None
    line = desk.lines[desk.started].line
    return {"tool": "search_open_items", "args": {"query": line["claim_ref"] or line["patient_name"]}}


def _search(desk: RemittanceDesk, index: int) -> Call:
    if index >= len(desk.lines):
        return None
    line = desk.lines[index].line
    query = line.get("claim_ref") or line.get("patient_name")
    return {"tool": "search_open_items", "args": {"query": query}} if query else None


ACTIONS.action("tiers:search_next_line", "search_open_items",
               "Search the claim ref of the next unsearched line in line order (its patient name if it has no ref); that "
               "line becomes current (no current claim).",
               legal=_in(desk_actions, "tiers:search_next_line"))(lambda d: _search(d, sum(ln.searched for ln in d.lines)))
for _i in range(N_LINES):
    ACTIONS.add(Action(SEARCH_LINE[_i], "search_open_items", f"Search line #{_i}'s claim ref (its patient name if it has no "
                       f"ref); line #{_i} becomes current (no current claim).", _search, _in(line_slots, SEARCH_LINE[_i]), (_i,)))


def _by_name(desk: RemittanceDesk, ln: Line) -> Call:
    return {"tool": "search_open_items", "args": {"query": ln.line["patient_name"]}}


ACTIONS.action("search_by_name", "search_open_items", "Search the current line's patient name (while its match is "
               "undetermined).", legal=_in(matched_line, "search_by_name"))(_line_action(_by_name))
ACTIONS.action("tiers:search_by_name", "search_open_items", "Search the current line's patient name (once per line).",
               legal=_in(claim_line, "search_by_name"))(
    _line_action(lambda d, ln: _by_name(d, ln) if ln.line.get("patient_name") else None))


def _query(desk: RemittanceDesk, ln: Line) -> Call:
    return {"tool": "query_payer", "args": {"payment_id": desk.pid, "line_id": ln.line.get("id", ""),
            "question": f"Line {ln.line.get('line_no')} ({ln.line.get('claim_ref')}): which claim does it pay?"}}


ACTIONS.action("query_payer", "query_payer", "Ask the payer about the current line (opens a payer query).",
               legal=_in(desk_actions, "query_payer"))(_line_action(_query))


def _line_case(category: str) -> Any:
    def fn(desk: RemittanceDesk, ln: Line) -> Call:
        line_id = "" if desk.per_payment() else ln.line.get("id", "")
        return {"tool": "open_case", "args": {"payment_id": desk.pid, "category": category, "line_id": line_id,
                                              "note": CASE_NOTES[category]}}
    return fn


for _name, _category in CASE_ACTIONS.items():
    ACTIONS.action(_name, "open_case", f"Open a {_category} case for the current line (for the whole payment, no line, when "
                   "the desk's case_scope is payment).",
                   legal=_in(desk_actions, _name))(_line_action(_line_case(_category)))


# -- the conclusions tier's claim writes: the matched claim ------------------------------------------------
def _write_adj(tool: str, desk: RemittanceDesk, ln: Line, adj: tuple[str, int] | None, item_id: Any) -> Call:
    if adj is None or adj[1] < 1:
        return None
    code, amount = adj
    if tool == "write_off":
        return {"tool": "write_off", "args": {"item_id": item_id, "amount": amount, "reason": "contractual", "code": code,
                                              "line_id": ln.line.get("id", "")}}
    return {"tool": "transfer_to_patient", "args": {"item_id": item_id, "amount": amount, "code": code,
                                                    "line_id": ln.line.get("id", "")}}


def _matched_adj(tool: str) -> Any:
    def fn(desk: RemittanceDesk, ln: Line, j: int) -> Call:
        if ln.item is None:
            return None
        return _write_adj(tool, desk, ln, desk.pending_adj(ln, j), ln.item["id"])
    return fn


for _tool, _family, _doc in (("write_off", "write_off_adj", "Write off the current line's adjustment #{i} (its code and "
                                                            "amount) on the line's claim with reason contractual."),
                             ("transfer_to_patient", "transfer_adj", "Move the current line's adjustment #{i} (its code "
                                                                     "and amount) from the line's claim to the patient.")):
    for _j in range(N_ADJ):
        ACTIONS.add(Action(f"{_family}[{_j}]", _tool, _doc.format(i=_j), _line_action(_matched_adj(_tool)),
                           _in(matched_line, f"{_family}[{_j}]"), (_j,)))


def _allocate(desk: RemittanceDesk, ln: Line, amount: int) -> Call:
    if ln.item is None or amount <= 0:
        return None
    return {"tool": "allocate", "args": {"payment_id": desk.pid, "line_id": ln.line["id"], "item_id": ln.item["id"],
                                         "amount": amount}}


ACTIONS.action("allocate", "allocate", "Apply the current line to its claim: min(line paid - already applied, claim balance "
               "now).", legal=_in(matched_line, "allocate"))(
    _line_action(lambda d, ln: _allocate(d, ln, d.alloc_amount(ln))))
ACTIONS.action("allocate_whole", "allocate", "Apply what the current line paid and is not applied yet to its claim, whatever "
               "its balance (an overpayment puts the claim in credit).",
               legal=_in(matched_line, "allocate_whole"))(
    _line_action(lambda d, ln: _allocate(d, ln, d.unapplied_paid(ln))))


def _small(desk: RemittanceDesk, item_id: Any, balance: int, line_id: Any) -> Call:
    if balance < 1:
        return None
    return {"tool": "write_off", "args": {"item_id": item_id, "amount": balance, "reason": "small_balance", "code": "",
                                          "line_id": line_id}}


ACTIONS.action("write_off_small", "write_off", "Write off the current claim's whole current balance with reason small_balance.",
               legal=_in(matched_line, "write_off_small"))(
    _line_action(lambda d, ln: None if ln.item is None else _small(d, ln.item["id"], d.item_balance(ln), ln.line["id"])))


# -- the facts and raw tiers' claim writes: the current claim -------------------------------------------------
for _i in range(N_HITS):
    ACTIONS.add(Action(OPEN_HIT[_i], "get_open_item", f"Read the {_i}-th hit of the current line's last search "
                       "(get_open_item); it becomes the current claim every claim write goes to.",
                       _line_action(lambda d, ln, i: {"tool": "get_open_item", "args": {"item_id": ln.hits[i]["id"]}}
                                    if i < len(ln.hits) else None), _in(claim_line, OPEN_HIT[_i]), (_i,)))


def _current_adj(tool: str) -> Any:
    def fn(desk: RemittanceDesk, ln: Line, j: int) -> Call:
        if desk.claim is None:
            return None
        return _write_adj(tool, desk, ln, ln.adj(j), desk.claim["id"])
    return fn


for _tool, _family, _doc in (
        ("write_off", "write_off_adj", "Write off the current line's adjustment #{i} (its code and amount) on the current "
                                       "claim, reason contractual."),
        ("transfer_to_patient", "transfer_adj", "Move the current line's adjustment #{i} (its code and amount) from the "
                                                "current claim to the patient.")):
    for _j in range(N_ADJ):
        ACTIONS.add(Action(f"tiers:{_family}[{_j}]", _tool, _doc.format(i=_j), _line_action(_current_adj(_tool)),
                           _in(claim_line, f"{_family}[{_j}]"), (_j,)))


def _amount_of(key: str) -> Any:
    def amount(desk: RemittanceDesk, ln: Line) -> int:
        return int(ln.line.get("paid_amount") or 0) if key == "line_paid" else desk.claim_balance()
    return amount


for _key, _doc in (("line_paid", "Apply the current line's paid amount to the current claim."),
                   ("claim_balance", "Apply the current claim's balance (as last read) from the current line.")):
    _amt = _amount_of(_key)
    ACTIONS.action(f"allocate[{_key}]", "allocate", _doc, legal=_in(claim_line, f"allocate[{_key}]"))(
        _line_action(lambda d, ln, a=_amt: None if d.claim is None or a(d, ln) < 1 else {
            "tool": "allocate", "args": {"payment_id": d.pid, "line_id": ln.line.get("id", ""), "item_id": d.claim["id"],
                                         "amount": a(d, ln)}}))
ACTIONS.action("tiers:write_off_small", "write_off", "Write off the current claim's whole balance (as last read), reason "
               "small_balance.", legal=_in(claim_line, "write_off_small"))(
    _line_action(lambda d, ln: None if d.claim is None else _small(d, d.claim["id"], d.claim_balance(), ln.line.get("id", ""))))


def _read_reply(desk: RemittanceDesk, i: int) -> Call:
    return next(({"tool": "get_case", "args": {"case_id": q["id"]}} for q in desk.queries
                 if q["line"] == i and q["state"] == "answered"), None)


for _i in range(N_LINES):
    ACTIONS.add(Action(READ_REPLY[_i], "get_case", f"Read the payer's answered reply about line #{_i} (get_case); line #{_i} "
                       "becomes current again (no current claim), its last search's hits shown.", _read_reply,
                       _in(line_slots, READ_REPLY[_i]), (_i,)))


__all__ = ["ACTIONS"]
