"""Policies of the remittance domain: the oracle, one wrong policy per failure code, a
self-correcting oracle that allocates wrongly first and reverses (it passes, with reversals),
the blind policies (``BLIND_POLICIES``), one rule-ignoring policy per documented rule
(``RULE_POLICIES``) and the exploit hooks (``EXPLOITS``).

Every policy reads only tool results. The oracle follows the task's policies as returned by
``get_policies``: match each line by claim ref (within two typing errors), patient, service date
and billed amount; write off contractual codes, transfer patient responsibility, handle small
differences, short payments, overpayments, unmatched and ambiguous lines, duplicates; post.

List tools return one page at a time: the oracle reads every page of the policies and of the
payments with the incoming payment's EFT reference (following ``next_cursor``), so it stays
right however large the world is; at released size each is one page.

Rule sharing: the oracle and the catalog may share the domain's public rule helpers in
``envs/remittance/`` (here the claim-ref matching of the match_rule policy: ``norm`` and
``osa_distance`` of ``backoffice.envs.remittance.tables``). The oracle never imports the grader
(``backoffice.graders.remittance``) and the grader imports neither this module nor the catalog,
so the oracle passing every task checks the grader independently.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, Final, Literal

from backoffice.envs.core.canonical import loads
from backoffice.envs.remittance.search import search_store
from backoffice.envs.remittance.tables import DUPLICATE_ACTIONS, norm, osa_distance
from backoffice.training.integrity.exploits import Hook
from backoffice.training.integrity.scale import Paged, Scaled, param, rows_where_args
from backoffice.training.policies.base import Action, Plan, Policy, ScriptedPolicy, call, every_page

AMBIGUOUS: Final = "ambiguous"


def policy_values(document: Mapping[str, Any]) -> dict[str, Any]:
    """The desk's policy values from ``get_policies``' rule document: rule id -> ``value``."""
    return {r["id"]: r.get("value") for r in document.get("rules", ())}


def search(query: str) -> Generator[Action, dict[str, Any], list[dict[str, Any]]]:
    """Every hit of ``search_open_items`` for ``query``, page after page."""
    return (yield from every_page("search_open_items", "items", query=query))


def first_read(brief: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's first read (the payment and its remittance lines): what the integrity probes
    give an attacker besides the brief (``integrity.probes.visible_probe``)."""
    return [call("get_payment", payment_id=brief["params"]["payment_id"])]


