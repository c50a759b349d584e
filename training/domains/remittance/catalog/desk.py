"""The remittance catalog's one observation state: what the clerk has read of the payment, its
lines and their claims, and the helpers every tier grounds its calls, decides legality and
computes its features with.

The desk keeps the brief, the policies and the payer's payments (every page), the payment and its
lines, the current line, the searches (a search's hits count once its last page is in), the
payer queries, the cases, the allocations and the post. Each line (:class:`Line`) keeps what both
ways of working a line need:

- the conclusions tier's: the match rule's verdict on the line (``status``, the matched
  ``item``; a ref search settles a unique match, a name search decides matched / ambiguous / no
  claim, a payer reply naming one of the name search's claims matches it), the adjustments
  handled, the small-balance write-off, the query;
- the facts and raw tiers': the last search's hits, the adjustments written off or transferred,
  the query's state and the reply read. Their claim writes go to the *current claim*, the hit
  the agent opened (``claim``).

Result rows are copied, never kept live. Raw's episode symbols (``symbols``) name each value in
the order it was first observed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from backoffice.envs.remittance.tables import DUPLICATE_ACTIONS, norm, osa_distance
from backoffice.training.catalog.features import Desk, derived

#: adjustment slots per line (generated lines carry at most two adjustments)
N_ADJ = 2
#: hit slots: the current line's last search results (at most 7 in the release)
N_HITS = 8
#: listed-payment slots (``list_payments`` by the payment's reference: at most 2 in the release)
N_LISTED = 4
#: raw: line slots (a payment has at most 6 lines in the release)
N_LINES = 6
#: raw: symbols are ``k / N_SYMBOLS`` (the k-th distinct value of its kind seen this episode)
N_SYMBOLS = 64
#: line case categories (one per line, or one per payment under case_scope payment)
LINE_CASES = ("underpayment", "refund_request", "unidentified_remittance")
#: the payment-wide cases by action
PAYMENT_CASE_ACTIONS = {"case_duplicate": "duplicate_remittance", "case_duplicate_refund": "refund_request"}
#: a line case's category by action, and its note
CASE_ACTIONS = {"case_underpayment": "underpayment", "case_refund": "refund_request", "case_unidentified": "unidentified_remittance"}
CASE_NOTES = {"underpayment": "The line leaves part of its claim open.",
              "refund_request": "The line pays more than the claim's balance; please refund or recoup the excess.",
              "unidentified_remittance": "No claim matches this line."}
T = TypeVar("T")
_ADJ_ACTIONS = ("write_off_adj[", "transfer_adj[", "tiers:write_off_adj[", "tiers:transfer_adj[")


def policy_values(document: Mapping[str, Any]) -> dict[str, Any]:
    """The desk's policy values from ``get_policies``' rule document: rule id -> ``value``."""
    return {str(r.get("id")): r.get("value") for r in document.get("rules") or () if isinstance(r, Mapping)}


def slot_of(name: str) -> int:
    """``j`` of an action named ``...[j]``."""
    return int(name[name.rindex("[") + 1:-1])


class Line:
    """What the agent knows about one remittance line."""

    def __init__(self, line: Mapping[str, Any]):
        self.line = dict(line)
        self.applied = 0  # cents allocated from the line this episode
        self.cases: set[str] = set()
        # the conclusions tier's
        self.ref_done = False
        self.name_done = False
        self.status = "unknown"  # unknown | matched | ambiguous | none | recoup
        self.item: dict[str, Any] | None = None
        self.demo: list[dict[str, Any]] = []
        self.done_adj: set[int] = set()
        self.small_wo = False
        self.queried = False
        # the facts and raw tiers'
        self.searched = False  # its first search (by ref, or by name without a ref) came back
        self.name_searched = False
        self.by_name = False  # the hits shown are those of a name search
        self.hits: list[dict[str, Any]] = []  # the last search's hits, balances kept current
        self.used_adj: dict[int, str] = {}  # adjustment index -> "write_off" | "transfer"
        self.query: str = ""  # "" | awaiting | answered | read
        self.reply: dict[str, Any] = {}  # the answered query read with get_case

    def adj(self, j: int) -> tuple[str, int] | None:
        """The line's adjustment ``j``: code and amount (``None``: no such adjustment)."""
        codes, amts = self.line.get("adj_codes") or [], self.line.get("adj_amounts") or []
        return (str(codes[j]), int(amts[j])) if j < len(codes) and j < len(amts) else None


