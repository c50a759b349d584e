"""Generator of remittance tasks: a hospital's receivables, one insurer payment, and a trap.

``generate(seed, defect_tag, scale=1)`` is pure in its arguments. It draws the desk's policies (they vary
per task), a world of patients, payers and open items with near-duplicate claim refs, and an
incoming payment whose remittance lines contain the trap ``defect_tag`` (plus clean lines and
sometimes a second trap). The answer key lists every accepted end state
(``reference_outcomes``): e.g. a difference within tolerance may be written off or left open
when the policy allows either, and a short payment may be raised as an underpayment case or a
payer query.

``scale`` k > 1 draws the same task (the same rows, key and brief as at scale 1) in a world about
k times larger: after everything above, k - 1 more days of the desk's history
(:func:`_add_desk_day`, built from the same helpers: claims with their look-alikes, remittances
posted or waiting, background receivables, earlier postings of the task's payer). None of those
rows can change the task's answer: a search the task calls for (any claim ref, invoice or patient
name of the task's own rows, or a ref or patient of the payment's lines) never finds one of them
(:meth:`World.protect`), and no earlier payment shares the task payment's EFT reference. The
scaled world is drawn in time linear in k: a claim ref is checked against the task's refs
through a deletion-variant index (:class:`~backoffice.envs.remittance.search.NearIndex`), never
against every ref in use.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backoffice.envs.core import Generated
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.remittance.search import ItemSearch, NearIndex
from backoffice.envs.remittance.tables import DUPLICATE_ACTIONS, QUERY_CATEGORY, add_days, item_status, norm, osa_distance

DEFECT_TAGS = (
    "exact_match", "short_payment", "overpayment", "contractual_adjustment", "patient_responsibility",
    "unreferenced_line", "fuzzy_reference", "duplicate_payment", "small_difference_within_tolerance",
    "payer_reply_needed",
)
#: traps in a line's amounts (the claim ref matches exactly)
AMOUNT_TAGS = (
    "short_payment", "overpayment", "contractual_adjustment", "patient_responsibility",
    "small_difference_within_tolerance",
)
#: tags that can be a further trap on an extra line
LINE_TAGS = AMOUNT_TAGS + ("unreferenced_line", "fuzzy_reference", "payer_reply_needed")
#: further traps a payment's lines carry beside its own (a payer reply is never a further trap)
EXTRA_TAGS = tuple(t for t in LINE_TAGS if t != "payer_reply_needed")
#: kinds of line that are matched to one claim of the payer (the others: unreferenced, ambiguous)
MATCHED_KINDS = ("clean",) + AMOUNT_TAGS + ("fuzzy_reference",)
TOOLS = (
    "get_policies", "get_payment", "list_payments", "search_open_items", "get_open_item", "allocate",
    "reverse_allocation", "write_off", "transfer_to_patient", "open_case", "query_payer", "get_case",
    "list_cases", "wait", "post_payment", "submit",
)

PAYERS = (
    ("Northwind Health Insurance", "NWH"), ("Bluefield Mutual", "BFM"), ("Cascade Care Plan", "CCP"),
    ("Harborline Assurance", "HLA"), ("Summit Health Partners", "SHP"), ("Meridian Medical Trust", "MMT"),
    ("Lakeshore Benefit Co", "LBC"),
)
FIRST = (
    "Maria", "James", "Aisha", "Tomasz", "Yuki", "Daniel", "Fatima", "Lukas", "Sofia", "Omar", "Grace",
    "Mateo", "Ingrid", "Kwame", "Elena", "Ravi", "Hannah", "Pedro", "Noor", "Victor", "Chloe", "Samuel",
    "Amara", "Jonas", "Leila", "Marcus", "Priya", "Henrik", "Zara", "Felix", "Rosa", "Dmitri",
)
#: middle initials of the patients of a scaled world's history ("First X. Last", "First X. Y. Last")
INITIALS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LAST = (
    "Lopez", "Okafor", "Nguyen", "Kowalski", "Tanaka", "Schmidt", "Haddad", "Johansson", "Rossi", "Mensah",
    "Brennan", "Silva", "Novak", "Achebe", "Moreau", "Iyer", "Fischer", "Costa", "Rahman", "Petrov",
    "Dubois", "Klein", "Osei", "Larsen", "Varga", "Castillo", "Ahmed", "Walsh", "Santos", "Berg",
)

#: the adjustment codes remittances carry: contractual (CO) and patient-responsibility (PR) group codes
CO_CODES = ("CO-45", "CO-253")
PR_CODES = ("PR-1", "PR-2", "PR-3")

#: The desk's policies as ``get_policies`` shows them (one rule document entry each, ``id`` the
#: policy's key): title, and the text (per value where the value changes what to do). Every one
#: decides the right end state of >= 20 released tasks per split (``RULE_POLICIES``).
POLICY_TITLES = {
    "tolerance_cents": "Tolerance",
    "tolerance_action": "Small differences within tolerance",
    "contractual_codes": "Contractual codes",
    "patient_codes": "Patient-responsibility codes",
    "other_codes": "Codes this desk does not list",
    "short_payment_action": "Short payments",
    "unreferenced_action": "Lines that match no claim",
    "overpayment_action": "Overpayments",
    "duplicate_action": "Duplicate remittances",
    "case_scope": "One case per line or per payment",
    "ambiguous_action": "Lines that fit two claims",
    "match_rule": "Matching a line to its claim",
    "posting": "Posting",
}
_DUPLICATE = "A payment whose EFT reference and amount equal those of a payment already posted is a duplicate: apply nothing, "
POLICY_TEXT: dict[str, str | dict[str, str]] = {
    "tolerance_cents": "A line that leaves at most this many cents open on its claim, after contractual and patient adjustments, is a small difference within tolerance.",
    "tolerance_action": {
        "write_off": "Write a small difference within tolerance off on the claim with reason small_balance. Open no case.",
        "leave_open": "Leave a small difference within tolerance open on the claim: do not write it off and open no case.",
        "either": "A small difference within tolerance may be written off (reason small_balance) or left open on the claim; both are accepted. Open no case.",
    },
    "contractual_codes": "These adjustment codes are contractual at this desk: write each one off on the claim with reason contractual and its code, one write-off per code.",
    "patient_codes": "These patient-responsibility codes (deductible, coinsurance, copay) are the patient's at this desk: move each amount to the patient with transfer_to_patient and its code, one transfer per code.",
    "other_codes": "An adjustment code this desk lists neither as contractual nor as patient responsibility (another CO or PR code) is neither written off nor transferred: its amount stays open on the claim, and the tolerance and short-payment policies apply to what stays open.",
    "short_payment_action": {
        "case": "A line that leaves more than the tolerance open is an underpayment: apply what was paid, leave the rest open, and open an underpayment case for the line. A payer query about the line (query_payer) is accepted instead, provided you wait for the payer's reply, read it with get_case and act on what it says.",
        "leave_open": "A line that leaves more than the tolerance open is an underpayment: apply what was paid and leave the rest open on the claim. Open no case and send no payer query: the denials team works open balances.",
    },
    "unreferenced_action": {
        "case": "A line that matches no claim stays unapplied; open an unidentified_remittance case for the line.",
        "leave_unapplied": "A line that matches no claim stays unapplied on the payment; open no case (the cash team reviews unapplied cash weekly).",
        "query": "A line that matches no claim stays unapplied; ask the payer about it (query_payer), wait for the reply and read it with get_case. Open no case.",
    },
    "overpayment_action": {
        "refund_case": "When a line pays more than its claim's open balance, apply only the open balance; the excess stays unapplied and you open a refund_request case for the line.",
        "leave_unapplied": "When a line pays more than its claim's open balance, apply only the open balance; the excess stays unapplied on the payment. Open no case.",
        "credit": "When a line pays more than its claim's open balance, apply the whole line: the claim goes into credit (the patient accounts team refunds credits). Open no case.",
    },
    "duplicate_action": {
        "hold_and_case": _DUPLICATE + "open a duplicate_remittance case for the payment (no line) and post it with disposition hold.",
        "hold": _DUPLICATE + "open no case, and post it with disposition hold (the cash team reviews held payments).",
        "return": _DUPLICATE + "open no case, and post it with disposition return.",
        "return_and_case": _DUPLICATE + "open a duplicate_remittance case for the payment (no line) and post it with disposition return.",
        "post_and_case": _DUPLICATE + "open a duplicate_remittance case for the payment (no line) and post it with disposition apply: "
                         "the money stays unapplied until the payer takes it back.",
        "post_and_refund_case": _DUPLICATE + "open a refund_request case for the payment (no line) and post it with disposition apply: "
                                "the money stays unapplied until the payer takes it back.",
    },
    "case_scope": {
        "line": "Open each case about a line (underpayment, unidentified_remittance, refund_request) with that line's line_id: one case per line.",
        "payment": "Open cases per payment, not per line: one case per category the payment needs (underpayment, unidentified_remittance, refund_request), with an empty line_id and the lines named in the note. A payer query (query_payer) is still about one line.",
    },
    "ambiguous_action": "If a line fits more than one claim equally well, do not guess: query the payer about the line, wait for the reply and follow it (applies_to: allocate the line to the named claim; recoup: leave the line unapplied, the payer takes the money back).",
    "match_rule": "A line belongs to a claim of this payer when the claim ref matches exactly or within two typing errors, the patient name and service date are equal and the claim's amount due equals the line's billed amount. Similar refs of other patients are not matches. When a line's ref finds nothing, search by the patient name.",
    "posting": "When every line is handled, post the payment with disposition apply (or as the duplicate policy says), then submit.",
}
#: the desk's documented rules (``Domain.rules``): the ids of ``get_policies``' entries
RULES = tuple(POLICY_TITLES)
#: the values a desk's policy may take (drawn uniformly per task; the others are fixed)
POLICY_CHOICES: dict[str, tuple[Any, ...]] = {
    "tolerance_cents": (100, 250, 500, 1000),
    "tolerance_action": ("write_off", "leave_open"),
    "contractual_codes": (["CO-45"], ["CO-253"], ["CO-45", "CO-253"]),
    "patient_codes": (["PR-1", "PR-2"], ["PR-1", "PR-3"], ["PR-2", "PR-3"]),
    "short_payment_action": ("case", "leave_open"),
    "unreferenced_action": ("case", "leave_unapplied", "query"),
    "overpayment_action": ("refund_case", "leave_unapplied", "credit"),
    "duplicate_action": tuple(DUPLICATE_ACTIONS),
    "case_scope": ("line", "payment"),
}
#: the policies no desk changes (their value names the one procedure)
FIXED_POLICIES = {"other_codes": "stay_open", "ambiguous_action": "query_payer", "match_rule": "ref_patient_date_amount", "posting": "apply"}


class World:
    """One task's world while it is drawn: the hospital's receivables (accounts, open items and
    the ids, refs and names in use), the desk's policies, the payers, and the incoming payment
    (its lines, the claims they pay, the payer's scripted replies) with the earlier postings."""

    def __init__(self, rng: random.Random, seed: int, tag: str):
        self.rng = rng
        self.seed = seed
        self.tag = tag  # the task's defect tag
        self.items: list[dict[str, Any]] = []
        self.item_ids: set[str] = set()
        self.refs: set[str] = set()  # normalised claim refs in use
        self.near = NearIndex()  # the same refs, to find those within two edits of a new one
        self.invoices: set[str] = set()
        self.names: set[str] = set()
        self.accounts: list[dict[str, Any]] = []
        self.patient_account: dict[str, str] = {}
        self.numbers: set[int] = set()
        # the desk and its payers (build_world)
        self.pol: dict[str, Any] = {}
        self.today = ""
        self.payer_ids: list[str] = []
        self.payer_id = ""
        self.payer_name = ""
        # the incoming payment (_remit) and the earlier postings (_post_earlier)
        self.pnum = 0
        self.pay_id = ""
        self.kinds: list[str] = []  # the kind of each line: "clean" or a line trap (LINE_TAGS)
        self.lines: list[dict[str, Any]] = []
        self.line_items: list[dict[str, Any] | None] = []  # the claim each line pays (None: no claim)
        self.ambiguous: list[dict[str, Any]] = []  # the two claims a payer_reply_needed line fits
        self.script: list[dict[str, Any]] = []  # the payer's reply per line
        self.payments: list[dict[str, Any]] = []
        self.all_lines: list[dict[str, Any]] = []
        self.allocations: list[dict[str, Any]] = []
        self.total = 0  # the incoming payment's amount
        self.reference = ""
        self.duplicate_of = ""
        # a scaled world's history (protect, _add_desk_day): drawn once the task is complete
        self.bulk = False
        self.payer_names: list[str] = []
        self.references: set[str] = set()  # EFT references in use
        self.guarded = NearIndex()  # what the task's searches look for (normalised, 3+ characters)
        self.guarded_long: dict[str, list[str]] = {}  # those of 4+ characters (substring rules), by first 4 characters

    # -- identities --------------------------------------------------------------------------
    def number(self) -> int:
        """A number not used yet (account and payment ids); a scaled world's history draws from
        a wider range than the task's rows."""
        lo, hi = (10_000, 99_999_999) if self.bulk else (1000, 9999)
        while True:
            n = self.rng.randint(lo, hi)
            if n not in self.numbers:
                self.numbers.add(n)
                return n

    def new_name(self) -> str:
        """A new patient's name: unique among the task's rows; in a scaled world's history a
        "First X. Last" or "First X. Y. Last" (a few claims may share one) that no search of the
        task finds."""
        if self.bulk:
            while True:
                initials = " ".join(f"{self.rng.choice(INITIALS)}." for _ in range(self.rng.randint(1, 2)))
                name = f"{self.rng.choice(FIRST)} {initials} {self.rng.choice(LAST)}"
                if not self.found_by_task(name=norm(name)):
                    return name
        while True:
            name = f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"
            if name not in self.names:
                self.names.add(name)
                return name

    def account_for(self, name: str) -> str:
        if name not in self.patient_account:
            acct = f"AC-{self.number()}"
            self.patient_account[name] = acct
            self.accounts.append({"id": acct, "kind": "patient", "name": name, "payer_code": ""})
        return self.patient_account[name]

    def new_item_id(self) -> str:
        hi = 99_999_999 if self.bulk else 9999
        while True:
            iid = f"OI-{self.rng.randint(1000, hi)}"
            if iid not in self.item_ids:
                self.item_ids.add(iid)
                return iid

    def _use_ref(self, n: str) -> None:
        self.refs.add(n)
        if not self.bulk:  # the history's refs need not stay apart (only apart from the task's)
            self.near.add(n)

    def fresh_ref(self) -> str:
        """A claim ref at least three typing errors away from every ref in use (in a scaled
        world's history: unused, and out of reach of the task's searches)."""
        while True:
            ref = f"CLM-{self.rng.randint(100000, 999999)}"
            n = norm(ref)
            if self.bulk:
                if n in self.refs or self.found_by_task(ref=n):
                    continue
            elif self.near.any_near(n):  # i.e. not all(osa_distance(n, r) >= 3 for r in refs in use)
                continue
            self._use_ref(n)
            return ref

    def near_ref(self, ref: str, max_edits: int = 2) -> str:
        """A claim ref one or two typing errors away from ``ref`` that is not in use."""
        digits = ref[4:]
        while True:
            d = list(digits)
            for _ in range(self.rng.randint(1, max_edits)):
                i = self.rng.randrange(len(d))
                if self.rng.random() < 0.5 and i + 1 < len(d) and d[i] != d[i + 1]:
                    d[i], d[i + 1] = d[i + 1], d[i]
                else:
                    d[i] = self.rng.choice([c for c in "0123456789" if c != d[i]])
            new = "CLM-" + "".join(d)
            n = norm(new)
            if n not in self.refs and 1 <= osa_distance(n, norm(ref)) <= max_edits and not (self.bulk and self.found_by_task(ref=n)):
                self._use_ref(n)
                return new

    def new_invoice(self) -> str:
        while True:
            inv = f"INV-{self.rng.randint(100000, 999999)}"
            if inv not in self.invoices and not (self.bulk and self.found_by_task(invoice=norm(inv))):
                self.invoices.add(inv)
                return inv

    def eft_reference(self) -> str:
        """An EFT trace number for an earlier payment (in a scaled world's history: unused)."""
        while True:
            ref_ = f"EFT-{self.rng.randint(10**8, 10**9 - 1)}"
            if not self.bulk or ref_ not in self.references:
                self.references.add(ref_)
                return ref_

    # -- a scaled world's history ------------------------------------------------------------
    def protect(self) -> None:
        """Start drawing a scaled world's history: from now on no new claim can be found by a
        search the task calls for, i.e. by any claim ref, invoice or patient name of the rows
        drawn so far or any ref or patient of the payment's lines (see :func:`item_matches`)."""
        queries = {norm(ln[k]) for ln in self.all_lines for k in ("claim_ref", "patient_name")}
        queries |= {norm(it[k]) for it in self.items for k in ("claim_ref", "invoice", "patient_name")}
        queries = {q for q in queries if len(q) >= 3}  # shorter queries find nothing
        self.guarded = NearIndex(sorted(queries))
        self.guarded_long = {}
        for q in sorted(queries):
            if len(q) >= 4:
                self.guarded_long.setdefault(q[:4], []).append(q)
        self.references = {p["reference"] for p in self.payments}
        self.bulk = True

    def found_by_task(self, ref: str | None = None, invoice: str | None = None, name: str | None = None) -> bool:
        """Would a search the task calls for find a claim with this normalised ref, invoice or
        patient name? (equal or within two edits of a ref; equal to an invoice; containing the
        query)"""
        if ref is not None and (self.guarded.any_near(ref) or self._contains_guarded(ref)):
            return True
        if invoice is not None and invoice in self.guarded:
            return True
        return name is not None and self._contains_guarded(name)

    def _contains_guarded(self, s: str) -> bool:
        """Does ``s`` contain a guarded query of 4+ characters (found by its first four)?"""
        for i in range(len(s) - 3):
            for q in self.guarded_long.get(s[i:i + 4], ()):
                if s.startswith(q, i):
                    return True
        return False

    def service_date(self, today: str) -> str:
        return add_days(today, -self.rng.randint(20, 150))

    def add_item(self, name: str, payer_id: str, ref: str, amount_due: int, balance: int | None, date: str) -> dict[str, Any]:
        bal = amount_due if balance is None else balance
        row = {
            "id": self.new_item_id(), "account_id": self.account_for(name), "payer_id": payer_id,
            "claim_ref": ref, "invoice": self.new_invoice(), "patient_name": name, "service_date": date,
            "amount_due": amount_due, "balance": bal, "status": item_status(bal, amount_due),
            "responsibility": "payer", "source_item": "",
        }
        self.items.append(row)
        return row

    def amount(self, lo: int = 8_000, hi: int = 450_000) -> int:
        return self.rng.randint(lo // 100, hi // 100) * 100 + self.rng.choice((0, 0, 0, 25, 50, 75, 99))


def _policies(rng: random.Random) -> dict[str, Any]:
    """The desk's policies, every key of :data:`POLICY_TITLES` (in that order)."""
    drawn = {key: rng.choice(values) for key, values in POLICY_CHOICES.items()}
    return {key: drawn.get(key, FIXED_POLICIES.get(key)) for key in POLICY_TITLES}


def _policy_rows(pol: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``policies`` table: one row per policy, keyed by its rule id (``get_policies``
    shows them as the rule document's entries, in this order)."""
    rows = []
    for key, value in pol.items():
        text = POLICY_TEXT[key]
        rows.append({"id": key, "title": POLICY_TITLES[key], "value": value, "text": text[value] if isinstance(text, dict) else text})
    return rows


# -- outcome variants of one line ---------------------------------------------------------------
def _variant(name: str, allocs=(), wo=(), tr=(), cases=(), items=None) -> dict[str, Any]:
    return {"name": name, "allocs": list(allocs), "wo": list(wo), "tr": list(tr), "cases": list(cases), "items": dict(items or {})}


def _resolve(pol: dict[str, Any], pid: str, line: dict[str, Any], item: dict[str, Any]) -> list[dict[str, Any]]:
    """Every accepted outcome of a line matched to ``item`` under the policies."""
    lid, iid, bal = line["id"], item["id"], item["balance"]
    wo, tr = [], []
    for code, amt in zip(line["adj_codes"], line["adj_amounts"]):
        if code in pol["contractual_codes"]:
            wo.append([iid, "contractual", code, amt])
        elif code in pol["patient_codes"]:
            tr.append([iid, code, amt])
    remaining = bal - sum(w[3] for w in wo) - sum(t[2] for t in tr)
    alloc = line["paid_amount"] if pol["overpayment_action"] == "credit" else min(line["paid_amount"], remaining)
    rest = remaining - alloc
    allocs = [[lid, iid, alloc]] if alloc > 0 else []
    cases = []
    if line["paid_amount"] > alloc and pol["overpayment_action"] == "refund_case":
        cases.append(["refund_request", pid, lid])
    if rest <= 0:  # settled, or in credit (an overpayment the desk applies whole)
        return [_variant("", allocs, wo, tr, cases, {iid: rest})]
    if rest <= pol["tolerance_cents"]:
        written = _variant(f"small-balance-written-off:{lid}", allocs, wo + [[iid, "small_balance", "", rest]], tr, cases, {iid: 0})
        left = _variant(f"small-balance-left-open:{lid}", allocs, wo, tr, cases, {iid: rest})
        return {"write_off": [written], "leave_open": [left], "either": [written, left]}[pol["tolerance_action"]]
    if pol["short_payment_action"] == "leave_open":
        return [_variant(f"underpayment-left-open:{lid}", allocs, wo, tr, cases, {iid: rest})]
    return [
        _variant(f"underpayment-case:{lid}", allocs, wo, tr, cases + [["underpayment", pid, lid]], {iid: rest}),
        _variant(f"underpayment-query:{lid}", allocs, wo, tr, cases + [[QUERY_CATEGORY, pid, lid]], {iid: rest}),
    ]


def _merge(pay: dict[str, Any], per_line: list[list[dict[str, Any]]], scope: dict[str, dict[str, Any]],
           scope_payment: bool = False) -> list[dict[str, Any]]:
    """Cartesian product of the lines' variants -> whole-payment reference outcomes (with the
    desk's cases per payment when ``scope_payment``)."""
    outs = []
    for combo in itertools.product(*per_line):
        allocs = sorted(a for v in combo for a in v["allocs"])
        items = {iid: it["balance"] for iid, it in scope.items()}
        for v in combo:
            items.update(v["items"])
        names = [v["name"] for v in combo if v["name"]]
        cases = sorted(c for v in combo for c in v["cases"])
        if scope_payment:  # one case per category of the payment, no line (payer queries stay per line)
            cases = sorted({(c[0], c[1], "" if c[0] != QUERY_CATEGORY else c[2]) for c in cases})
            cases = [list(c) for c in cases]
        outs.append({
            "name": "alt:" + ("+".join(names) if names else "as-remitted"),
            "payment_status": "posted",
            "unapplied": pay["amount"] - sum(a[2] for a in allocs),
            "allocations": allocs,
            "write_offs": sorted(w for v in combo for w in v["wo"]),
            "transfers": sorted(t for v in combo for t in v["tr"]),
            "cases": cases,
            "items": {iid: [b, item_status(b, scope[iid]["amount_due"])] for iid, b in sorted(items.items())},
        })
    return outs


# -- the world: the desk, its payers and the mix of lines -----------------------------------------
def build_world(seed: int, defect_tag: str, variant: int | None = None) -> World:
    """The task's first draws: the desk's policies, the day, and three payers (the first one pays).
    ``variant`` (a release's duplicates: see ``DOMAIN.variants``) picks the duplicate action."""
    rng = random.Random(seed)
    w = World(rng, seed, defect_tag)
    w.pol = _policies(rng)
    if variant is not None:
        w.pol["duplicate_action"] = POLICY_CHOICES["duplicate_action"][variant % len(POLICY_CHOICES["duplicate_action"])]
    w.today = add_days("2026-03-02", rng.randint(0, 75))
    payers = rng.sample(PAYERS, 3)
    for name, code in payers:
        pid_ = f"AC-{w.number()}"
        w.payer_ids.append(pid_)
        w.payer_names.append(name)
        w.accounts.append({"id": pid_, "kind": "payer", "name": name, "payer_code": code})
    w.payer_id, w.payer_name = w.payer_ids[0], payers[0][0]
    return w


def _line_kinds(w: World) -> list[str]:
    """Which lines the payment carries: the trap, clean lines and (mostly) further traps, in the
    order of the remittance. Returns the task's defect tags (the trap first)."""
    rng, defect_tag = w.rng, w.tag
    tags = [defect_tag]
    if defect_tag == "exact_match":
        # every ref matches exactly; the traps are in the amounts
        kinds = ["clean"] * rng.randint(1, 2) + rng.sample(AMOUNT_TAGS, 3)
    elif defect_tag == "duplicate_payment":
        kinds = ["clean"] * rng.randint(2, 4)
    else:
        kinds = ["clean"] * rng.randint(0, 1) + [defect_tag]
        kinds += rng.sample([t for t in EXTRA_TAGS if t != defect_tag], 4)
    tags += [k for k in dict.fromkeys(kinds) if k not in ("clean", defect_tag)]
    rng.shuffle(kinds)
    w.kinds = kinds
    return tags


# -- one planter per kind of line: what makes the line a trap -------------------------------------
@dataclass
class Draft:
    """One remittance line while it is drawn, and the claim it pays (``item``, None if none)."""

    name: str
    date: str
    billed: int
    ref: str  # the claim's own ref
    line_ref: str  # the ref the payer wrote on the line
    paid: int
    codes: list[str] = field(default_factory=list)
    amts: list[int] = field(default_factory=list)
    item: dict[str, Any] | None = None


def _plant_clean(w: World, d: Draft) -> None:
    """No trap; most insurer lines carry the routine contract discount under a code the desk
    lists as contractual (not on a duplicate)."""
    if w.tag != "duplicate_payment" and w.rng.random() < 0.6:
        d.codes, d.amts = [w.rng.choice(w.pol["contractual_codes"])], [d.billed * w.rng.randint(8, 30) // 100]
        d.paid = d.billed - d.amts[0]


def _plant_contractual_adjustment(w: World, d: Draft) -> None:
    """The contract discount beside a second CO code: at a desk that lists both, written off as
    well (or, at times, the discount alone); at a desk that lists one, the other code, whose
    amount stays open (at times within the tolerance)."""
    rng, listed = w.rng, w.pol["contractual_codes"]
    unlisted = [c for c in CO_CODES if c not in listed]
    c = d.billed * rng.randint(10, 40) // 100
    if unlisted:
        d.codes, d.amts = [listed[0], unlisted[0]], [c, rng.randint(50, 4000)]
    elif rng.random() < 0.7:
        d.codes, d.amts = list(listed), [c, rng.randint(200, 3000)]
    else:
        d.codes, d.amts = [rng.choice(listed)], [c]
    d.paid = d.billed - sum(d.amts)


def _plant_patient_responsibility(w: World, d: Draft) -> None:
    """Two PR codes (say deductible and coinsurance), or one, mostly beside the contract
    discount (a line carries at most two adjustments); a code the desk does not list stays open
    on the claim."""
    rng = w.rng
    codes = sorted(rng.sample(PR_CODES, rng.choice((1, 2))))
    shares = [rng.choice((1500, 2000, 2500, 3000, 5000, d.billed * rng.randint(5, 20) // 100)) for _ in codes]
    if len(codes) == 1 and rng.random() < 0.7:
        c = d.billed * rng.randint(10, 35) // 100
        d.codes, d.amts = [rng.choice(w.pol["contractual_codes"]), *codes], [c, *shares]
    else:
        d.codes, d.amts = codes, shares
    d.paid = d.billed - sum(d.amts)


def _plant_short_payment(w: World, d: Draft) -> None:
    """Paid short by more than the tolerance: half the time just over it."""
    tol = w.pol["tolerance_cents"]
    d.paid = d.billed - (tol + w.rng.randint(1, tol) if w.rng.random() < 0.5 else w.rng.randint(tol + 100, d.billed // 2))


def _plant_overpayment(w: World, d: Draft) -> None:
    """Paid more than the claim's balance."""
    d.paid = d.billed + w.rng.randint(5, 200) * 100


def _plant_small_difference_within_tolerance(w: World, d: Draft) -> None:
    """Paid short by at most the tolerance."""
    d.paid = d.billed - w.rng.randint(1, w.pol["tolerance_cents"])


def _plant_fuzzy_reference(w: World, d: Draft) -> None:
    """The payer typed the claim ref with one typing error."""
    d.line_ref = w.near_ref(d.ref, 1)


def _plant_unreferenced_line(w: World, d: Draft) -> None:
    """No claim of this patient: a fresh patient name (the ref stays unused)."""
    rng = w.rng
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    while name in w.names:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    w.names.add(name)
    d.name = name


def _plant_payer_reply_needed(w: World, d: Draft) -> None:
    """Only the payer's internal control number, and two claims of the patient that fit equally."""
    d.line_ref = f"ICN-{w.rng.randint(10**10, 10**11 - 1)}"
    twins = [w.add_item(d.name, w.payer_id, d.ref, d.billed, None, d.date),
             w.add_item(d.name, w.payer_id, w.fresh_ref(), d.billed, None, d.date)]
    w.ambiguous = twins


#: kind of line -> what makes it that kind (every line trap of LINE_TAGS, and clean lines);
#: ``exact_match`` is a mix of lines (``_line_kinds``), ``duplicate_payment`` an earlier posting
#: of the same payment (``_plant_duplicate_payment``)
PLANTERS: dict[str, Callable[[World, Draft], None]] = {
    "clean": _plant_clean,
    "contractual_adjustment": _plant_contractual_adjustment,
    "patient_responsibility": _plant_patient_responsibility,
    "short_payment": _plant_short_payment,
    "overpayment": _plant_overpayment,
    "small_difference_within_tolerance": _plant_small_difference_within_tolerance,
    "fuzzy_reference": _plant_fuzzy_reference,
    "unreferenced_line": _plant_unreferenced_line,
    "payer_reply_needed": _plant_payer_reply_needed,
}


# -- the incoming payment -------------------------------------------------------------------------
def _remit(w: World) -> None:
    """The payment's lines (one per kind), each with its look-alike claims and the payer's reply."""
    w.pnum = w.number()
    w.pay_id = f"PMT-{w.pnum}"
    for i, kind in enumerate(w.kinds, start=1):
        lid = f"RL-{w.pnum}{i:02d}"
        name = w.new_name()
        date = w.service_date(w.today)
        billed = w.amount()
        ref = w.fresh_ref()
        d = Draft(name=name, date=date, billed=billed, ref=ref, line_ref=ref, paid=billed)
        if kind in MATCHED_KINDS:
            d.item = w.add_item(name, w.payer_id, ref, billed, None, date)
        PLANTERS[kind](w, d)
        w.lines.append({
            "id": lid, "payment_id": w.pay_id, "line_no": i, "claim_ref": d.line_ref, "patient_name": d.name,
            "service_date": date, "billed_amount": billed, "paid_amount": d.paid, "adj_codes": d.codes, "adj_amounts": d.amts,
        })
        w.line_items.append(d.item)
        if kind != "payer_reply_needed":
            _add_look_alikes(w, d)
        w.script.append(_payer_reply(w, i, lid, kind, d.line_ref))


def _add_look_alikes(w: World, d: Draft) -> None:
    """Near-duplicate claims of other patients around the line's ref (an unreferenced line's ref
    is similar to other claims too): a search by ref mostly finds several claims."""
    rng = w.rng
    for _ in range(rng.choice((1, 2, 2, 3, 3, 4))):
        other = w.new_name()
        amt = d.billed if rng.random() < 0.3 else w.amount()
        bal = amt if rng.random() < 0.7 else amt // 2
        w.add_item(other, rng.choice(w.payer_ids[:2]), w.near_ref(d.line_ref, 2), amt, bal, w.service_date(w.today))
    if rng.random() < 0.25 and d.item is not None:
        # the same patient's earlier visit with a similar ref and the same charge
        w.add_item(d.name, w.payer_id, w.near_ref(d.line_ref, 2), d.billed, d.billed, add_days(d.date, -rng.randint(7, 60)))


def _payer_reply(w: World, i: int, lid: str, kind: str, line_ref: str) -> dict[str, Any]:
    """The payer's scripted reply to a query about line ``i`` (fixed by the task's seed)."""
    seed = w.seed
    delay = 4 + derive_seed(seed, "reply-delay", lid) % 44
    reply = {"id": lid, "delay_hours": delay, "reply_kind": "confirm", "reply_claim_ref": line_ref,
             "reply_text": f"Line {i} ({line_ref}) was adjudicated as shown on the remittance; no correction is due."}
    if kind == "payer_reply_needed":
        if derive_seed(seed, "payer-reply-kind") % 10 < 7:
            chosen = w.ambiguous[derive_seed(seed, "payer-reply-claim") % 2]
            reply.update(reply_kind="applies_to", reply_claim_ref=chosen["claim_ref"],
                         reply_text=f"Line {i} pays claim {chosen['claim_ref']} (invoice {chosen['invoice']}).")
        else:
            reply.update(reply_kind="recoup", reply_claim_ref="",
                         reply_text=f"Line {i} was paid in error; we will recoup it from a later remittance. Do not apply it.")
    return reply


def _plant_residual_claim(w: World, trap_at: int) -> None:
    """A residual old claim near one line's ref: small balance, different patient."""
    trap_ref = w.lines[trap_at]["claim_ref"]
    w.add_item(w.new_name(), w.payer_id, w.near_ref(trap_ref, 2), w.amount(), w.rng.randint(1, 99), w.service_date(w.today))


def _place_claims_among_hits(w: World) -> None:
    """Search order carries no meaning: the line's claim takes a uniformly drawn position among
    the hits of a search by the line's ref (item ids are arbitrary, and the seeded order follows
    the ids, so the claim swaps ids with the hit at the drawn position)."""
    search = ItemSearch(w.items)  # the ids it returns are read at each search: swaps show
    for line, item in zip(w.lines, w.line_items):
        if item is None:
            continue
        hits = search.search(line["claim_ref"], w.seed)
        if len(hits) > 1 and any(h is item for h in hits):
            other = hits[w.rng.randrange(len(hits))]
            item["id"], other["id"] = other["id"], item["id"]  # type: ignore[index]


def _add_background(w: World) -> None:
    """Background receivables of the hospital."""
    rng = w.rng
    for _ in range(rng.randint(6, 12)):
        amt = w.amount()
        bal = rng.choice((amt, amt, amt // 3, 0))
        w.add_item(w.new_name(), rng.choice(w.payer_ids), w.fresh_ref(), amt, bal, w.service_date(w.today))


def _receive(w: World) -> None:
    """The incoming payment row: unposted, its whole amount unapplied."""
    w.total = sum(ln["paid_amount"] for ln in w.lines)
    w.reference = f"EFT-{w.rng.randint(10**8, 10**9 - 1)}"
    w.payments.append({
        "id": w.pay_id, "payer_id": w.payer_id, "payer_name": w.payer_name, "reference": w.reference, "amount": w.total,
        "received_on": w.today, "status": "unposted", "unapplied": w.total, "line_count": len(w.lines),
    })
    w.all_lines.extend(w.lines)


def _post_earlier(w: World, ref_: str, amt_lines: list[tuple[dict[str, Any], int]], days_ago: int,
                  payer: int = 0, posted: bool = True) -> str:
    """A payment of the payer (``payer``: its index, the task's payer by default) received
    ``days_ago`` days ago: posted with its lines allocated in full, or (``posted`` false) still
    waiting to be posted."""
    today = w.today
    num = w.number()
    hid = f"PMT-{num}"
    total = sum(a for _, a in amt_lines)
    w.payments.append({"id": hid, "payer_id": w.payer_ids[payer], "payer_name": w.payer_names[payer], "reference": ref_,
                       "amount": total, "received_on": add_days(today, -days_ago), "status": "posted" if posted else "unposted",
                       "unapplied": 0 if posted else total, "line_count": len(amt_lines)})
    for j, (it, a) in enumerate(amt_lines, start=1):
        hl = f"RL-{num}{j:02d}"
        w.all_lines.append({"id": hl, "payment_id": hid, "line_no": j, "claim_ref": it["claim_ref"], "patient_name": it["patient_name"],
                            "service_date": it["service_date"], "billed_amount": it["amount_due"], "paid_amount": a,
                            "adj_codes": [], "adj_amounts": []})
        if posted:
            w.allocations.append({"id": f"AH-{len(w.allocations) + 1:04d}", "payment_id": hid, "line_id": hl, "item_id": it["id"],
                                  "amount": a, "status": "active", "created_at": f"{add_days(today, -days_ago)}T10:00:00", "reversed_at": ""})
    return hid


def _plant_duplicate_payment(w: World) -> None:
    """The same EFT and amount were posted days ago: the original's lines carry the same claims
    as the duplicate's, and those claims are closed."""
    for it in w.line_items:
        assert it is not None
        it["balance"], it["status"] = 0, "closed"
    days_ago = w.rng.randint(5, 15)
    w.duplicate_of = _post_earlier(w, w.reference, [(it, it["amount_due"]) for it in w.line_items if it], days_ago)


def _add_past_payments(w: World) -> None:
    """One or two earlier postings of the payer (sometimes of the same amount, never a duplicate)."""
    rng = w.rng
    for _ in range(rng.randint(1, 2)):
        same_amount = w.tag != "duplicate_payment" and rng.random() < 0.3
        amt = w.total if same_amount else w.amount()
        it = w.add_item(w.new_name(), w.payer_id, w.fresh_ref(), amt, 0, add_days(w.today, -rng.randint(20, 150)))
        _post_earlier(w, w.eft_reference(), [(it, amt)], rng.randint(3, 19))


# -- the answer key -------------------------------------------------------------------------------
def _duplicate_outcomes(w: World, scope: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """A duplicate is held or returned, with a case or without, as the policy says; nothing is
    applied."""
    disposition, case = DUPLICATE_ACTIONS[w.pol["duplicate_action"]]
    status = {"apply": "posted", "hold": "held", "return": "returned"}[disposition]
    outcomes = [{
        "name": f"alt:duplicate-{status}",
        "payment_status": status,
        "unapplied": 0 if status == "returned" else w.total,
        "allocations": [], "write_offs": [], "transfers": [],
        "cases": [[case, w.pay_id, ""]] if case else [],
        "items": {iid: [it["balance"], it["status"]] for iid, it in sorted(scope.items())},
    }]
    return outcomes, "oc_duplicate_" + {"held": "held", "returned": "returned", "posted": "posted_unapplied"}[status]


def _line_variants(w: World, line: dict[str, Any], item: dict[str, Any] | None, kind: str) -> list[dict[str, Any]]:
    """Every accepted outcome of one line."""
    pay_id = w.pay_id
    if kind == "unreferenced_line":
        action = w.pol["unreferenced_action"]
        cases = [["unidentified_remittance" if action == "case" else QUERY_CATEGORY, pay_id, line["id"]]] if action != "leave_unapplied" else []
        return [_variant("", cases=cases)]
    if kind == "payer_reply_needed":
        reply = next(s for s in w.script if s["id"] == line["id"])
        q = [[QUERY_CATEGORY, pay_id, line["id"]]]
        if reply["reply_kind"] == "applies_to":
            chosen = next(a for a in w.ambiguous if a["claim_ref"] == reply["reply_claim_ref"])
            return [_variant("", [[line["id"], chosen["id"], line["paid_amount"]]], cases=q, items={chosen["id"]: 0})]
        return [_variant("", cases=q)]
    assert item is not None
    return _resolve(w.pol, pay_id, line, item)


def _outcome_class(kinds: list[str], outcomes: list[dict[str, Any]]) -> str:
    """The task's outcome class: the first of these its outcomes call for (an order that keeps
    every class under a third of a split): a payer reply to follow, a claim left in credit, a
    refund or unidentified-remittance case, an underpayment case, a payer query, a patient
    transfer, a write-off; else a clean posting."""
    cases = {c[0] for o in outcomes for c in o["cases"]}
    if "payer_reply_needed" in kinds:
        return "oc_post_after_payer_reply"
    if any(b < 0 for o in outcomes for b, _ in o["items"].values()):
        return "oc_post_with_credit"
    if cases & {"refund_request", "unidentified_remittance"}:
        return "oc_post_with_case"
    if "underpayment" in cases:
        return "oc_post_with_underpayment"
    if QUERY_CATEGORY in cases:
        return "oc_post_with_payer_query"
    if any(o["transfers"] for o in outcomes):
        return "oc_post_with_patient_transfer"
    if any(o["write_offs"] for o in outcomes):
        return "oc_post_with_write_off"
    return "oc_post_clean"


def _first_hit_trap(w: World) -> bool:
    """Does taking a ref search's first hit go wrong on some line?"""
    first_hit_trap = False
    if w.tag != "duplicate_payment":
        search = ItemSearch(w.items)
        for line, item in zip(w.lines, w.line_items):
            hits = search.search(line["claim_ref"], w.seed)
            if hits and (item is None or hits[0]["id"] != item["id"]):
                first_hit_trap = True
    return first_hit_trap


def _key(w: World, tags: list[str]) -> dict[str, Any]:
    """The answer key: every accepted end state of the task (``reference_outcomes``) and what
    the agent may write (``targets``)."""
    scope: dict[str, dict[str, Any]] = {}
    for it in [*w.line_items, *w.ambiguous]:
        if it is not None:
            scope[it["id"]] = dict(it)
    if w.tag == "duplicate_payment":
        outcomes, outcome_class = _duplicate_outcomes(w, scope)
    else:
        per_line = [_line_variants(w, line, item, kind) for line, item, kind in zip(w.lines, w.line_items, w.kinds)]
        outcomes = _merge(w.payments[0], per_line, scope, w.pol["case_scope"] == "payment")
        outcome_class = _outcome_class(w.kinds, outcomes)
    targeted = sorted({iid for o in outcomes for iid, (b, _) in o["items"].items() if b != scope[iid]["balance"]}
                      | {a[1] for o in outcomes for a in o["allocations"]})
    targets = [f"payments:{w.pay_id}", "allocations:AL-*", "adjustments:*", "cases:*", "audit:*", "clock:clock", "open_items:PI-*"]
    targets += [f"open_items:{iid}" for iid in targeted]
    return {
        "defect_tags": tags,
        "targets": targets,
        "outcome_class": outcome_class,
        "needs_action": True,
        "payment_id": w.pay_id,
        "duplicate_of": w.duplicate_of,
        "first_hit_trap": _first_hit_trap(w),
        "scope_items": sorted(scope),
        "reference_outcomes": outcomes,
    }


def _snapshot(w: World) -> dict[str, Any]:
    return {
        "accounts": w.accounts,
        "open_items": w.items,
        "payments": w.payments,
        "remittance_lines": w.all_lines,
        "allocations": w.allocations,
        "adjustments": [],
        "cases": [],
        "policies": _policy_rows(w.pol),
        "audit": [],
        "_payer_script": w.script,
        "clock": [{"id": "clock", "now": f"{w.today}T09:00:00"}],
    }


def _task(w: World) -> dict[str, Any]:
    instructions = (
        f"Please post remittance {w.pay_id} from {w.payer_name} (payer account {w.payer_id}): {len(w.lines)} lines, "
        f"{w.total} cents in total. Match every line to its claim, apply the desk policies (get_policies) "
        "for adjustments, differences, unmatched lines, overpayments and duplicates, open the cases they call for, "
        "then post the payment and submit."
    )
    return {
        "instructions": instructions,
        "allowed_tools": list(TOOLS),
        "params": {"payment_id": w.pay_id, "payer_id": w.payer_id},
        "max_steps": 60,
    }


# -- a scaled world's history ----------------------------------------------------------------------
def _add_desk_day(w: World) -> None:
    """One more day of the desk's history (scaled worlds only): a remittance of one of the payers
    paying two to four claims (each with its look-alike claims of other patients), posted and
    applied or still waiting; the day's background receivables; and one or two earlier postings
    of the task's payer."""
    rng = w.rng
    payer = rng.randrange(len(w.payer_ids))
    paid: list[tuple[dict[str, Any], int]] = []
    for _ in range(rng.randint(2, 4)):
        name, date, billed = w.new_name(), w.service_date(w.today), w.amount()
        ref = w.fresh_ref()
        item = w.add_item(name, w.payer_ids[payer], ref, billed, None, date)
        _add_look_alikes(w, Draft(name=name, date=date, billed=billed, ref=ref, line_ref=ref, paid=billed, item=item))
        paid.append((item, billed if rng.random() < 0.7 else billed - rng.randint(1, billed // 2)))
    posted = rng.random() < 0.4
    if posted:  # the claims carry what the remittance left open
        for it, amt in paid:
            it["balance"] = it["amount_due"] - amt
            it["status"] = item_status(it["balance"], it["amount_due"])
    _post_earlier(w, w.eft_reference(), paid, rng.randint(1, 19), payer=payer, posted=posted)
    _add_background(w)
    _add_past_payments(w)


def _scale_world(w: World, scale: int) -> None:
    """Grow the finished task's world to about ``scale`` times its size (``scale - 1`` days of
    history that no search of the task finds)."""
    w.protect()
    for _ in range(scale - 1):
        _add_desk_day(w)


# -- the generator --------------------------------------------------------------------------------
def _draw(seed: int, defect_tag: str, scale: int, variant: int | None = None) -> Generated:
    """One task whose trap is ``defect_tag`` (see :data:`DEFECT_TAGS`), pure in its arguments.

    Every draw is consistent by construction, so one attempt always succeeds (the stream is
    ``random.Random(seed)``); a scaled world draws its history after the task, from the same
    stream."""
    w = build_world(seed, defect_tag, variant)
    tags = _line_kinds(w)
    # the line whose ref search also finds an old residual claim of another patient
    trap_at = w.rng.choice([i for i, k in enumerate(w.kinds) if k in MATCHED_KINDS])
    _remit(w)
    _plant_residual_claim(w, trap_at)
    _place_claims_among_hits(w)
    _add_background(w)
    _receive(w)
    if defect_tag == "duplicate_payment":
        _plant_duplicate_payment(w)
    _add_past_payments(w)
    key = _key(w, tags)
    if scale > 1:
        _scale_world(w, scale)
    return Generated(task=_task(w), snapshot=_snapshot(w), key=key)


def generate(seed: int, defect_tag: str, scale: int = 1, variant: int | None = None) -> Generated:
    """One task whose trap is ``defect_tag`` (see :data:`DEFECT_TAGS`), pure in its arguments,
    in a world about ``scale`` times the released size (the same task, key and brief at every
    scale; scale 1 is the release). ``variant`` k sets the desk's duplicate action to the k-th of
    its choices (the release deals them evenly over its duplicates); ``None`` draws it.

    Raises ``ValueError`` for an unknown tag or a scale below 1."""
    if defect_tag not in DEFECT_TAGS:
        raise ValueError(f"unknown defect tag {defect_tag!r}; choose from {', '.join(DEFECT_TAGS)}")
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an int >= 1, got {scale!r}")
    return _draw(seed, defect_tag, scale, variant)