class Oracle(ScriptedPolicy):
    """Passes every released task using only what the tools return."""

    name = "oracle"
    version = "1"
    #: a short payment the desk lets you raise either way: a payer query instead of a case
    short_by_query = False
    check_duplicates = True
    always_cases_duplicates = False

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
        """Cents to allocate: what was paid, capped at the claim's remaining balance (unless the
        desk applies an overpayment whole, putting the claim in credit)."""
        if self.overpayment_action(pol) == "credit":
            return int(line["paid_amount"])
        return min(line["paid_amount"], remaining)

    def small_difference(self, pol: dict[str, Any]) -> str:
        return str(pol["tolerance_action"])

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

    # -- the desk's rules, as read from get_policies (rule-ignoring policies override these) ---------
    def tolerance(self, pol: dict[str, Any]) -> int:
        return int(pol["tolerance_cents"])

    def is_contractual(self, code: str, pol: dict[str, Any]) -> bool:
        return code in pol["contractual_codes"]

    def is_patient(self, code: str, pol: dict[str, Any]) -> bool:
        return code in pol["patient_codes"]

    def cases_short_payments(self, pol: dict[str, Any]) -> bool:
        return pol["short_payment_action"] == "case"

    def duplicate_action(self, pol: dict[str, Any]) -> str:
        return str(pol["duplicate_action"])

    def unreferenced_action(self, pol: dict[str, Any]) -> str:
        return pol["unreferenced_action"]

    def overpayment_action(self, pol: dict[str, Any]) -> str:
        return pol["overpayment_action"]

    def queries_ambiguous(self) -> bool:
        return True

    def waits_for_replies(self) -> bool:
        return True

    def allocate_calls(self, pid: str, lid: str, iid: str, amount: int) -> Plan:
        """The allocation of ``amount`` from line ``lid`` to claim ``iid`` (one call)."""
        yield call("allocate", payment_id=pid, line_id=lid, item_id=iid, amount=amount)

    def read_policies(self) -> Generator[Action, dict[str, Any], dict[str, Any]]:
        """The desk's policies (one ``get_policies`` call)."""
        return policy_values((yield call("get_policies"))["result"])

    # -- the plan ------------------------------------------------------------------------------
    def plan(self, brief: dict[str, Any], info: dict[str, Any]) -> Plan:
        pid = brief["params"]["payment_id"]
        pol = self.pol = yield from self.read_policies()
        self.cased: set[str] = set()
        got = (yield call("get_payment", payment_id=pid))["result"]
        payment, lines = got["payment"], got["lines"]
        payer_id = payment["payer_id"]
        self.seen: dict[str, dict[str, Any]] = {}
        self.matched: set[str] = set()
        self.guess: dict[str, dict[str, Any]] = {}
        if self.check_duplicates:
            others = yield from every_page("list_payments", "payments", payer_id=payer_id, reference=payment["reference"])
            if any(o["id"] != pid and o["status"] == "posted" and o["reference"] == payment["reference"]
                   and o["amount"] == payment["amount"] for o in others):
                disposition, category = DUPLICATE_ACTIONS[self.duplicate_action(pol)]
                if category or self.always_cases_duplicates:
                    yield from self.case(pid, category or "duplicate_remittance", "", "This EFT was already posted.")
                if self.posts():
                    yield call("post_payment", payment_id=pid, disposition=disposition)
                return
        self.pending: list[tuple[dict[str, Any], str]] = []  # payer queries awaiting their reply
        for line in lines:
            item = yield from self.find(line, payer_id)
            if item == AMBIGUOUS and not self.queries_ambiguous():
                item = self.guess.get(line["id"])
            if item == AMBIGUOUS:
                q = yield call("query_payer", payment_id=pid, line_id=line["id"],
                               question=f"Line {line['line_no']} ({line['claim_ref']}) fits two claims; which one does it pay?")
                if q.get("status") == "ok":
                    self.pending.append((line, q["result"]["case"]["id"]))
            elif item is None:
                action = self.unreferenced_action(pol)
                if action == "case":
                    yield from self.case(pid, "unidentified_remittance", line["id"], "No claim matches this line.")
                elif action == "query":
                    q = yield call("query_payer", payment_id=pid, line_id=line["id"], question=f"Line {line['line_no']} matches no claim of ours; what does it pay?")
                    if q.get("status") == "ok":
                        self.pending.append((line, q["result"]["case"]["id"]))
            else:
                yield from self.apply_line(pid, line, item, pol)
        while self.pending and self.waits_for_replies():
            yield call("wait")
            batch, self.pending = self.pending, []
            for line, case_id in batch:
                case = (yield call("get_case", case_id=case_id))["result"]["case"]
                if case["status"] != "answered":
                    self.pending.append((line, case_id))
                elif case["reply_kind"] == "applies_to":
                    hits = yield from search(case["reply_claim_ref"])
                    exact = [h for h in hits if h["claim_ref"] == case["reply_claim_ref"]]
                    if len(exact) == 1:
                        yield from self.apply_line(pid, line, exact[0], pol)
        yield from self.finish(pid, pol)
        if self.posts():
            yield call("post_payment", payment_id=pid, disposition="apply")

    def finish(self, pid: str, pol: dict[str, Any]) -> Plan:
        """Hook run after every line is handled, before posting."""
        return
        yield {}

    def case(self, pid: str, category: str, line_id: str, note: str) -> Plan:
        """Open a case (per line, or once per category of the payment, as the desk's case_scope says)."""
        if not self.opens_cases():
            return
        if line_id and self.case_scope(self.pol) == "payment":
            if category in self.cased:
                return
            self.cased.add(category)
            line_id, note = "", f"{note} (line {line_id})"
        yield call("open_case", payment_id=pid, category=category, line_id=line_id, note=note)

    def case_scope(self, pol: dict[str, Any]) -> str:
        return str(pol["case_scope"])

    def find(self, line: dict[str, Any], payer_id: str) -> Generator[Action, dict[str, Any], dict[str, Any] | Literal["ambiguous"] | None]:
        """The line's claim (an item dict), ``AMBIGUOUS`` or ``None`` (no claim)."""
        hits: list[dict[str, Any]] = []
        if line["claim_ref"]:
            hits = yield from search(line["claim_ref"])
            for h in hits:
                self.seen.setdefault(h["id"], h)
            item = self.choose(line, hits, payer_id)
            if item is not None:
                return item
        by_name = yield from search(line["patient_name"])
        for h in by_name:
            self.seen.setdefault(h["id"], h)
        demo = [h for h in by_name if self.same_claim(h, line, payer_id)]
        if len(demo) == 1:
            return demo[0]
        if len(demo) > 1:
            self.guess[line["id"]] = demo[0]
            return AMBIGUOUS
        return None

    def apply_line(self, pid: str, line: dict[str, Any], item: dict[str, Any], pol: dict[str, Any]) -> Plan:
        self.matched.add(item["id"])
        iid, lid = item["id"], line["id"]
        reduced = 0
        for code, amt in zip(line["adj_codes"], line["adj_amounts"]):
            if self.is_contractual(code, pol):
                yield from self.adjust("write_off", item_id=iid, amount=amt, reason="contractual", code=code, line_id=lid)
                reduced += amt
            elif self.is_patient(code, pol) and self.transfers_patient_share():
                yield from self.adjust("transfer_to_patient", item_id=iid, amount=amt, code=code, line_id=lid)
                reduced += amt
            elif self.is_patient(code, pol):
                reduced += amt  # (wrong policy) treats the patient share as settled without moving it
        remaining = item["balance"] - reduced
        amount = self.allocation_amount(line, remaining, remaining - min(line["paid_amount"], remaining), pol)
        if amount > 0:
            yield from self.allocate_calls(pid, lid, iid, amount)
        paid_applied = min(amount, line["paid_amount"])
        if line["paid_amount"] > remaining and self.overpayment_action(pol) == "refund_case":
            yield from self.case(pid, "refund_request", lid, "The line pays more than the claim's balance; please refund or recoup the excess.")
        rest = remaining - paid_applied
        if rest <= 0:
            return
        beyond = rest > self.tolerance(pol)
        if not beyond:
            if self.small_difference(pol) == "write_off" or self.write_off_beyond_tolerance():
                yield call("write_off", item_id=iid, amount=rest, reason="small_balance", line_id=lid)
            if self.case_for_small_difference():
                yield from self.case(pid, "underpayment", lid, "Small difference.")
        else:
            if self.write_off_beyond_tolerance():
                yield call("write_off", item_id=iid, amount=rest, reason="small_balance", line_id=lid)
            if self.cases_short_payments(pol) and self.short_by_query:
                q = yield call("query_payer", payment_id=pid, line_id=lid, question=f"Paid {line['paid_amount']} cents; {rest} cents remain open: why?")
                if q.get("status") == "ok":
                    self.pending.append((line, q["result"]["case"]["id"]))
            elif self.cases_short_payments(pol):
                yield from self.case(pid, "underpayment", lid, f"Paid {line['paid_amount']} cents; {rest} cents remain open.")

    def adjust(self, tool: str, **args: Any) -> Plan:
        """One adjustment call (a contractual write-off or a patient transfer)."""
        yield call(tool, **args)


