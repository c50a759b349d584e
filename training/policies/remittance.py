"""Policies of the remittance domain: the oracle, one wrong policy per failure code, and a
self-correcting oracle that allocates wrongly first and reverses (it passes, with reversals).

Every policy reads only tool results. The oracle follows the task's policies as returned by
``get_policies``: match each line by claim ref (within two typing errors), patient, service date
and billed amount; write off contractual codes, transfer patient responsibility, handle small
differences, short payments, overpayments, unmatched and ambiguous lines, duplicates; post.
"""

from __future__ import annotations

from typing import Any

from backoffice.envs.remittance.tables import norm, osa_distance
from backoffice.training.policies.base import Plan, ScriptedPolicy, call

AMBIGUOUS = "ambiguous"


class Oracle(ScriptedPolicy):
    """Passes every released task using only what the tools return."""

    name = "oracle"
    version = "1"
    #: what to do with a small difference when the policy accepts either (write_off | leave_open)
    either_choice = "write_off"
    check_duplicates = True

    # -- decisions wrong policies override ---------------------------------------------------
    def choose(self, line: dict[str, Any], hits: list[dict[str, Any]], payer_id: str) -> dict[str, Any] | None:
        """The unique hit that matches the line by ref, patient, date and amount, else None."""
        strong = [h for h in hits if self.same_claim(h, line, payer_id)
                  and osa_distance(norm(h["claim_ref"]), norm(line["claim_ref"])) <= 2]
        return strong[0] if len(strong) == 1 else None

    @staticmethod
    def same_claim(item: dict[str, Any], line: dict[str, Any], payer_id: str) -> bool:
        return (item["patient_name"] == line["patient_name"] and item["service_date"] == line["service_date"]
                and item["amount_due"] == line["billed_amount"] and item["payer_id"] == payer_id
                and item["responsibility"] == "payer")

    def allocation_amount(self, line: dict[str, Any], remaining: int, rest_if_paid: int, pol: dict[str, Any]) -> int:
        """Cents to allocate: what was paid, capped at the claim's remaining balance."""
        return min(line["paid_amount"], remaining)

    def small_difference(self, pol: dict[str, Any]) -> str:
        action = pol["tolerance_action"]
        return self.either_choice if action == "either" else action

    def transfers_patient_share(self) -> bool:
        return True

    def opens_cases(self) -> bool:
        return True

    def write_off_beyond_tolerance(self) -> bool:
        return False

    def case_for_small_difference(self) -> bool:
        return False

    def posts(self) -> bool:
        return True

    # -- the plan ------------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        pid = brief["params"]["payment_id"]
        pol = {p["key"]: p["value"] for p in (yield call("get_policies"))["result"]}
        got = (yield call("get_payment", payment_id=pid))["result"]
        payment, lines = got["payment"], got["lines"]
        payer_id = payment["payer_id"]
        self.seen: dict[str, dict[str, Any]] = {}
        self.matched: set[str] = set()
        if self.check_duplicates:
            others = (yield call("list_payments", payer_id=payer_id))["result"]
            if any(o["id"] != pid and o["status"] == "posted" and o["reference"] == payment["reference"]
                   and o["amount"] == payment["amount"] for o in others):
                if pol["duplicate_action"] == "hold_and_case":
                    yield from self.case(pid, "duplicate_remittance", "", "This EFT was already posted.")
                    if self.posts():
                        yield call("post_payment", payment_id=pid, disposition="hold")
                elif self.posts():
                    yield call("post_payment", payment_id=pid, disposition="return")
                return
        pending: list[tuple[dict[str, Any], str]] = []
        for line in lines:
            item = yield from self.find(line, payer_id)
            if item == AMBIGUOUS:
                q = yield call("query_payer", payment_id=pid, line_id=line["id"],
                               question=f"Line {line['line_no']} ({line['claim_ref']}) fits two claims; which one does it pay?")
                pending.append((line, q["result"]["case"]["id"]))
            elif item is None:
                if pol["unreferenced_action"] == "case":
                    yield from self.case(pid, "unidentified_remittance", line["id"], "No claim matches this line.")
            else:
                yield from self.apply_line(pid, line, item, pol)
        while pending:
            yield call("wait")
            still = []
            for line, case_id in pending:
                case = (yield call("get_case", case_id=case_id))["result"]["case"]
                if case["status"] != "answered":
                    still.append((line, case_id))
                elif case["reply_kind"] == "applies_to":
                    hits = (yield call("search_open_items", query=case["reply_claim_ref"]))["result"]["items"]
                    exact = [h for h in hits if h["claim_ref"] == case["reply_claim_ref"]]
                    if len(exact) == 1:
                        yield from self.apply_line(pid, line, exact[0], pol)
            pending = still
        yield from self.finish(pid, pol)
        if self.posts():
            yield call("post_payment", payment_id=pid, disposition="apply")

    def finish(self, pid: str, pol: dict[str, Any]) -> Plan:
        """Hook run after every line is handled, before posting."""
        return
        yield {}

    def case(self, pid: str, category: str, line_id: str, note: str) -> Plan:
        if self.opens_cases():
            yield call("open_case", payment_id=pid, category=category, line_id=line_id, note=note)

    def find(self, line: dict[str, Any], payer_id: str) -> Plan:
        """The line's claim (an item dict), ``AMBIGUOUS`` or ``None`` (no claim)."""
        hits: list[dict[str, Any]] = []
        if line["claim_ref"]:
            hits = (yield call("search_open_items", query=line["claim_ref"]))["result"]["items"]
            for h in hits:
                self.seen.setdefault(h["id"], h)
            item = self.choose(line, hits, payer_id)
            if item is not None:
                return item
        by_name = (yield call("search_open_items", query=line["patient_name"]))["result"]["items"]
        for h in by_name:
            self.seen.setdefault(h["id"], h)
        demo = [h for h in by_name if self.same_claim(h, line, payer_id)]
        if len(demo) == 1:
            return demo[0]
        return AMBIGUOUS if len(demo) > 1 else None

    def apply_line(self, pid: str, line: dict[str, Any], item: dict[str, Any], pol: dict[str, Any]) -> Plan:
        self.matched.add(item["id"])
        iid, lid = item["id"], line["id"]
        reduced = 0
        for code, amt in zip(line["adj_codes"], line["adj_amounts"]):
            if code in pol["contractual_codes"]:
                yield call("write_off", item_id=iid, amount=amt, reason="contractual", code=code, line_id=lid)
                reduced += amt
            elif code in pol["patient_codes"] and self.transfers_patient_share():
                yield call("transfer_to_patient", item_id=iid, amount=amt, code=code, line_id=lid)
                reduced += amt
            elif code in pol["patient_codes"]:
                reduced += amt  # (wrong policy) treats the patient share as settled without moving it
        remaining = item["balance"] - reduced
        amount = self.allocation_amount(line, remaining, remaining - min(line["paid_amount"], remaining), pol)
        if amount > 0:
            yield call("allocate", payment_id=pid, line_id=lid, item_id=iid, amount=amount)
        paid_applied = min(amount, line["paid_amount"])
        if line["paid_amount"] > remaining and pol["overpayment_action"] == "refund_case":
            yield from self.case(pid, "refund_request", lid, "The line pays more than the claim's balance; please refund or recoup the excess.")
        rest = remaining - paid_applied
        if rest <= 0:
            return
        beyond = rest > pol["tolerance_cents"]
        if not beyond:
            if self.small_difference(pol) == "write_off" or self.write_off_beyond_tolerance():
                yield call("write_off", item_id=iid, amount=rest, reason="small_balance", line_id=lid)
            if self.case_for_small_difference():
                yield from self.case(pid, "underpayment", lid, "Small difference.")
        else:
            if self.write_off_beyond_tolerance():
                yield call("write_off", item_id=iid, amount=rest, reason="small_balance", line_id=lid)
            yield from self.case(pid, "underpayment", lid, f"Paid {line['paid_amount']} cents; {rest} cents remain open.")


