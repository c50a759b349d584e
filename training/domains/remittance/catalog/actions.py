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


def _live(desk: RemittanceDesk) -> bool:
    """Anything but ``submit`` may be legal: the payment is not posted."""
    return not desk.posted


def _named(desk: RemittanceDesk) -> bool:
    """The payment-wide writes: not posted, and the brief names the payment."""
    return not desk.posted and bool(desk.pid)


# -- reads, the duplicate, the post -----------------------------------------------------------------------
@ACTIONS.action("get_policies", "get_policies", "Read the desk's posting policies (one rule document: tolerance, codes, "
                "short payments, unreferenced lines, overpayments, duplicates, case scope).",
                legal=lambda d: _live(d) and d.pol is None)
def get_policies(desk: RemittanceDesk) -> Call:
    return {"tool": "get_policies", "args": {}}


@ACTIONS.action("get_payment", "get_payment", "Read the payment (brief's payment_id) with its remittance lines.",
                legal=lambda d: _live(d) and d.payment is None and bool(d.pid))
def get_payment(desk: RemittanceDesk) -> Call:
    return {"tool": "get_payment", "args": {"payment_id": desk.pid}} if desk.pid else None


@ACTIONS.action("list_payments", "list_payments", "List the payer's payments (brief's payer_id) with the payment's EFT "
                "reference (all of them before get_payment) to spot an already posted duplicate; the next page while pages "
                "remain.", legal=lambda d: _live(d) and d.others is None)
def list_payments(desk: RemittanceDesk) -> Call:
    if desk.pay_cursor:
        return {"tool": "list_payments", "args": {**desk.pay_filter, "cursor": desk.pay_cursor}}
    ref = {"reference": desk.payment["reference"]} if desk.payment is not None else {}
    return {"tool": "list_payments", "args": {"payer_id": desk.payer_id, **ref}}


@ACTIONS.action("more_hits", "search_open_items", "Fetch the next page of the last search's hits (while pages remain).",
                legal=lambda d: _live(d) and d.paging is not None)
def more_hits(desk: RemittanceDesk) -> Call:
    paging = desk.paging
    return {"tool": "search_open_items", "args": {**paging["args"], "cursor": paging["cursor"]}} if paging else None


@ACTIONS.action("wait", "wait", "Wait until the next payer reply is due.", legal=lambda d: _named(d) and d.awaiting())
def wait(desk: RemittanceDesk) -> Call:
    return {"tool": "wait", "args": {}}


@ACTIONS.action("get_case", "get_case", "Read the first answered, unread payer query; its line becomes current.",
                legal=lambda d: _named(d) and d.answered() is not None)
def get_case(desk: RemittanceDesk) -> Call:
    q = desk.answered()
    return {"tool": "get_case", "args": {"case_id": q["id"]}} if q else None


def _payment_case(category: str) -> tuple[Any, Any]:
    def ground(desk: RemittanceDesk) -> Call:
        if not desk.pid:
            return None
        return {"tool": "open_case", "args": {"payment_id": desk.pid, "category": category, "line_id": "",
                                              "note": "This EFT reference and amount were already posted."}}
    return ground, lambda d: _named(d) and category not in d.payment_cases


for _name, _category, _doc in (("case_duplicate", PAYMENT_CASE_ACTIONS["case_duplicate"],
                                "Open a duplicate_remittance case for the whole payment."),
                               ("case_duplicate_refund", PAYMENT_CASE_ACTIONS["case_duplicate_refund"],
                                "Open a refund_request case for the whole payment (no line).")):
    _g, _l = _payment_case(_category)
    ACTIONS.action(_name, "open_case", _doc, legal=_l)(_g)


def _post(disposition: str) -> Any:
    def ground(desk: RemittanceDesk) -> Call:
        return {"tool": "post_payment", "args": {"payment_id": desk.pid, "disposition": disposition}} if desk.pid else None
    return ground


