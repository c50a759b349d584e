"""The hand-written policy of each remittance tier: it reads only the tier's features and mask and
passes every released task (``catalog-features@<tier>``), proving the tier suffices. The facts and
raw policies share one clerk (:class:`_PostingClerk`); in ``raw`` it decodes the values and
computes every comparison itself (the policy, not the catalog, computes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from backoffice.envs.remittance.tables import DUPLICATE_ACTIONS, osa_distance
from backoffice.training.catalog.base import CatalogAgent, FeatureReader
from backoffice.training.domains.remittance.catalog.desk import N_ADJ, N_HITS, N_LINES, N_LISTED
from backoffice.training.domains.remittance.catalog.features import CODES, DATE_SPAN, MONEY, PAYMENT_MONEY, REF_SPAN, REPLY_KINDS

Policy = Callable[[np.ndarray, np.ndarray], int]


def conclusions_policy(agent: CatalogAgent) -> Policy:
    """The desk's procedure as a decision list over the features (first rule whose condition
    holds and whose action is valid wins). Every judgement is read off a feature: the mask
    only says what is legal."""
    idx = {d.name: i for i, d in enumerate(agent.feature_defs)}
    A = {a.name: i for i, a in enumerate(agent.spec.actions)}  # noqa: N806 - the action index, as in the rules

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        def f(name: str) -> bool:
            return obs[idx[name]] > 0.5

        rules: list[tuple[str, bool]] = [
            ("get_policies", not f("taken[get_policies]")),
            ("get_payment", not f("taken[get_payment]")),
            ("list_payments", not f("taken[list_payments]")),
            # the further pages of a paged read (the mask offers a read only while pages remain)
            ("list_payments", not f("facts_read")),
            ("more_hits", f("search_pages_left")),
            # duplicate remittance: the case the policy asks for, then the post it says
            ("case_duplicate", f("dup_case_due")),
            ("case_duplicate_refund", f("dup_refund_case_due")),
            ("post_hold", f("dup_hold_due")),
            ("post_return", f("dup_return_due")),
            ("post_apply", f("dup_apply_due")),
            # the current line
            ("search_by_name", f("cur_needs_name_search")),
            ("write_off_adj[0]", f("wo_adj0_due")),
            ("write_off_adj[1]", f("wo_adj1_due")),
            ("transfer_adj[0]", f("tr_adj0_due")),
            ("transfer_adj[1]", f("tr_adj1_due")),
            ("allocate_whole", f("credit_alloc_due")),
            ("allocate", f("cur_alloc_due")),
            ("case_refund", f("refund_case_due")),
            ("case_underpayment", f("underpayment_case_due")),
            ("write_off_small", f("small_write_off_due")),
            ("query_payer", f("query_due")),
            ("case_unidentified", f("unidentified_case_due")),
            # next line, then payer replies, then post
            ("search_next_line", f("next_line_due")),
            ("wait", f("queries_awaiting")),
            ("get_case", f("replies_unread")),
            ("post_apply", f("post_apply_due")),
        ]
        for action, cond in rules:
            if cond and mask[A[action]]:
                return A[action]
        return A["submit"]

    return policy


class _PostingClerk(FeatureReader):
    """The desk's procedure over a tier's features and the mask (both tiers' feature policies):
    the reads; a duplicate held with a case or returned as the policy says; per line, the hits
    that fit counted: one is opened, none or several after a ref search call for a name search,
    several after a name search for a payer query, none for an unidentified case if the policy
    says so; on the opened claim the policy-coded adjustments, then the allocation (the balance
    if the line pays more than it, else the line's paid amount), then a refund case for what
    stays unallocated (policy), a small-balance write-off for a remainder within tolerance
    (policy) or an underpayment case beyond it; after the lines the tier's own order
    (:meth:`after_lines`). A tier says how its features give each comparison."""

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.read(obs, mask)
        on, act = self.on, self.act
        for read in ("get_policies", "get_payment", "list_payments", "more_hits"):
            if mask[act[read]]:
                return act[read]
        if on("payment.posted"):
            return act["submit"]
        if self.duplicate():
            action = next((a for a in DUPLICATE_ACTIONS if on(f"pol.duplicate_action[{a}]")), "")
            disposition, category = DUPLICATE_ACTIONS.get(action, ("apply", ""))
            if category and not on(f"payment.case[{category}]"):
                return act["case_duplicate" if category == "duplicate_remittance" else "case_duplicate_refund"]
            return act[f"post_{disposition}"]
        a = self.line_step() if on("cur.present") else None
        return a if a is not None else self.after_lines()

    def line_step(self) -> int | None:
        """The next action on the current line (``None``: nothing left on it)."""
        on, do = self.on, self.choose
        fit = self.fits()
        if not on("claim.present"):
            if self.reply_read():
                named = self.named(fit)
                return do(f"open_hit[{named[0]}]") if on("cur.reply[applies_to]") and len(named) == 1 else None
            if len(fit) == 1:
                return do(f"open_hit[{fit[0]}]")
            if not on("cur.name_searched"):
                return do("search_by_name")
            if len(fit) > 1 or on("pol.unreferenced_action[query]"):  # ambiguous, or no claim at a desk that asks
                return None if self.queried() else do("query_payer")
            if on("pol.unreferenced_action[case]") and not on("cur.case[unidentified_remittance]"):
                return do("case_unidentified")
            return None
        # the opened claim: policy-coded adjustments, the allocation, then what is left over
        for j in range(N_ADJ):
            name = self.adj_action(j)
            if name is not None:
                return do(name)
        if self.allocation_due():
            whole = not self.pays_more() or on("pol.overpayment_action[credit]")  # a credit desk applies an overpayment whole
            return do("allocate[line_paid]" if whole else "allocate[claim_balance]")
        if self.overpaid() and on("pol.overpayment_action[refund_case]") and not on("cur.case[refund_request]"):
            return do("case_refund")
        if self.balance_positive():
            if self.within_tolerance():
                if on("pol.tolerance_action[write_off]"):
                    return do("write_off_small")
            elif on("pol.short_payment_action[case]") and not on("cur.case[underpayment]") and not self.queried():
                return do("case_underpayment")
        return None

    def duplicate(self) -> bool:
        """A listed payment, not this one, posted with this one's reference and amount."""
        raise NotImplementedError

    def after_lines(self) -> int:
        """The next action once nothing is left on the current line."""
        raise NotImplementedError

    def fits(self) -> list[int]:
        """The hits that fit the current line (all five agreements; the ref's nearness on a ref search)."""
        raise NotImplementedError

    def reply_read(self) -> bool:
        raise NotImplementedError

    def named(self, fit: list[int]) -> list[int]:
        """The fitting hits whose claim ref is the one the payer's reply names."""
        raise NotImplementedError

    def queried(self) -> bool:
        raise NotImplementedError

    def adj_action(self, j: int) -> str | None:
        """The action adjustment ``j`` of the current line is due for by the policy's codes."""
        raise NotImplementedError

    def allocation_due(self) -> bool:
        raise NotImplementedError

    def pays_more(self) -> bool:
        """The line pays more than the claim's balance."""
        raise NotImplementedError

    def overpaid(self) -> bool:
        """The line pays more than was allocated from it."""
        raise NotImplementedError

    def balance_positive(self) -> bool:
        raise NotImplementedError

    def within_tolerance(self) -> bool:
        raise NotImplementedError


def facts_policy(agent: CatalogAgent) -> Policy:
    """The desk's procedure over the facts: the reads; a duplicate (a listed payment, not this
    one, posted, with the same reference and amount) held with a case or returned as the
    policy says; per line, the hits that fit (all five agreements, and the ref's nearness on
    a ref search) counted: one is opened, none or several after a ref search call for a
    name search, several after a name search for a payer query, none for an unidentified
    case if the policy says so; on the opened claim the policy-coded adjustments, then the
    allocation (the balance if the line pays more than it, else the line's paid amount),
    then a refund case for what stays unallocated (policy), a small-balance write-off for a
    remainder within tolerance (policy) or an underpayment case beyond it; after the last
    line the payer's replies (wait, read, open the named hit and allocate; a recoup leaves
    the line), then post with apply."""
    return _FactsClerk(agent)


class _FactsClerk(_PostingClerk):
    """The clerk reading the facts tier's comparisons."""

    def duplicate(self) -> bool:
        on = self.on
        return any(on(f"listed[{k}].present") and not on(f"listed[{k}].is_this_payment") and on(f"listed[{k}].status[posted]")
                   and on(f"listed[{k}].reference_equal") and on(f"listed[{k}].amount_equal") for k in range(N_LISTED))

    def after_lines(self) -> int:
        for name in ("search_next_line", "wait", "get_case", "post_apply"):
            if self.mask[self.act[name]]:
                return self.act[name]
        return self.act["submit"]

    def fits(self) -> list[int]:
        on = self.on
        hits = [i for i in range(N_HITS) if on(f"hit[{i}].present")]
        return [i for i in hits if on(f"hit[{i}].patient_equal") and on(f"hit[{i}].service_date_equal")
                and on(f"hit[{i}].amount_due_equal_billed") and on(f"hit[{i}].payer_is_payment_payer")
                and on(f"hit[{i}].responsibility[payer]") and (on("cur.hits_by_name") or on(f"hit[{i}].ref_near_line_ref"))]

    def reply_read(self) -> bool:
        return self.on("cur.reply_read")

    def named(self, fit: list[int]) -> list[int]:
        return [i for i in fit if self.on(f"hit[{i}].ref_equal_reply_ref")]

    def queried(self) -> bool:
        return self.on("cur.queried")

    def adj_action(self, j: int) -> str | None:
        on, p = self.on, f"cur.adj[{j}]"
        if on(f"{p}.present") and not on(f"{p}.written_off") and not on(f"{p}.transferred"):
            if on(f"{p}.code_contractual"):
                return f"write_off_adj[{j}]"
            if on(f"{p}.code_patient"):
                return f"transfer_adj[{j}]"
        return None

    def allocation_due(self) -> bool:
        return not self.on("cur.allocated") and self.on("claim.balance_positive")

    def pays_more(self) -> bool:
        return self.on("cur.paid_gt_claim_balance")

    def overpaid(self) -> bool:
        return self.on("cur.paid_gt_allocated")

    def balance_positive(self) -> bool:
        return self.on("claim.balance_positive")

    def within_tolerance(self) -> bool:
        return self.on("claim.balance_le_tolerance")


def raw_policy(agent: CatalogAgent) -> Policy:
    """The facts tier's decision list with every comparison computed here from the values:
    names by symbol, dates and amounts decoded to days and cents and compared, the typing
    distance between the line's and a hit's ref computed from their digits, the duplicate
    found by comparing the listed payments' reference symbols and amounts, policy codes
    looked up in the multi-hot lists, the reply's claim found among the hits by its ref, and
    the next line to search chosen as the first unsearched one (then the lines whose reply
    came, by ``read_reply``)."""
    return _RawClerk(agent)


class _RawClerk(_PostingClerk):
    """The clerk making the raw tier's comparisons itself."""

    def cents(self, name: str, full: int = MONEY) -> int:
        return round(self.v(name) * full)

    def duplicate(self) -> bool:
        on, v, cents = self.on, self.v, self.cents
        ref_sym, amount = v("payment.reference"), cents("payment.amount", PAYMENT_MONEY)
        return any(on(f"listed[{k}].present") and not on(f"listed[{k}].is_this_payment") and on(f"listed[{k}].status[posted]")
                   and v(f"listed[{k}].reference") == ref_sym and cents(f"listed[{k}].amount", PAYMENT_MONEY) == amount
                   for k in range(N_LISTED))

    def after_lines(self) -> int:
        on, act = self.on, self.act
        for index in range(N_LINES):
            if on(f"line[{index}].present") and not on(f"line[{index}].searched"):
                return act[f"search_line[{index}]"]
        if self.mask[act["wait"]]:
            return act["wait"]
        for index in range(N_LINES):
            if on(f"line[{index}].answered") and not on(f"line[{index}].reply_read"):
                return act[f"read_reply[{index}]"]
        return act["post_apply"] if self.mask[act["post_apply"]] else act["submit"]

    def fits(self) -> list[int]:
        on, v, cents = self.on, self.v, self.cents
        line_ref = round(v("cur.ref") * REF_SPAN) if on("cur.ref_kind[claim]") else None
        patient, day, billed = v("cur.patient"), round(v("cur.service_date") * DATE_SPAN), cents("cur.billed")

        def near(i: int) -> bool:
            if line_ref is None or v(f"hit[{i}].ref") <= 0:
                return False
            return osa_distance(f"{line_ref:06d}", f"{round(v(f'hit[{i}].ref') * REF_SPAN):06d}") <= 2

        hits = [i for i in range(N_HITS) if on(f"hit[{i}].present")]
        return [i for i in hits if v(f"hit[{i}].patient") == patient and round(v(f"hit[{i}].service_date") * DATE_SPAN) == day
                and cents(f"hit[{i}].amount_due") == billed and on(f"hit[{i}].payer_is_payment_payer")
                and on(f"hit[{i}].responsibility[payer]") and (on("cur.hits_by_name") or near(i))]

    def reply_read(self) -> bool:
        return any(self.on(f"cur.reply[{k}]") for k in REPLY_KINDS)

    def named(self, fit: list[int]) -> list[int]:
        reply_ref = round(self.v("cur.reply_ref") * REF_SPAN)
        return [i for i in fit if reply_ref and round(self.v(f"hit[{i}].ref") * REF_SPAN) == reply_ref]

    def queried(self) -> bool:
        return any(self.on(f"line[{index}].is_current") and self.on(f"line[{index}].queried") for index in range(N_LINES))

    def adj_action(self, j: int) -> str | None:
        on, p = self.on, f"cur.adj[{j}]"
        code = next((c for c in CODES if on(f"{p}.code[{c}]")), None)
        if code is None or on(f"{p}.written_off") or on(f"{p}.transferred"):
            return None
        if on(f"pol.contractual_codes[{code}]"):
            return f"write_off_adj[{j}]"
        if on(f"pol.patient_codes[{code}]"):
            return f"transfer_adj[{j}]"
        return None

    def allocation_due(self) -> bool:
        return self.cents("cur.allocated") == 0 and self.cents("claim.balance") > 0

    def pays_more(self) -> bool:
        return self.cents("cur.paid") > self.cents("claim.balance")

    def overpaid(self) -> bool:
        return self.cents("cur.paid") > self.cents("cur.allocated")

    def balance_positive(self) -> bool:
        return self.cents("claim.balance") > 0

    def within_tolerance(self) -> bool:
        return self.cents("claim.balance") <= self.cents("pol.tolerance")
