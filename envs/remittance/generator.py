"""Generator of remittance tasks: a hospital's receivables, one insurer payment, and a trap.

``generate(seed, defect_tag)`` is pure in its arguments. It draws the desk's policies (they vary
per task), a world of patients, payers and open items with near-duplicate claim refs, and an
incoming payment whose remittance lines contain the trap ``defect_tag`` (plus clean lines and
sometimes a second trap). The answer key lists every accepted end state
(``reference_outcomes``): e.g. a difference within tolerance may be written off or left open
when the policy allows either, and a short payment may be raised as an underpayment case or a
payer query.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from backoffice.envs.core import Generated
from backoffice.envs.core.canonical import derive_seed
from backoffice.envs.remittance.tables import (
    QUERY_CATEGORY,
    add_days,
    item_status,
    norm,
    osa_distance,
    search_items,
)

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
LAST = (
    "Lopez", "Okafor", "Nguyen", "Kowalski", "Tanaka", "Schmidt", "Haddad", "Johansson", "Rossi", "Mensah",
    "Brennan", "Silva", "Novak", "Achebe", "Moreau", "Iyer", "Fischer", "Costa", "Rahman", "Petrov",
    "Dubois", "Klein", "Osei", "Larsen", "Varga", "Castillo", "Ahmed", "Walsh", "Santos", "Berg",
)

POLICY_TEXT = {
    "tolerance_cents": "A line that leaves at most this many cents open on its claim, after contractual and patient adjustments, is a small difference within tolerance.",
    "tolerance_action": {
        "write_off": "Write a small difference within tolerance off on the claim with reason small_balance. Open no case.",
        "leave_open": "Leave a small difference within tolerance open on the claim: do not write it off and open no case.",
        "either": "A small difference within tolerance may be written off (reason small_balance) or left open on the claim; both are accepted. Open no case.",
    },
    "contractual_codes": "These adjustment codes are contractual: write each one off on the claim with reason contractual and its code, one write-off per code. Any other CO code is not written off: its amount stays open like a short payment.",
    "patient_codes": "Patient-responsibility codes (deductible, coinsurance, copay): move each amount to the patient with transfer_to_patient and its code.",
    "short_payment_action": "A line that leaves more than the tolerance open is an underpayment: apply what was paid, leave the rest open, and open an underpayment case for the line (a payer query about the line is accepted instead).",
    "unreferenced_action": {
        "case": "A line that matches no claim stays unapplied; open an unidentified_remittance case for the line.",
        "leave_unapplied": "A line that matches no claim stays unapplied on the payment; open no case (the cash team reviews unapplied cash weekly).",
    },
    "overpayment_action": {
        "refund_case": "When a line pays more than its claim's open balance, apply only the open balance; the excess stays unapplied and you open a refund_request case for the line.",
        "leave_unapplied": "When a line pays more than its claim's open balance, apply only the open balance; the excess stays unapplied on the payment. Open no case.",
    },
    "duplicate_action": {
        "hold_and_case": "A payment whose EFT reference and amount equal those of a payment already posted is a duplicate: apply nothing, open a duplicate_remittance case for the payment (no line) and post it with disposition hold.",
        "return": "A payment whose EFT reference and amount equal those of a payment already posted is a duplicate: apply nothing, open no case, and post it with disposition return.",
    },
    "ambiguous_action": "If a line fits more than one claim equally well, do not guess: query the payer about the line, wait for the reply and follow it (applies_to: allocate the line to the named claim; recoup: leave the line unapplied, the payer takes the money back).",
    "match_rule": "A line belongs to a claim of this payer when the claim ref matches exactly or within two typing errors, the patient name and service date are equal and the claim's amount due equals the line's billed amount. Similar refs of other patients are not matches. When a line's ref finds nothing, search by the patient name.",
    "posting": "When every line is handled, post the payment with disposition apply (or as the duplicate policy says), then submit.",
}


class _World:
    """Mutable scratch state of one generation (ids, refs, names in use)."""

    def __init__(self, rng: random.Random, seed: int):
        self.rng = rng
        self.seed = seed
        self.items: list[dict[str, Any]] = []
        self.item_ids: set[str] = set()
        self.refs: list[str] = []  # normalised claim refs in use
        self.invoices: set[str] = set()
        self.names: set[str] = set()
        self.accounts: list[dict[str, Any]] = []
        self.account_ids: set[str] = set()
        self.patient_account: dict[str, str] = {}
        self.numbers: set[int] = set()

    # -- identities --------------------------------------------------------------------------
    def number(self, lo: int = 1000, hi: int = 9999) -> int:
        while True:
            n = self.rng.randint(lo, hi)
            if n not in self.numbers:
                self.numbers.add(n)
                return n

    def new_name(self) -> str:
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
        while True:
            iid = f"OI-{self.rng.randint(1000, 9999)}"
            if iid not in self.item_ids:
                self.item_ids.add(iid)
                return iid

    def fresh_ref(self) -> str:
        while True:
            ref = f"CLM-{self.rng.randint(100000, 999999)}"
            n = norm(ref)
            if all(osa_distance(n, r) >= 3 for r in self.refs):
                self.refs.append(n)
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
            if n not in self.refs and 1 <= osa_distance(n, norm(ref)) <= max_edits:
                self.refs.append(n)
                return new

    def new_invoice(self) -> str:
        while True:
            inv = f"INV-{self.rng.randint(100000, 999999)}"
            if inv not in self.invoices:
                self.invoices.add(inv)
                return inv

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
    return {
        "tolerance_cents": rng.choice((100, 200, 500)),
        "tolerance_action": rng.choice(("write_off", "leave_open", "either")),
        "contractual_codes": rng.choice((["CO-45"], ["CO-45", "CO-253"])),
        "patient_codes": ["PR-1", "PR-2", "PR-3"],
        "short_payment_action": "underpayment_case",
        "unreferenced_action": rng.choice(("case", "leave_unapplied")),
        "overpayment_action": rng.choice(("refund_case", "leave_unapplied")),
        "duplicate_action": rng.choice(("hold_and_case", "return")),
        "ambiguous_action": "query_payer",
        "match_rule": "ref_patient_date_amount",
        "posting": "apply",
    }


def _policy_rows(pol: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for i, (key, value) in enumerate(pol.items(), start=1):
        text = POLICY_TEXT[key]
        if isinstance(text, dict):
            text = text[value]
        rows.append({"id": f"POL-{i:02d}", "key": key, "value": value, "text": text})
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
    alloc = min(line["paid_amount"], remaining)
    rest = remaining - alloc
    allocs = [[lid, iid, alloc]] if alloc > 0 else []
    cases = []
    if line["paid_amount"] > alloc and pol["overpayment_action"] == "refund_case":
        cases.append(["refund_request", pid, lid])
    if rest == 0:
        return [_variant("", allocs, wo, tr, cases, {iid: 0})]
    if rest <= pol["tolerance_cents"]:
        written = _variant(f"small-balance-written-off:{lid}", allocs, wo + [[iid, "small_balance", "", rest]], tr, cases, {iid: 0})
        left = _variant(f"small-balance-left-open:{lid}", allocs, wo, tr, cases, {iid: rest})
        return {"write_off": [written], "leave_open": [left], "either": [written, left]}[pol["tolerance_action"]]
    return [
        _variant(f"underpayment-case:{lid}", allocs, wo, tr, cases + [["underpayment", pid, lid]], {iid: rest}),
        _variant(f"underpayment-query:{lid}", allocs, wo, tr, cases + [[QUERY_CATEGORY, pid, lid]], {iid: rest}),
    ]


def _merge(pay: dict[str, Any], per_line: list[list[dict[str, Any]]], scope: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Cartesian product of the lines' variants -> whole-payment reference outcomes."""
    outs = []
    for combo in itertools.product(*per_line):
        allocs = sorted(a for v in combo for a in v["allocs"])
        items = {iid: it["balance"] for iid, it in scope.items()}
        for v in combo:
            items.update(v["items"])
        names = [v["name"] for v in combo if v["name"]]
        outs.append({
            "name": "alt:" + ("+".join(names) if names else "as-remitted"),
            "payment_status": "posted",
            "unapplied": pay["amount"] - sum(a[2] for a in allocs),
            "allocations": allocs,
            "write_offs": sorted(w for v in combo for w in v["wo"]),
            "transfers": sorted(t for v in combo for t in v["tr"]),
            "cases": sorted(c for v in combo for c in v["cases"]),
            "items": {iid: [b, item_status(b, scope[iid]["amount_due"])] for iid, b in sorted(items.items())},
        })
    return outs