class LeaveOpenOracle(Oracle):
    """The oracle, choosing the other accepted alternative for small differences."""

    name = "oracle-leave-open"
    either_choice = "leave_open"


class FirstHitPolicy(Oracle):
    """misallocation: takes the first search hit for a line's ref instead of checking it."""

    def choose(self, line, hits, payer_id):
        return hits[0] if hits else None


class OverAllocatingPolicy(Oracle):
    """over_allocation: applies an overpaid line's whole amount to the claim (credit balance)."""

    def allocation_amount(self, line, remaining, rest_if_paid, pol):
        return line["paid_amount"]


class ParkShortPaymentsPolicy(Oracle):
    """unapplied_balance_wrong: leaves a short-paid line unapplied until its case is resolved."""

    def allocation_amount(self, line, remaining, rest_if_paid, pol):
        if rest_if_paid > pol["tolerance_cents"]:
            return 0
        return super().allocation_amount(line, remaining, rest_if_paid, pol)


class NoDuplicateCheckPolicy(Oracle):
    """duplicate_applied: never checks whether the remittance was already posted."""

    check_duplicates = False

    def allocation_amount(self, line, remaining, rest_if_paid, pol):
        if remaining <= 0:  # the claim is already settled: applies the line as remitted anyway
            return line["paid_amount"]
        return super().allocation_amount(line, remaining, rest_if_paid, pol)