class QueryShortPaymentsOracle(Oracle):
    """The oracle, choosing the other accepted alternative for a short payment: a payer query
    (then wait, read the reply and act on it) instead of an underpayment case."""

    name = "oracle-payer-query"
    short_by_query = True


class FirstHitPolicy(Oracle):
    """misallocation: takes the first search hit for a line's ref instead of checking it."""

    def choose(self, line, hits, payer_id):
        return hits[0] if hits else None

    def allocation_amount(self, line, remaining, rest_if_paid, pol):
        # applies the line to the hit it took even when the hit cannot take the adjustments
        return max(1, super().allocation_amount(line, remaining, rest_if_paid, pol))


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


class TransferContractualPolicy(Oracle):
    """wrong_transfer: bills the patient for contractual adjustments instead of writing them off."""

    def adjust(self, tool, **args):
        if tool == "write_off" and args.get("reason") == "contractual":
            args.pop("reason")
            tool = "transfer_to_patient"
        yield call(tool, **args)


class SplitAllocationPolicy(Oracle):
    """duplicate_allocation: applies each line in two allocations to the same claim."""

    def allocate_calls(self, pid, lid, iid, amount):
        if amount < 2:
            yield from super().allocate_calls(pid, lid, iid, amount)
            return
        yield call("allocate", payment_id=pid, line_id=lid, item_id=iid, amount=amount // 2)
        yield call("allocate", payment_id=pid, line_id=lid, item_id=iid, amount=amount - amount // 2)


class ChurningPolicy(Oracle):
    """allocation_churn: applies a line correctly, reverses it and applies it again."""

    def plan(self, brief, info):
        self._churned = False
        return (yield from super().plan(brief, info))

    def allocate_calls(self, pid, lid, iid, amount):
        res = yield call("allocate", payment_id=pid, line_id=lid, item_id=iid, amount=amount)
        if not self._churned and res.get("status") == "ok":
            self._churned = True
            yield call("reverse_allocation", allocation_id=res["result"]["allocation"]["id"])
            yield call("allocate", payment_id=pid, line_id=lid, item_id=iid, amount=amount)


class NoWaitPolicy(Oracle):
    """payer_reply_unprocessed: queries the payer about an ambiguous line but never waits for
    (or reads) the reply; the line stays unapplied."""

    def waits_for_replies(self):
        return False


WRONG_POLICIES: dict[str, type[Oracle]] = {
    "misallocation": FirstHitPolicy,
    "over_allocation": OverAllocatingPolicy,
    "unapplied_balance_wrong": ParkShortPaymentsPolicy,
    "duplicate_applied": NoDuplicateCheckPolicy,
    "missed_case": NoCasePolicy,
    "unneeded_case": CaseHappyPolicy,
    "wrong_write_off": WriteOffEverythingPolicy,
    "wrong_transfer": TransferContractualPolicy,
    "patient_responsibility_missed": IgnorePatientSharePolicy,
    "payment_status_wrong": NeverPostPolicy,
    "duplicate_allocation": SplitAllocationPolicy,
    "allocation_churn": ChurningPolicy,
    "payer_reply_unprocessed": NoWaitPolicy,
    "forbidden_write": TidyUpPolicy,
}


# -- rule-ignoring policies: the oracle minus one documented rule ---------------------------------
class IgnoreToleranceRule(Oracle):
    """tolerance_cents: no tolerance; every difference left open is a short payment."""

    def tolerance(self, pol):
        return 0


class IgnoreToleranceAction(Oracle):
    """tolerance_action: the other action on a small difference (left open where the desk writes
    it off, written off where it leaves it open; either is right where the desk accepts both)."""

    def small_difference(self, pol):
        return "leave_open" if pol["tolerance_action"] == "write_off" else "write_off"


class IgnoreContractualRule(Oracle):
    """contractual_codes: writes no contractual code off (its amount stays open on the claim)."""

    def is_contractual(self, code, pol):
        return False


class IgnorePatientRule(Oracle):
    """patient_codes: moves no patient share (it stays open on the insurer's claim)."""

    def is_patient(self, code, pol):
        return False


class IgnoreOtherCodesRule(Oracle):
    """other_codes: writes off every CO code as contractual and moves every PR code to the
    patient, listed or not (the v1 habit of issue 32's attacker)."""

    def is_contractual(self, code, pol):
        return code.startswith("CO-")

    def is_patient(self, code, pol):
        return code.startswith("PR-")


class IgnoreShortPaymentRule(Oracle):
    """short_payment_action: the other action on a short payment (no case where the desk asks
    for one, a case where it leaves the rest open)."""

    def cases_short_payments(self, pol):
        return pol["short_payment_action"] != "case"


class IgnoreUnreferencedRule(Oracle):
    """unreferenced_action: what another desk does with a line that matches no claim (a case where
    the desk leaves it unapplied or asks the payer, none where it opens a case)."""

    def unreferenced_action(self, pol):
        return "leave_unapplied" if pol["unreferenced_action"] == "case" else "case"


class IgnoreOverpaymentRule(Oracle):
    """overpayment_action: what another desk does with an overpayment (the excess left unapplied
    where the desk asks for a refund case or a credit; a refund case where it leaves it)."""

    def overpayment_action(self, pol):
        return "leave_unapplied" if pol["overpayment_action"] != "leave_unapplied" else "refund_case"


class IgnoreDuplicateRule(Oracle):
    """duplicate_action: finds the duplicate but does what another desk does with it (the next
    action of :data:`DUPLICATE_ACTIONS`)."""

    def duplicate_action(self, pol):
        actions = list(DUPLICATE_ACTIONS)
        return actions[(actions.index(pol["duplicate_action"]) + 1) % len(actions)]


class IgnoreCaseScope(Oracle):
    """case_scope: opens its cases at the other scope (per payment where the desk opens them per
    line, per line where it opens them per payment)."""

    def case_scope(self, pol):
        return "line" if pol["case_scope"] == "payment" else "payment"


class IgnorePayerReplyRule(Oracle):
    """ambiguous_action: guesses an ambiguous line's claim (the first that fits) instead of asking."""

    def queries_ambiguous(self):
        return False


class IgnoreMatchRule(Oracle):
    """match_rule: takes the first hit of a ref search (no patient, date or amount check, no
    name search)."""

    def choose(self, line, hits, payer_id):
        return hits[0] if hits else None

    def find(self, line, payer_id):
        hits = (yield call("search_open_items", query=line["claim_ref"]))["result"]["items"]
        live = [h for h in hits if h["responsibility"] == "payer"]
        return live[0] if live else None


class IgnorePostingRule(Oracle):
    """posting: handles every line but never posts the payment."""

    def posts(self):
        return False


RULE_POLICIES: dict[str, type[Policy]] = {
    "tolerance_cents": IgnoreToleranceRule,
    "tolerance_action": IgnoreToleranceAction,
    "contractual_codes": IgnoreContractualRule,
    "patient_codes": IgnorePatientRule,
    "other_codes": IgnoreOtherCodesRule,
    "short_payment_action": IgnoreShortPaymentRule,
    "unreferenced_action": IgnoreUnreferencedRule,
    "overpayment_action": IgnoreOverpaymentRule,
    "duplicate_action": IgnoreDuplicateRule,
    "case_scope": IgnoreCaseScope,
    "ambiguous_action": IgnorePayerReplyRule,
    "match_rule": IgnoreMatchRule,
    "posting": IgnorePostingRule,
}


# -- blind policies: shortcuts that never read the policies or never check a match ----------------
class PostAsListed(ScriptedPolicy):
    """Applies every line's paid amount to the claim whose ref equals the line's, posts (apply)."""

    name = "blind:post_as_listed"

    def plan(self, brief, info):
        pid = brief["params"]["payment_id"]
        lines = (yield call("get_payment", payment_id=pid))["result"]["lines"]
        for line in lines:
            hits = (yield call("search_open_items", query=line["claim_ref"]))["result"]["items"]
            exact = [h for h in hits if h["claim_ref"] == line["claim_ref"] and h["responsibility"] == "payer"]
            if exact:
                yield call("allocate", payment_id=pid, line_id=line["id"], item_id=exact[0]["id"], amount=line["paid_amount"])
        yield call("post_payment", payment_id=pid, disposition="apply")


class _HitPicker(Oracle):
    """The oracle's procedure on every payment (no duplicate check), but a line's claim is one
    hit of its search, unchecked."""

    pick = 0
    check_duplicates = False

    def find(self, line, payer_id):
        hits = (yield call("search_open_items", query=line["claim_ref"]))["result"]["items"]
        if not hits:
            hits = (yield call("search_open_items", query=line["patient_name"]))["result"]["items"]
        live = [h for h in hits if h["responsibility"] == "payer"]
        return live[self.pick] if live else None


class FirstHit(_HitPicker):
    """Takes the first search hit for every line."""

    name = "blind:first_hit"
    pick = 0


class LastHit(_HitPicker):
    """Takes the last search hit for every line."""

    name = "blind:last_hit"
    pick = -1


class WriteOffEveryDifference(ScriptedPolicy):
    """Matches lines properly, applies them and writes off whatever stays open; never reads the
    policies, transfers nothing, opens no case."""

    name = "blind:write_off_every_difference"

    def plan(self, brief, info):
        pid = brief["params"]["payment_id"]
        got = (yield call("get_payment", payment_id=pid))["result"]
        payer_id = got["payment"]["payer_id"]
        for line in got["lines"]:
            hits = (yield call("search_open_items", query=line["claim_ref"]))["result"]["items"]
            fit = [h for h in hits if Oracle.same_claim(h, line, payer_id)]
            if len(fit) != 1:
                continue
            item = fit[0]
            amount = min(line["paid_amount"], item["balance"])
            if amount > 0:
                res = yield call("allocate", payment_id=pid, line_id=line["id"], item_id=item["id"], amount=amount)
                if res.get("status") == "ok":
                    item = res["result"]["item"]
            if item["balance"] > 0:
                yield call("write_off", item_id=item["id"], amount=item["balance"], reason="small_balance", line_id=line["id"])
        yield call("post_payment", payment_id=pid, disposition="apply")


class CaseForEverything(Oracle):
    """The oracle, plus a case on every line it did not already raise one for (underpayment,
    or unidentified_remittance for a line it could not match)."""

    name = "blind:case_for_everything"
    always_cases_duplicates = True

    def plan(self, brief, info):
        self._lines_cased: set[str] = set()
        return (yield from super().plan(brief, info))

    def case(self, pid, category, line_id, note):
        self._lines_cased.add(line_id)
        yield from super().case(pid, category, line_id, note)

    def finish(self, pid, pol):
        got = (yield call("get_payment", payment_id=pid))["result"]
        for line in got["lines"]:
            if line["id"] not in self._lines_cased:
                yield call("open_case", payment_id=pid, category="underpayment", line_id=line["id"], note="Please review.")


#: what a policy that never reads the desk's policies assumes: every CO code contractual, every
#: PR code the patient's, and the most common desk's actions
ASSUMED_POLICIES: dict[str, Any] = {
    "tolerance_cents": 250, "tolerance_action": "write_off", "contractual_codes": ["CO-45", "CO-253"],
    "patient_codes": ["PR-1", "PR-2", "PR-3"], "other_codes": "stay_open", "short_payment_action": "case",
    "unreferenced_action": "case", "overpayment_action": "refund_case", "duplicate_action": "hold_and_case", "case_scope": "line",
    "ambiguous_action": "query_payer", "match_rule": "ref_patient_date_amount", "posting": "apply",
}


class NeverReadPolicies(Oracle):
    """The oracle's whole procedure, but it never calls ``get_policies``: it assumes
    :data:`ASSUMED_POLICIES` at every desk (issue 32: the desk's policies must matter)."""

    name = "blind:never_read_policies"

    def read_policies(self):
        return dict(ASSUMED_POLICIES)
        yield {}


class _PostAtOnce(ScriptedPolicy):
    disposition = "apply"

    def plan(self, brief, info):
        yield call("post_payment", payment_id=brief["params"]["payment_id"], disposition=self.disposition)


class ReturnAtOnce(_PostAtOnce):
    """Early exit: returns the payment to the payer and submits."""

    name = "blind:return_at_once"
    disposition = "return"


class HoldAtOnce(_PostAtOnce):
    """Early exit: parks the payment in suspense and submits."""

    name = "blind:hold_at_once"
    disposition = "hold"


class PostAtOnce(_PostAtOnce):
    """Early exit: posts the payment with nothing applied and submits."""

    name = "blind:post_at_once"
    disposition = "apply"


BLIND_POLICIES: dict[str, type[Policy]] = {
    "never_read_policies": NeverReadPolicies,
    "post_as_listed": PostAsListed,
    "first_hit": FirstHit,
    "last_hit": LastHit,
    "write_off_every_difference": WriteOffEveryDifference,
    "case_for_everything": CaseForEverything,
    "return_at_once": ReturnAtOnce,
    "hold_at_once": HoldAtOnce,
    "post_at_once": PostAtOnce,
}


# -- exploit hooks (see backoffice.training.integrity.exploits) ---------------------------------------------
_MOVES = ("allocate", "write_off", "transfer_to_patient", "open_case", "reverse_allocation")


def _ok(trace: Sequence[Mapping[str, Any]], tool: str) -> list[Mapping[str, Any]]:
    return [r for r in trace if r["tool"] == tool and r["result_status"] == "ok"]


def _claims_seen(trace: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The latest view of every claim a write returned (id -> item)."""
    out: dict[str, dict[str, Any]] = {}
    for r in trace:
        res = r.get("result")
        if r["result_status"] == "ok" and isinstance(res, Mapping) and isinstance(res.get("item"), Mapping):
            out[res["item"]["id"]] = dict(res["item"])
    return out


def extra_decision(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before the oracle posts: one extra write-off (1 cent on a claim it worked that still has a
    balance, else on the last claim it applied money to); on a duplicate, the other disposition."""
    if action.get("tool") != "post_payment":
        return []
    args = action["args"]
    if args.get("disposition", "apply") != "apply":
        other = "return" if args["disposition"] == "hold" else "hold"
        return [call("post_payment", payment_id=args["payment_id"], disposition=other)]
    claims = _claims_seen(trace)
    open_ = [c for c in claims.values() if c["balance"] > 0 and c["responsibility"] == "payer"]
    target = open_[0] if open_ else next(iter(claims.values()), None)
    if target is None:
        return [call("post_payment", payment_id=args["payment_id"], disposition="hold")]
    return [call("write_off", item_id=target["id"], amount=1, reason="small_balance")]


def extra_request(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before submit: one more payer query, about the payment's first line."""
    if action.get("tool") != "submit":
        return []
    pays = _ok(trace, "get_payment")
    if not pays:
        return []
    got = pays[0]["result"]
    return [call("query_payer", payment_id=got["payment"]["id"], line_id=got["lines"][0]["id"], question="Please confirm this line.")]


def repeated_write(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before the oracle posts: its last allocation, write-off, transfer or case once more; with
    no such move (a returned duplicate), its post once more before it submits."""
    if action.get("tool") not in ("post_payment", "submit"):
        return []
    tools = _MOVES if action["tool"] == "post_payment" else _MOVES + ("post_payment",)
    for r in reversed(trace):
        if r["tool"] in tools and r["result_status"] == "ok":
            return [{"tool": r["tool"], "args": dict(r["args"])}]
    return []


def boundary_values(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before the oracle posts: allocate the payment's whole unapplied amount (the largest value
    the tool allows) from its last line to the last claim money went to; with nothing applied,
    a zero-cent allocation."""
    if action.get("tool") != "post_payment":
        return []
    pays = _ok(trace, "get_payment")
    allocs = _ok(trace, "allocate")
    if not pays:
        return []
    got = pays[0]["result"]
    pid, line = got["payment"]["id"], got["lines"][-1]
    if not allocs:
        return [call("allocate", payment_id=pid, line_id=line["id"], item_id="OI-0000", amount=0)]
    last = allocs[-1]["result"]
    unapplied = int(last["payment_unapplied"])
    return [call("allocate", payment_id=pid, line_id=line["id"], item_id=last["item"]["id"], amount=max(unapplied, 1))]


def formatting_only(action: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Before the oracle's first case: the same case with its note re-cased and re-spaced (the
    oracle's own call is then refused as a duplicate case and changes nothing)."""
    if action.get("tool") != "open_case":
        return []
    args = dict(action["args"])
    args["note"] = "  " + " ".join(str(args.get("note", "")).upper().split()) + "  "
    return [{"tool": "open_case", "args": args}]


#: value_preserving_update: None, because no remittance tool edits a field in place: every write
#: moves money (allocate, write_off, transfer_to_patient, reverse_allocation), opens a case or
#: posts, so there is no "write the value already there" to make.
EXPLOITS: dict[str, Hook | None] = {
    "extra_decision": extra_decision,
    "extra_request": extra_request,
    "repeated_write": repeated_write,
    "boundary_values": boundary_values,
    "value_preserving_update": None,
    "formatting_only": formatting_only,
}


# -- the domain at scale (tests/integrity/test_scale.py) --------------------------------------------------------
def _open_cases(env: Any) -> None:
    """A case on each of the payment's first three lines, and one on the whole payment: cases to
    page through."""
    pid = env.task.params["payment_id"]
    lines = env.state.rows("remittance_lines", payment_id=pid)[:3]
    for line in lines:
        got = loads(env.step(call("open_case", payment_id=pid, category="underpayment", line_id=line["id"], note="x"))[0])
        assert got["status"] == "ok", got
    got = loads(env.step(call("open_case", payment_id=pid, category="duplicate_remittance", line_id="", note="x"))[0])
    assert got["status"] == "ok" and len(env.state.ids("cases")) == len(lines) + 1, got


def _payer_reference(env: Any) -> dict[str, Any]:
    payment = env.state.get("payments", env.task.params["payment_id"])
    return {"payer_id": payment["payer_id"], "reference": payment["reference"]}


def _first_name(env: Any) -> dict[str, Any]:
    """A search by the first name of the payment's first patient (it finds many patients)."""
    line = env.state.rows("remittance_lines", payment_id=env.task.params["payment_id"])[0]
    return {"query": line["patient_name"].split()[0]}


def _hits(env: Any, args: dict[str, Any]) -> list[Any]:
    return [h["id"] for h in search_store(env.state, args["query"], env.task.seed, args.get("payer_id", ""), None)]


SCALE = Scaled(
    world={"generate": 7, "scale": 10},
    prepare=_open_cases,
    paged=(
        Paged("list_payments", "payments", rows_where_args("payments"), min_rows=21),
        Paged("list_payments", "payments", rows_where_args("payments"), param("payer_id"), min_rows=6),
        Paged("list_payments", "payments", rows_where_args("payments"), _payer_reference),
        Paged("list_cases", "cases", rows_where_args("cases"), min_rows=4),
        Paged("list_cases", "cases", rows_where_args("cases"), param("payment_id"), min_rows=4),
        Paged("search_open_items", "items", _hits, _first_name, by_id=False, min_rows=8),
    ),
    wrong=("misallocation", "duplicate_allocation"),
)