# -- the generator ------------------------------------------------------------------------------
def generate(seed: int, defect_tag: str) -> Generated:
    """One task whose trap is ``defect_tag`` (see :data:`DEFECT_TAGS`), pure in its arguments."""
    if defect_tag not in DEFECT_TAGS:
        raise ValueError(f"unknown remittance defect tag {defect_tag!r}")
    rng = random.Random(seed)
    w = _World(rng, seed)
    pol = _policies(rng)
    today = add_days("2026-03-02", rng.randint(0, 75))
    now = f"{today}T09:00:00"

    payers = rng.sample(PAYERS, 3)
    payer_ids = []
    for name, code in payers:
        pid_ = f"AC-{w.number()}"
        payer_ids.append(pid_)
        w.accounts.append({"id": pid_, "kind": "payer", "name": name, "payer_code": code})
    payer_id, payer_name = payer_ids[0], payers[0][0]

    # which lines the payment carries: the trap, clean lines and (mostly) further traps
    tags = [defect_tag]
    if defect_tag == "exact_match":
        # every ref matches exactly; the traps are in the amounts
        kinds = ["clean"] * rng.randint(2, 3) + rng.sample(AMOUNT_TAGS, rng.randint(1, 2))
    elif defect_tag == "duplicate_payment":
        kinds = ["clean"] * rng.randint(2, 4)
    else:
        kinds = ["clean"] * rng.randint(1, 2) + [defect_tag]
        kinds += rng.sample([t for t in LINE_TAGS if t != defect_tag], rng.choices((0, 1, 2), weights=(3, 5, 2))[0])
    tags += [k for k in dict.fromkeys(kinds) if k not in ("clean", defect_tag)]
    rng.shuffle(kinds)
    # the line whose ref search also finds an old residual claim of another patient
    trap_at = rng.choice([i for i, k in enumerate(kinds) if k in MATCHED_KINDS])

    pnum = w.number()
    pay_id = f"PMT-{pnum}"
    lines: list[dict[str, Any]] = []
    line_items: list[dict[str, Any] | None] = []
    ambiguous: list[dict[str, Any]] = []
    script: list[dict[str, Any]] = []

    for i, kind in enumerate(kinds, start=1):
        lid = f"RL-{pnum}{i:02d}"
        name = w.new_name()
        date = w.service_date(today)
        billed = w.amount()
        codes: list[str] = []
        amts: list[int] = []
        paid = billed
        ref = w.fresh_ref()
        line_ref = ref
        item: dict[str, Any] | None = None
        if kind in MATCHED_KINDS:
            item = w.add_item(name, payer_id, ref, billed, None, date)
        if kind == "clean" and defect_tag != "duplicate_payment" and rng.random() < 0.6:
            # the routine contract discount most insurer lines carry
            codes, amts = ["CO-45"], [billed * rng.randint(8, 30) // 100]
            paid = billed - amts[0]
        elif kind == "contractual_adjustment":
            c = billed * rng.randint(10, 40) // 100
            if len(pol["contractual_codes"]) > 1 and rng.random() < 0.5:
                c2 = rng.randint(200, 3000)
                codes, amts = ["CO-45", "CO-253"], [c, c2]
            elif len(pol["contractual_codes"]) == 1 and rng.random() < 0.35:
                codes, amts = ["CO-45", "CO-253"], [c, rng.randint(600, 4000)]  # CO-253 not contractual here
            else:
                codes, amts = ["CO-45"], [c]
            paid = billed - sum(amts)
        elif kind == "patient_responsibility":
            p = rng.choice((1500, 2000, 2500, 3000, 5000, billed * rng.randint(5, 20) // 100))
            code = rng.choice(pol["patient_codes"])
            if rng.random() < 0.6:
                c = billed * rng.randint(10, 35) // 100
                codes, amts = ["CO-45", code], [c, p]
            else:
                codes, amts = [code], [p]
            paid = billed - sum(amts)
        elif kind == "short_payment":
            paid = billed - rng.randint(pol["tolerance_cents"] + 100, billed // 2)
        elif kind == "overpayment":
            paid = billed + rng.randint(5, 200) * 100
        elif kind == "small_difference_within_tolerance":
            paid = billed - rng.randint(1, pol["tolerance_cents"])
        elif kind == "fuzzy_reference":
            line_ref = w.near_ref(ref, 1)
        elif kind == "unreferenced_line":
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            while name in w.names:
                name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            w.names.add(name)
        elif kind == "payer_reply_needed":
            line_ref = f"ICN-{rng.randint(10**10, 10**11 - 1)}"
            twins = [w.add_item(name, payer_id, ref, billed, None, date), w.add_item(name, payer_id, w.fresh_ref(), billed, None, date)]
            ambiguous = twins
        line = {
            "id": lid, "payment_id": pay_id, "line_no": i, "claim_ref": line_ref, "patient_name": name,
            "service_date": date, "billed_amount": billed, "paid_amount": paid, "adj_codes": codes, "adj_amounts": amts,
        }
        lines.append(line)
        line_items.append(item)
        # near-duplicate claims of other patients around the line's ref (an unreferenced line's
        # ref is similar to other claims too): a search by ref mostly finds several claims
        if kind != "payer_reply_needed":
            for _ in range(rng.choice((1, 2, 2, 3, 3, 4))):
                other = w.new_name()
                amt = billed if rng.random() < 0.3 else w.amount()
                bal = amt if rng.random() < 0.7 else amt // 2
                w.add_item(other, rng.choice(payer_ids[:2]), w.near_ref(line_ref, 2), amt, bal, w.service_date(today))
            if rng.random() < 0.25 and item is not None:
                # the same patient's earlier visit with a similar ref and the same charge
                w.add_item(name, payer_id, w.near_ref(line_ref, 2), billed, billed, add_days(date, -rng.randint(7, 60)))
        # the payer's scripted reply to a query about this line (fixed by the task's seed)
        delay = 4 + derive_seed(seed, "reply-delay", lid) % 44
        reply = {"id": lid, "delay_hours": delay, "reply_kind": "confirm", "reply_claim_ref": line_ref,
                 "reply_text": f"Line {i} ({line_ref}) was adjudicated as shown on the remittance; no correction is due."}
        if kind == "payer_reply_needed":
            if derive_seed(seed, "payer-reply-kind") % 10 < 7:
                chosen = ambiguous[derive_seed(seed, "payer-reply-claim") % 2]
                reply.update(reply_kind="applies_to", reply_claim_ref=chosen["claim_ref"],
                             reply_text=f"Line {i} pays claim {chosen['claim_ref']} (invoice {chosen['invoice']}).")
            else:
                reply.update(reply_kind="recoup", reply_claim_ref="",
                             reply_text=f"Line {i} was paid in error; we will recoup it from a later remittance. Do not apply it.")
        script.append(reply)

    # a residual old claim near one line's ref: small balance, different patient
    trap_ref = lines[trap_at]["claim_ref"]
    w.add_item(w.new_name(), payer_id, w.near_ref(trap_ref, 2), w.amount(), rng.randint(1, 99), w.service_date(today))
    # search order carries no meaning: the line's claim takes a uniformly drawn position among
    # the hits of a search by the line's ref (item ids are arbitrary, and the seeded order
    # follows the ids, so the claim swaps ids with the hit at the drawn position)
    for line, item in zip(lines, line_items):
        if item is None:
            continue
        hits = search_items(w.items, line["claim_ref"], seed)
        if len(hits) > 1 and any(h is item for h in hits):
            other = hits[rng.randrange(len(hits))]
            item["id"], other["id"] = other["id"], item["id"]  # type: ignore[index]

    # background receivables of the hospital
    for _ in range(rng.randint(6, 12)):
        amt = w.amount()
        bal = rng.choice((amt, amt, amt // 3, 0))
        w.add_item(w.new_name(), rng.choice(payer_ids), w.fresh_ref(), amt, bal, w.service_date(today))

    amount = sum(ln["paid_amount"] for ln in lines)
    reference = f"EFT-{rng.randint(10**8, 10**9 - 1)}"
    payments = [{
        "id": pay_id, "payer_id": payer_id, "payer_name": payer_name, "reference": reference, "amount": amount,
        "received_on": today, "status": "unposted", "unapplied": amount, "line_count": len(lines),
    }]
    all_lines = list(lines)
    allocations: list[dict[str, Any]] = []

    def past_payment(ref_: str, amt_lines: list[tuple[dict[str, Any], int]], days_ago: int) -> str:
        num = w.number()
        hid = f"PMT-{num}"
        total = sum(a for _, a in amt_lines)
        payments.append({"id": hid, "payer_id": payer_id, "payer_name": payer_name, "reference": ref_, "amount": total,
                         "received_on": add_days(today, -days_ago), "status": "posted", "unapplied": 0, "line_count": len(amt_lines)})
        for j, (it, a) in enumerate(amt_lines, start=1):
            hl = f"RL-{num}{j:02d}"
            all_lines.append({"id": hl, "payment_id": hid, "line_no": j, "claim_ref": it["claim_ref"], "patient_name": it["patient_name"],
                              "service_date": it["service_date"], "billed_amount": it["amount_due"], "paid_amount": a,
                              "adj_codes": [], "adj_amounts": []})
            allocations.append({"id": f"AH-{len(allocations) + 1:04d}", "payment_id": hid, "line_id": hl, "item_id": it["id"],
                                "amount": a, "status": "active", "created_at": f"{add_days(today, -days_ago)}T10:00:00", "reversed_at": ""})
        return hid

    duplicate_of = ""
    if defect_tag == "duplicate_payment":
        for it in line_items:
            assert it is not None
            it["balance"], it["status"] = 0, "closed"
        duplicate_of = past_payment(reference, [(it, it["amount_due"]) for it in line_items if it], rng.randint(5, 15))
        # the original's lines carry the same claims as the duplicate's
    for _ in range(rng.randint(1, 2)):
        same_amount = defect_tag != "duplicate_payment" and rng.random() < 0.3
        amt = amount if same_amount else w.amount()
        it = w.add_item(w.new_name(), payer_id, w.fresh_ref(), amt, 0, add_days(today, -rng.randint(20, 150)))
        past_payment(f"EFT-{rng.randint(10**8, 10**9 - 1)}", [(it, amt)], rng.randint(3, 19))

    # -- the answer key -----------------------------------------------------------------------
    scope: dict[str, dict[str, Any]] = {}
    for it in [*line_items, *ambiguous]:
        if it is not None:
            scope[it["id"]] = dict(it)
    if defect_tag == "duplicate_payment":
        hold = pol["duplicate_action"] == "hold_and_case"
        outcomes = [{
            "name": "alt:duplicate-" + ("held" if hold else "returned"),
            "payment_status": "held" if hold else "returned",
            "unapplied": amount if hold else 0,
            "allocations": [], "write_offs": [], "transfers": [],
            "cases": [["duplicate_remittance", pay_id, ""]] if hold else [],
            "items": {iid: [it["balance"], it["status"]] for iid, it in sorted(scope.items())},
        }]
        outcome_class = "oc_duplicate_" + ("held" if hold else "returned")
    else:
        per_line = []
        for line, item, kind in zip(lines, line_items, kinds):
            if kind == "unreferenced_line":
                cases = [["unidentified_remittance", pay_id, line["id"]]] if pol["unreferenced_action"] == "case" else []
                per_line.append([_variant("", cases=cases)])
            elif kind == "payer_reply_needed":
                reply = next(s for s in script if s["id"] == line["id"])
                q = [[QUERY_CATEGORY, pay_id, line["id"]]]
                if reply["reply_kind"] == "applies_to":
                    chosen = next(a for a in ambiguous if a["claim_ref"] == reply["reply_claim_ref"])
                    per_line.append([_variant("", [[line["id"], chosen["id"], line["paid_amount"]]], cases=q, items={chosen["id"]: 0})])
                else:
                    per_line.append([_variant("", cases=q)])
            else:
                assert item is not None
                per_line.append(_resolve(pol, pay_id, line, item))
        outcomes = _merge(payments[0], per_line, scope)
        if "payer_reply_needed" in kinds:
            outcome_class = "oc_post_after_payer_reply"
        elif any(c[0] == "underpayment" for o in outcomes for c in o["cases"]):
            outcome_class = "oc_post_with_underpayment"
        elif any(o["cases"] for o in outcomes):
            outcome_class = "oc_post_with_case"
        elif any(o["transfers"] for o in outcomes):
            outcome_class = "oc_post_with_patient_transfer"
        elif any(o["write_offs"] for o in outcomes):
            outcome_class = "oc_post_with_write_off"
        else:
            outcome_class = "oc_post_clean"

    targeted = sorted({iid for o in outcomes for iid, (b, _) in o["items"].items() if b != scope[iid]["balance"]}
                      | {a[1] for o in outcomes for a in o["allocations"]})
    targets = [f"payments:{pay_id}", "allocations:AL-*", "adjustments:*", "cases:*", "audit:*", "clock:clock", "open_items:PI-*"]
    targets += [f"open_items:{iid}" for iid in targeted]

    # does taking a ref search's first hit go wrong on some line?
    first_hit_trap = False
    if defect_tag != "duplicate_payment":
        for line, item in zip(lines, line_items):
            hits = search_items(w.items, line["claim_ref"], seed)
            if hits and (item is None or hits[0]["id"] != item["id"]):
                first_hit_trap = True

    snapshot = {
        "accounts": w.accounts,
        "open_items": w.items,
        "payments": payments,
        "remittance_lines": all_lines,
        "allocations": allocations,
        "adjustments": [],
        "cases": [],
        "policies": _policy_rows(pol),
        "audit": [],
        "_payer_script": script,
        "clock": [{"id": "clock", "now": now}],
    }
    instructions = (
        f"Please post remittance {pay_id} from {payer_name} (payer account {payer_id}): {len(lines)} lines, "
        f"{amount} cents in total. Match every line to its claim, apply the desk policies (get_policies) "
        "for adjustments, differences, unmatched lines, overpayments and duplicates, open the cases they call for, "
        "then post the payment and submit."
    )
    task = {
        "instructions": instructions,
        "allowed_tools": list(TOOLS),
        "params": {"payment_id": pay_id, "payer_id": payer_id},
        "max_steps": 60,
    }
    key = {
        "defect_tags": tags,
        "targets": targets,
        "outcome_class": outcome_class,
        "needs_action": True,
        "payment_id": pay_id,
        "duplicate_of": duplicate_of,
        "first_hit_trap": first_hit_trap,
        "scope_items": sorted(scope),
        "reference_outcomes": outcomes,
    }
    return Generated(task=task, snapshot=snapshot, key=key)