ACTIONS.action("post_apply", "post_payment", "Post the payment with disposition apply.", legal=_named)(_post("apply"))
for _d in ("hold", "return"):
    ACTIONS.action(f"post_{_d}", "post_payment", f"Post the payment with disposition {_d} (no active allocations).",
                   legal=lambda d: _named(d) and not d.any_applied())(_post(_d))


@ACTIONS.action("submit", "submit", "Finish the episode (always one native submit call).")
def submit(desk: RemittanceDesk) -> Call:
    return {"tool": "submit", "args": {}}


# -- the current line: searches, cases, query -----------------------------------------------------------------
def on_a_line(desk: RemittanceDesk) -> bool:
    """What every line action needs first (its legality's gate): a current line, the payment
    named and not posted."""
    return desk.open_line() is not None


def lines_read(desk: RemittanceDesk) -> int:
    return len(desk.lines)


def _line_action(fn: Any) -> Any:
    """A line action's grounding: ``fn(desk, line)`` once the brief names the payment and there is
    a current line."""
    def ground(desk: RemittanceDesk, *args: Any) -> Call:
        ln = desk.current()
        if not desk.pid or ln is None:
            return None
        return fn(desk, ln, *args)
    return ground


def _on_line(legal: Any) -> Any:
    """A line action's legality: not posted, a named payment, a current line, and ``legal(desk, line)``."""
    def check(desk: RemittanceDesk, *args: Any) -> bool:
        ln = desk.open_line()
        return ln is not None and bool(legal(desk, ln, *args))
    return check


@ACTIONS.action("search_next_line", "search_open_items", "Search the claim ref of the next unsearched line (its patient name "
                "if it has no ref); that line becomes current.", legal=lambda d: _named(d) and d.started < len(d.lines))
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
               legal=lambda d: _named(d) and any(not ln.searched for ln in d.lines))(
    lambda d: _search(d, sum(ln.searched for ln in d.lines)))
ACTIONS.family("search_line[{i}]", N_LINES, "search_open_items",
               "Search line #{i}'s claim ref (its patient name if it has no ref); line #{i} becomes current (no current "
               "claim).", count=lines_read, legal=lambda d, i: _named(d) and i < len(d.lines) and not d.lines[i].searched)(_search)


@derived
def line_actions(desk: RemittanceDesk) -> frozenset[str]:
    """The actions on the current line legal now, in one pass a step (registered names): a
    name search (the conclusions tier's while the match is undetermined, the other tiers' once),
    a payer query while none awaits its reply, a case of each category not yet covering the line,
    the hits not already the current claim."""
    ln = desk.open_line()
    if ln is None:
        return frozenset()
    legal = []
    if ln.status == "unknown" and not ln.name_done:
        legal.append("search_by_name")
    if not ln.name_searched and ln.line.get("patient_name"):
        legal.append("tiers:search_by_name")
    if not desk.awaiting(ln):
        legal.append("query_payer")
    legal += [name for name, category in CASE_ACTIONS.items() if not desk.covered(ln, category)]
    current = desk.claim.get("id") if desk.claim is not None else None
    legal += [f"open_hit[{i}]" for i, h in enumerate(ln.hits[:N_HITS]) if h.get("id") != current]
    return frozenset(legal)


def _by_name(desk: RemittanceDesk, ln: Line) -> Call:
    return {"tool": "search_open_items", "args": {"query": ln.line["patient_name"]}}


ACTIONS.action("search_by_name", "search_open_items", "Search the current line's patient name (while its match is "
               "undetermined).", legal=InTable(line_actions, "search_by_name"))(_line_action(_by_name))
ACTIONS.action("tiers:search_by_name", "search_open_items", "Search the current line's patient name (once per line).",
               legal=InTable(line_actions, "tiers:search_by_name"))(
    _line_action(lambda d, ln: _by_name(d, ln) if ln.line.get("patient_name") else None))


def _query(desk: RemittanceDesk, ln: Line) -> Call:
    return {"tool": "query_payer", "args": {"payment_id": desk.pid, "line_id": ln.line.get("id", ""),
            "question": f"Line {ln.line.get('line_no')} ({ln.line.get('claim_ref')}): which claim does it pay?"}}