class NoCasePolicy(Oracle):
    """missed_case: never opens a case with the payer."""

    def opens_cases(self):
        return False


class CaseHappyPolicy(Oracle):
    """unneeded_case: also raises small differences within tolerance as underpayments."""

    def case_for_small_difference(self):
        return True


class WriteOffEverythingPolicy(Oracle):
    """wrong_write_off: writes off whatever a line leaves open, beyond tolerance too."""

    def write_off_beyond_tolerance(self):
        return True


class IgnorePatientSharePolicy(Oracle):
    """patient_responsibility_missed: leaves the patient's share on the insurer's claim."""

    def transfers_patient_share(self):
        return False


class NeverPostPolicy(Oracle):
    """payment_status_wrong: does all the matching but never posts the payment."""

    def posts(self):
        return False


class TidyUpPolicy(Oracle):
    """forbidden_write: also writes off tiny balances of other claims it saw in searches."""

    def finish(self, pid, pol):
        for iid in sorted(self.seen):
            h = self.seen[iid]
            if iid not in self.matched and h["responsibility"] == "payer" and 0 < h["balance"] <= pol["tolerance_cents"]:
                yield call("write_off", item_id=iid, amount=h["balance"], reason="small_balance")


class ReversingPolicy(Oracle):
    """Allocates the first line with a misleading first search hit to that hit, then reverses
    the allocation and applies it correctly: passes, with one reversal."""

    name = "reversing"

    def plan(self, brief, info):
        self._pid = brief["params"]["payment_id"]
        self._done_mistake = False
        return (yield from super().plan(brief, info))

    def find(self, line, payer_id):
        item = yield from super().find(line, payer_id)
        if not self._done_mistake and isinstance(item, dict) and line["claim_ref"]:
            first = (yield call("search_open_items", query=line["claim_ref"]))["result"]["items"]
            if first and first[0]["id"] != item["id"] and first[0]["responsibility"] == "payer":
                res = yield call("allocate", payment_id=self._pid, line_id=line["id"], item_id=first[0]["id"], amount=line["paid_amount"])
                if res["status"] == "ok":
                    yield call("reverse_allocation", allocation_id=res["result"]["allocation"]["id"])
                    self._done_mistake = True
        return item


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "misallocation": FirstHitPolicy,
    "over_allocation": OverAllocatingPolicy,
    "unapplied_balance_wrong": ParkShortPaymentsPolicy,
    "duplicate_applied": NoDuplicateCheckPolicy,
    "missed_case": NoCasePolicy,
    "unneeded_case": CaseHappyPolicy,
    "wrong_write_off": WriteOffEverythingPolicy,
    "patient_responsibility_missed": IgnorePatientSharePolicy,
    "payment_status_wrong": NeverPostPolicy,
    "forbidden_write": TidyUpPolicy,
}