class RemittanceDesk(Desk):
    """What the agent has read of its payment and done on it."""

    def __init__(self) -> None:
        super().__init__()
        self._of_policies: dict[str, tuple[Any, Any]] = {}  # see per_policies (kept across episodes)

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        params = brief.get("params") or {}
        self.pid: str = str(params.get("payment_id", ""))
        self.payer_id: str = str(params.get("payer_id", ""))
        self.pol: dict[str, Any] | None = None
        self.payment: dict[str, Any] | None = None
        self.lines: list[Line] = []
        self.others: list[dict[str, Any]] | None = None
        # the paged read under way: the rows read so far and the cursor of the next page
        self.pay_rows: list[dict[str, Any]] = []
        self.pay_cursor: str | None = None
        self.pay_filter: dict[str, str] = {}
        # the search under way: its arguments and the cursor of its next page (None: complete)
        self.paging: dict[str, Any] | None = None
        self.search_origin = ""  # the action that started it
        self.hits: list[dict[str, Any]] = []  # its hits so far
        self.unapplied = 0
        self.cur: int | None = None
        self.payment_cases: set[str] = set()  # categories of the cases opened with no line
        self.posted = False
        self.queries: list[dict[str, Any]] = []  # {"id", "line", "state": awaiting|answered|read}
        self.started = 0  # lines searched by search_next_line
        self.claim: dict[str, Any] | None = None  # the current claim (get_open_item, then write results)
        self.symbols: dict[str, dict[str, int]] = {}
        self._unnamed: list[tuple[str, tuple[Any, ...]]] = []  # values observed, not named yet

    # -- what was read ------------------------------------------------------------------------------
    def current(self) -> Line | None:
        return self.lines[self.cur] if self.cur is not None and self.cur < len(self.lines) else None

    @derived
    def open_line(self) -> Line | None:
        """The current line while line actions may be legal (the payment named and not posted)."""
        return self.current() if self.pid and not self.posted else None

    def line_by_id(self, line_id: Any) -> Line | None:
        return next((ln for ln in self.lines if ln.line.get("id") == line_id), None)

    def awaiting(self, ln: Line | None = None) -> bool:
        return any(q["state"] == "awaiting" and (ln is None or self.lines[q["line"]] is ln) for q in self.queries)

    def answered(self) -> dict[str, Any] | None:
        """The first payer query answered and not read yet."""
        return next((q for q in self.queries if q["state"] == "answered"), None)

    def any_applied(self) -> bool:
        return any(ln.applied > 0 for ln in self.lines)

    def per_payment(self) -> bool:
        """The desk opens line cases per payment (policy case_scope), not per line."""
        return (self.pol or {}).get("case_scope") == "payment"

    def covered(self, ln: Line, category: str) -> bool:
        """A ``category`` case covers line ``ln``: opened for it, or for the whole payment at a desk
        that opens line cases per payment."""
        return category in ln.cases or (self.per_payment() and category in self.payment_cases)

    def duplicate_handling(self) -> tuple[str, str]:
        """(disposition, case category or "") the duplicate policy read asks for."""
        return DUPLICATE_ACTIONS.get(str((self.pol or {}).get("duplicate_action")), ("", ""))

    def facts(self) -> bool:
        return self.pol is not None and self.payment is not None and self.others is not None

    def dup(self) -> bool:
        """An already posted payment with this one's reference and amount is listed."""
        if self.payment is None or self.others is None:
            return False
        p = self.payment
        return any(o.get("id") != p["id"] and o.get("status") == "posted" and o.get("reference") == p["reference"]
                   and o.get("amount") == p["amount"] for o in self.others)

    def tolerance(self) -> int:
        return int((self.pol or {}).get("tolerance_cents") or 0)

    def per_policies(self, key: str, compute: Callable[[RemittanceDesk], T]) -> T:
        """``compute(desk)`` for a value of the policies alone (``compute`` reads nothing else),
        kept while the desk holds the same policies (read once an episode; none before) instead
        of computed every step."""
        kept = self._of_policies.get(key)
        if kept is None or kept[0] is not self.pol:
            kept = self._of_policies[key] = (self.pol, compute(self))
        return kept[1]

    # -- the conclusions tier's line arithmetic ------------------------------------------------------
    def codes(self, name: str) -> list[Any]:
        return list((self.pol or {}).get(name) or [])

    def pending_adj(self, ln: Line, j: int) -> tuple[str, int] | None:
        """Code and amount of the line's adjustment ``j`` if it exists and is not yet handled."""
        codes, amts = ln.line["adj_codes"], ln.line["adj_amounts"]
        if j >= len(codes) or j in ln.done_adj:
            return None
        return str(codes[j]), int(amts[j])

    def policy_pending(self, ln: Line) -> int:
        """Amount of the line's unhandled adjustments whose code the policy lists (contractual or patient)."""
        listed = set(self.codes("contractual_codes")) | set(self.codes("patient_codes"))
        return sum(int(a) for j, (c, a) in enumerate(zip(ln.line["adj_codes"], ln.line["adj_amounts"], strict=False))
                   if c in listed and j not in ln.done_adj)

    def item_balance(self, ln: Line) -> int:
        return int(ln.item["balance"]) if ln.item is not None else 0

    def alloc_amount(self, ln: Line) -> int:
        """The grounded allocation: min(paid not yet applied, claim balance now)."""
        if ln.status != "matched" or ln.item is None:
            return 0
        return max(0, min(int(ln.line["paid_amount"]) - ln.applied, self.item_balance(ln)))

    def unapplied_paid(self, ln: Line) -> int:
        """What the line paid and is not applied yet (``allocate_whole``)."""
        return max(0, int(ln.line["paid_amount"]) - ln.applied) if ln.status == "matched" and ln.item is not None else 0

    def projection(self, ln: Line) -> tuple[int, int, int]:
        """(allocation still due, excess paid, rest left on the claim) once the policy-coded
        adjustments are handled and the line is applied."""
        room = self.item_balance(ln) - self.policy_pending(ln)
        left = int(ln.line["paid_amount"]) - ln.applied
        due = max(0, min(left, room))
        return due, left - due, room - due

    def same_claim(self, hit: Mapping[str, Any], line: Mapping[str, Any]) -> bool:
        payer = self.payment["payer_id"] if self.payment else self.payer_id
        return (hit["patient_name"] == line["patient_name"] and hit["service_date"] == line["service_date"]
                and hit["amount_due"] == line["billed_amount"] and hit["payer_id"] == payer
                and hit["responsibility"] == "payer")

    def dues(self, ln: Line) -> dict[str, bool]:
        """What the desk's policies still ask for on ``ln`` (the ``*_due`` features)."""
        pol = self.pol or {}
        tol = int(pol.get("tolerance_cents") or 0)
        out = {f"wo_adj{j}_due": False for j in range(N_ADJ)} | {f"tr_adj{j}_due": False for j in range(N_ADJ)}
        out |= {"cur_alloc_due": False, "credit_alloc_due": False, "refund_case_due": False, "underpayment_case_due": False,
                "small_write_off_due": False}
        if ln.status == "matched" and ln.item is not None:
            codes = ln.line["adj_codes"]
            for j in range(N_ADJ):
                pending = self.pending_adj(ln, j) is not None
                out[f"wo_adj{j}_due"] = pending and codes[j] in self.codes("contractual_codes")
                out[f"tr_adj{j}_due"] = pending and codes[j] in self.codes("patient_codes")
            due, excess, rest = self.projection(ln)
            out["cur_alloc_due"] = due > 0
            out["credit_alloc_due"] = excess > 0 and pol.get("overpayment_action") == "credit"
            out["refund_case_due"] = excess > 0 and pol.get("overpayment_action") == "refund_case" and not self.covered(ln, "refund_request")
            out["underpayment_case_due"] = (rest > tol and pol.get("short_payment_action") == "case"
                                            and not self.covered(ln, "underpayment") and not ln.queried)
            out["small_write_off_due"] = (0 < rest <= tol and due == 0 and self.policy_pending(ln) == 0 and not ln.small_wo
                                          and pol.get("tolerance_action") == "write_off" and self.item_balance(ln) > 0)
        out["unidentified_case_due"] = (ln.status == "none" and pol.get("unreferenced_action") == "case"
                                        and not self.covered(ln, "unidentified_remittance"))
        out["query_due"] = not ln.queried and (ln.status == "ambiguous" or (ln.status == "none" and pol.get("unreferenced_action") == "query"))
        return out

    def handled(self, ln: Line) -> bool:
        """The line's match is determined and nothing the policies ask for is left on it."""
        return ln.status != "unknown" and not any(self.dues(ln).values())

    # -- the facts and raw tiers' current claim ----------------------------------------------------------
    def str_codes(self, name: str) -> list[str]:
        return [str(c) for c in (self.pol or {}).get(name) or []]

    def claim_balance(self) -> int:
        return int(self.claim["balance"]) if self.claim is not None else 0

    def payer_item(self) -> bool:
        return self.claim is not None and self.claim.get("responsibility") == "payer"

    def payment_payer(self) -> str:
        return str(self.payment["payer_id"]) if self.payment is not None else self.payer_id

    def sym(self, kind: str, text: Any) -> float:
        """Raw's episode symbol of a value (``k / N_SYMBOLS``; 0 for an empty value)."""
        if self._unnamed:
            pending, self._unnamed = self._unnamed, []
            for kind_seen, values in pending:
                for v in values:
                    self._symbol(kind_seen, v)
        return self._symbol(kind, text)

    def _symbol(self, kind: str, text: Any) -> float:
        text = " ".join(str(text or "").split()).casefold()
        if not text:
            return 0.0
        table = self.symbols.setdefault(kind, {})
        return min(1.0, table.setdefault(text, len(table) + 1) / N_SYMBOLS)

    def _name_all(self, kind: str, values: Iterable[Any]) -> None:
        """Name ``values`` in the order observed: kept until :meth:`sym` is first asked (only
        the raw tier asks), then named in that order, so the symbols are the same."""
        self._unnamed.append((kind, tuple(values)))

    def _refresh(self, item: Mapping[str, Any]) -> None:
        """A write or read returned ``item``: the current claim and every hit showing it follow."""
        item = dict(item)
        if self.claim is not None and self.claim.get("id") == item.get("id"):
            self.claim = item
        for ln in self.lines:
            for k, h in enumerate(ln.hits):
                if h.get("id") == item.get("id"):
                    ln.hits[k] = dict(item)

    # -- observing ------------------------------------------------------------------------------------
    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:  # noqa: C901 - one branch per tool
        if result.get("status") != "ok":
            return
        res: Any = result.get("result") or {}  # the tool's payload; only read on an "ok" result
        name, tool = action.removeprefix("tiers:"), call.get("tool")
        args = call.get("args") or {}
        if self._observe_desk(name, args, res):
            return
        if name in ("search_next_line", "search_by_name", "more_hits") or name.startswith("search_line["):
            self._observe_search(name, args, res)
        elif name.startswith(_ADJ_ACTIONS):
            j = slot_of(name)
            ln = self.line_by_id(args.get("line_id", ""))
            if ln is not None:
                ln.done_adj.add(j)
                ln.used_adj[j] = "write_off" if tool == "write_off" else "transfer"
                ln.item = dict(res["item"])
            self._refresh(res["item"])
        elif tool == "allocate":
            ln = self.line_by_id(args.get("line_id", ""))
            if ln is not None:
                ln.applied += int(args["amount"])
                ln.item = dict(res["item"])
            self.unapplied = int(res["payment_unapplied"])
            self._refresh(res["item"])
        elif name == "write_off_small":
            ln = self.line_by_id(args.get("line_id", ""))
            if ln is not None:
                ln.small_wo = True
                ln.item = dict(res["item"])
            self._refresh(res["item"])
        elif tool == "open_case":
            self._case_opened(args, res.get("case") or {})
        elif tool == "query_payer":
            ln = self.line_by_id(args.get("line_id", ""))
            if ln is not None:
                ln.queried = True
                ln.query = "awaiting"
                self.queries.append({"id": res["case"]["id"], "line": self.lines.index(ln), "state": "awaiting"})
        elif tool == "get_case":
            self._observe_reply(res.get("case") or {})
        elif tool == "get_open_item":
            self.claim = dict(res["item"])
            self._refresh(self.claim)

    def _observe_desk(self, name: str, args: dict[str, Any], res: Any) -> bool:
        """Take in an ok answer to a read, ``wait`` or the post (``False``: another action's)."""
        if name == "get_policies":
            self.pol = policy_values(res)
        elif name == "get_payment":
            self.payment = dict(res["payment"])
            self.unapplied = int(self.payment.get("unapplied") or 0)
            if not self.lines:
                self.lines = [Line(line) for line in res.get("lines") or []]
            self._name_all("name", (ln.line.get("patient_name") for ln in self.lines))
            self._name_all("reference", [self.payment.get("reference")])
        elif name == "list_payments":
            self.pay_filter = {k: str(v) for k, v in args.items() if k in ("payer_id", "reference")}
            self.pay_rows += [dict(o) for o in res.get("payments") or []]
            self.pay_cursor = res.get("next_cursor")
            if not self.pay_cursor:
                self.others = self.pay_rows
                self._name_all("reference", (o.get("reference") for o in self.others))
        elif name == "wait":
            answered = set(res.get("answered") or [])
            for q in self.queries:
                if q["state"] == "awaiting" and q["id"] in answered:
                    q["state"] = "answered"
                    self.lines[q["line"]].query = "answered"
        elif name.startswith("post_"):
            self.posted = True
            self.unapplied = int(res["payment"].get("unapplied") or 0)
        else:
            return False
        return True

    def _gather(self, name: str, args: Mapping[str, Any], res: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]] | None:
        """A page of a search came back (``name``: the action that started it, or ``more_hits``):
        once its last page is in, the starting action and every hit; ``None`` while pages remain."""
        if name != "more_hits":
            self.search_origin, self.hits = name, []
        self.hits += [dict(h) for h in res.get("items") or []]
        cursor = res.get("next_cursor")
        if cursor:
            self.paging = {"args": {k: v for k, v in args.items() if k != "cursor"}, "cursor": cursor}
            return None
        self.paging = None
        return self.search_origin, self.hits

    def _observe_search(self, name: str, args: Mapping[str, Any], res: Mapping[str, Any]) -> None:
        """A search's page: the facts and raw tiers show its hits on the line at once; the
        conclusions tier's match rule decides the line once the last page is in."""
        fresh = name == "search_next_line" or name.startswith("search_line[")
        if fresh:
            index = self.started if name == "search_next_line" else slot_of(name)
            if name == "search_next_line":
                self.started += 1
            shown = self.lines[index]
            shown.searched = True
            shown.by_name = not shown.line.get("claim_ref")
            shown.name_searched = shown.name_searched or shown.by_name
            self.cur, self.claim = index, None
        got, ln = self._gather(name, args, res), self.current()
        if ln is not None:
            if name == "search_by_name":
                ln.name_searched = ln.by_name = True
                self.claim = None
            ln.hits = list(self.hits)
            self._name_all("name", (h.get("patient_name") for h in ln.hits))
        if got is None or ln is None:  # the match waits for the search's last page
            return
        origin, hits = got
        if origin == "search_next_line" and ln.line["claim_ref"]:
            ln.ref_done = True
            ref = norm(ln.line["claim_ref"])
            strong = [h for h in hits if self.same_claim(h, ln.line) and osa_distance(norm(h["claim_ref"]), ref) <= 2]
            if len(strong) == 1:
                ln.status, ln.item = "matched", dict(strong[0])
        else:
            ln.ref_done = ln.name_done = True
            demo = [dict(h) for h in hits if self.same_claim(h, ln.line)]
            ln.demo = demo
            if len(demo) == 1:
                ln.status, ln.item = "matched", demo[0]
            else:
                ln.status = "ambiguous" if demo else "none"

    def _observe_reply(self, case: Mapping[str, Any]) -> None:
        """``get_case`` read an answered payer query: its line is current again; the conclusions
        tier matches it to the claim the reply names (or marks it recouped), the other tiers show
        the reply."""
        q = next((q for q in self.queries if q["id"] == case.get("id")), None)
        if q is None or case.get("status") != "answered":
            return
        q["state"] = "read"
        ln = self.lines[q["line"]]
        self.cur, self.claim = q["line"], None
        ln.query = "read"
        ln.reply = {"kind": case.get("reply_kind"), "claim_ref": case.get("reply_claim_ref") or ""}
        if case.get("reply_kind") == "applies_to":
            named = [h for h in ln.demo if h["claim_ref"] == case.get("reply_claim_ref")]
            if len(named) == 1 and ln.status != "matched":
                ln.status, ln.item = "matched", dict(named[0])
        elif case.get("reply_kind") == "recoup" and ln.status != "matched":
            ln.status = "recoup"

    def _case_opened(self, args: Mapping[str, Any], case: Mapping[str, Any]) -> None:
        """An ``open_case`` call came back ok: its category covers its line, or, opened with no
        line, the payment (and every line of it)."""
        category = str(case.get("category"))
        if args.get("line_id"):
            ln = self.line_by_id(args["line_id"])
            if ln is not None:
                ln.cases.add(category)
            return
        self.payment_cases.add(category)