ACTIONS.action("query_payer", "query_payer", "Ask the payer about the current line (opens a payer query).",
               legal=InTable(line_actions, "query_payer"))(_line_action(_query))


def _line_case(category: str) -> Any:
    def fn(desk: RemittanceDesk, ln: Line) -> Call:
        line_id = "" if desk.per_payment() else ln.line.get("id", "")
        return {"tool": "open_case", "args": {"payment_id": desk.pid, "category": category, "line_id": line_id,
                                              "note": CASE_NOTES[category]}}
    return fn


for _name, _category in CASE_ACTIONS.items():
    ACTIONS.action(_name, "open_case", f"Open a {_category} case for the current line (for the whole payment, no line, when "
                   "the desk's case_scope is payment).",
                   legal=InTable(line_actions, _name))(_line_action(_line_case(_category)))


# -- the conclusions tier's claim writes: the matched claim ------------------------------------------------
def _matched(legal: Any) -> Any:
    return _on_line(lambda d, ln, *a: ln.status == "matched" and ln.item is not None and legal(d, ln, *a))


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


def _matched_adj_legal(desk: RemittanceDesk, ln: Line, j: int) -> bool:
    adj = desk.pending_adj(ln, j)
    return adj is not None and 1 <= adj[1] <= desk.item_balance(ln)


for _tool, _family, _doc in (("write_off", "write_off_adj", "Write off the current line's adjustment #{i} (its code and "
                                                            "amount) on the line's claim with reason contractual."),
                             ("transfer_to_patient", "transfer_adj", "Move the current line's adjustment #{i} (its code "
                                                                     "and amount) from the line's claim to the patient.")):
    ACTIONS.family(f"{_family}[{{i}}]", N_ADJ, _tool, _doc, gate=on_a_line, legal=_matched(_matched_adj_legal))(
        _line_action(_matched_adj(_tool)))


def _allocate(desk: RemittanceDesk, ln: Line, amount: int) -> Call:
    if ln.item is None or amount <= 0:
        return None
    return {"tool": "allocate", "args": {"payment_id": desk.pid, "line_id": ln.line["id"], "item_id": ln.item["id"],
                                         "amount": amount}}


ACTIONS.action("allocate", "allocate", "Apply the current line to its claim: min(line paid - already applied, claim balance "
               "now).", gate=on_a_line, legal=_matched(lambda d, ln: 0 < d.alloc_amount(ln) <= d.unapplied))(
    _line_action(lambda d, ln: _allocate(d, ln, d.alloc_amount(ln))))
ACTIONS.action("allocate_whole", "allocate", "Apply what the current line paid and is not applied yet to its claim, whatever "
               "its balance (an overpayment puts the claim in credit).",
               gate=on_a_line, legal=_matched(lambda d, ln: 0 < d.unapplied_paid(ln) <= d.unapplied))(
    _line_action(lambda d, ln: _allocate(d, ln, d.unapplied_paid(ln))))


def _small(desk: RemittanceDesk, item_id: Any, balance: int, line_id: Any) -> Call:
    if balance < 1:
        return None
    return {"tool": "write_off", "args": {"item_id": item_id, "amount": balance, "reason": "small_balance", "code": "",
                                          "line_id": line_id}}


ACTIONS.action("write_off_small", "write_off", "Write off the current claim's whole current balance with reason small_balance.",
               gate=on_a_line, legal=_matched(lambda d, ln: d.item_balance(ln) > 0))(
    _line_action(lambda d, ln: None if ln.item is None else _small(d, ln.item["id"], d.item_balance(ln), ln.line["id"])))


# -- the facts and raw tiers' claim writes: the current claim -------------------------------------------------
for _i in range(N_HITS):
    ACTIONS.add(Action(f"open_hit[{_i}]", "get_open_item", f"Read the {_i}-th hit of the current line's last search "
                       "(get_open_item); it becomes the current claim every claim write goes to.",
                       _line_action(lambda d, ln, i: {"tool": "get_open_item", "args": {"item_id": ln.hits[i]["id"]}}
                                    if i < len(ln.hits) else None),
                       InTable(line_actions, f"open_hit[{_i}]"), (_i,)))



def _current_adj(tool: str) -> Any:
    def fn(desk: RemittanceDesk, ln: Line, j: int) -> Call:
        if desk.claim is None:
            return None
        return _write_adj(tool, desk, ln, ln.adj(j), desk.claim["id"])
    return fn


@derived
def claim_writes(desk: RemittanceDesk) -> frozenset[str]:
    """The facts and raw tiers' writes legal on the current claim now, in one pass a step: an
    adjustment not yet written of at most the balance (a transfer only off an insurer item), an
    allocation of at most the unapplied amount and the line's unallocated paid amount to an
    insurer item, a small write-off of a positive balance."""
    ln = desk.open_line()
    if ln is None or desk.claim is None:
        return frozenset()
    bal, payer_item = desk.claim_balance(), desk.payer_item()
    legal = []
    for j in range(N_ADJ):
        adj = ln.adj(j)
        if adj is not None and j not in ln.used_adj and 1 <= adj[1] <= bal:
            legal += [f"write_off_adj[{j}]", *([f"transfer_adj[{j}]"] if payer_item else [])]
    paid = int(ln.line.get("paid_amount") or 0)
    for key, amount in (("line_paid", paid), ("claim_balance", bal)):
        if payer_item and 1 <= amount <= desk.unapplied and ln.applied + amount <= paid:
            legal.append(f"allocate[{key}]")
    if bal >= 1:
        legal.append("write_off_small")
    return frozenset(legal)


def _in_claim_writes(name: str) -> InTable:
    return InTable(claim_writes, name)


for _tool, _family, _doc in (
        ("write_off", "write_off_adj", "Write off the current line's adjustment #{i} (its code and amount) on the current "
                                       "claim, reason contractual."),
        ("transfer_to_patient", "transfer_adj", "Move the current line's adjustment #{i} (its code and amount) from the "
                                                "current claim to the patient.")):
    for _j in range(N_ADJ):
        ACTIONS.add(Action(f"tiers:{_family}[{_j}]", _tool, _doc.format(i=_j), _line_action(_current_adj(_tool)),
                           _in_claim_writes(f"{_family}[{_j}]"), (_j,), gate=on_a_line))


def _amount_of(key: str) -> Any:
    def amount(desk: RemittanceDesk, ln: Line) -> int:
        return int(ln.line.get("paid_amount") or 0) if key == "line_paid" else desk.claim_balance()
    return amount


for _key, _doc in (("line_paid", "Apply the current line's paid amount to the current claim."),
                   ("claim_balance", "Apply the current claim's balance (as last read) from the current line.")):
    _amt = _amount_of(_key)
    ACTIONS.action(f"allocate[{_key}]", "allocate", _doc,
                   gate=on_a_line, legal=_in_claim_writes(f"allocate[{_key}]"))(
        _line_action(lambda d, ln, a=_amt: None if d.claim is None or a(d, ln) < 1 else {
            "tool": "allocate", "args": {"payment_id": d.pid, "line_id": ln.line.get("id", ""), "item_id": d.claim["id"],
                                         "amount": a(d, ln)}}))
ACTIONS.action("tiers:write_off_small", "write_off", "Write off the current claim's whole balance (as last read), reason "
               "small_balance.", gate=on_a_line, legal=_in_claim_writes("write_off_small"))(
    _line_action(lambda d, ln: None if d.claim is None else _small(d, d.claim["id"], d.claim_balance(), ln.line.get("id", ""))))
ACTIONS.family("read_reply[{i}]", N_LINES, "get_case", "Read the payer's answered reply about line #{i} (get_case); line #{i} "
               "becomes current again (no current claim), its last search's hits shown.", count=lines_read,
               legal=lambda d, i: _named(d) and any(q["line"] == i and q["state"] == "answered" for q in d.queries))(
    lambda d, i: next(({"tool": "get_case", "args": {"case_id": q["id"]}} for q in d.queries
                       if q["line"] == i and q["state"] == "answered"), None))



__all__ = ["ACTIONS"]
