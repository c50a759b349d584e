"""The hand-written policy of each schedules tier (``catalog-features@<tier>``): the clerk's
procedure written over the tier's features and mask only. Each passes every released task,
which proves its tier suffices.

- ``conclusions``: a short decision list over the computed plan's flags (:func:`conclusions_policy`);
- ``facts`` and ``raw``: :class:`Scheduler`, the same procedure reading the count, the rows and
  the applying trigger from the facts tier's comparisons (:class:`FactsScheduler`) or doing the
  arithmetic, matching and selection itself from the raw tier's exact values
  (:class:`RawScheduler`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from backoffice.envs.schedules.tables import ROLES, ROUNDING_RULES
from backoffice.training.catalog.base import CatalogAgent, FeatureReader
from backoffice.training.domains.schedules.catalog.desk import (
    AMOUNT_SCALE,
    COUNTS,
    DATE_SCALE,
    DAYS_SCALE,
    INSTALMENT_SLOTS,
    KINDS,
    MINIMUM_SCALE,
    MONTH_SCALE,
    READS,
    REMINDER_SLOTS,
    SMALL_SCALE,
    TRIGGERS,
    VERSION_SLOTS,
)


def conclusions_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
    """The conclusions tier's policy over (features, mask), a short decision list:

    1. the six reads (each offered until answered);
    2. one draft (``taken[create_draft]``), then ``add_next_instalment`` while ``rows_remaining``;
    3. while ``approval_outstanding``: ``wait`` if ``approval_pending``, else
       ``request_approval[t]`` of ``first_trigger_t``; no commit before;
    4. ``commit_draft`` once ``draft_complete``;
    5. after ``committed``: supersede, cancel the prior due instalments, cancel the old reminders
       while ``old_reminders_remaining``, ``create_reminder`` iff ``new_reminder_needed``,
       ``update_mandate`` iff ``mandate_change_needed``; then submit.
    """
    f = {d.name: i for i, d in enumerate(agent.feature_defs)}
    a = {d.name: i for i, d in enumerate(agent.spec.actions)}

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(feature: str) -> bool:
            return bool(obs[f[feature]] > 0.5)

        def first(*names: str) -> int | None:
            return next((a[n] for n in names if mask[a[n]]), None)

        read = first(*READS)
        if read is not None:
            return read
        if not on("taken[create_draft]") and mask[a["create_draft"]]:
            return a["create_draft"]
        if obs[f["rows_remaining"]] > 0 and mask[a["add_next_instalment"]]:
            return a["add_next_instalment"]
        if on("approval_outstanding"):
            if on("approval_pending") and mask[a["wait"]]:
                return a["wait"]
            for t in TRIGGERS:
                if on(f"first_trigger_{t}") and mask[a[f"request_approval[{t}]"]]:
                    return a[f"request_approval[{t}]"]
        elif on("draft_complete") and mask[a["commit_draft"]]:
            return a["commit_draft"]
        if on("committed"):
            if not on("prior_superseded") and mask[a["supersede_prior"]]:
                return a["supersede_prior"]
            if not on("prior_due_cancelled") and mask[a["cancel_prior_due"]]:
                return a["cancel_prior_due"]
            if obs[f["old_reminders_remaining"]] > 0 and mask[a["cancel_old_reminder"]]:
                return a["cancel_old_reminder"]
            if on("new_reminder_needed") and mask[a["create_reminder"]]:
                return a["create_reminder"]
            if on("mandate_change_needed") and mask[a["update_mandate"]]:
                return a["update_mandate"]
        return agent.finish

    return act


class Scheduler(FeatureReader):
    """The procedure both tiers' feature policies follow over (features, mask): the six reads;
    the tier's first step (:meth:`first_step`); one draft declaring :meth:`draft_count`
    instalments; the tier's next row (:meth:`row_action`) until the draft holds them; the first
    trigger of the rules' approval order that applies (:meth:`applies`): ask its role, wait for
    the decision; commit; then the tier's clean-up after the commit (:meth:`after_commit`);
    submit. A tier says how its features give each step."""

    #: the feature "the rules put trigger ``t`` at position ``p`` of the approval order"
    order_feature: ClassVar[str]

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.read(obs, mask)
        on, choose = self.on, self.choose
        for read in READS:
            if mask[self.act[read]]:
                return self.act[read]
        kind = next((k for k in KINDS if on(f"request_kind_{k}")), None)
        if kind is None:
            return self.finish
        self._read_kind(kind)
        step = self.first_step(kind)
        if step is not None:
            return step
        committed = on("new_version_active")
        if not any(on(f"taken[create_draft[{n}]]") for n in COUNTS):
            choice = choose(f"create_draft[{self.draft_count(kind)}]")
            return self.finish if choice is None else choice
        if on("draft_exists") and not committed:
            row = self.row_action(kind)
            if row is not None and (choice := choose(row)) is not None:
                return choice
            applies = self.applies(kind)
            first = next((t for p in (1, 2, 3) for t in TRIGGERS if on(self.order_feature.format(t=t, p=p)) and applies[t]), None)
            if first is not None:
                key = self.approver(first)
                if not on(f"approval[{key}]_granted"):
                    choice = choose("wait") if on(f"approval[{key}]_pending") else choose(f"request_approval[{key}]")
                    return self.finish if choice is None else choice
            choice = choose("commit_draft")
            if choice is not None:
                return choice
        if committed and (step := self.after_commit(kind)) is not None:
            return step
        return self.finish

    def _read_kind(self, kind: str) -> None:
        """Read what the hooks share, once the request's kind is known."""

    def first_step(self, kind: str) -> int | None:
        """An action due before the draft (``None``: none)."""
        return None

    def draft_count(self, kind: str) -> int:
        raise NotImplementedError

    def row_action(self, kind: str) -> str | None:
        """The add action of the draft's next row (``None``: the draft holds its declared rows)."""
        raise NotImplementedError

    def applies(self, kind: str) -> dict[str, bool]:
        """Whether each approval trigger applies to the draft."""
        raise NotImplementedError

    def approver(self, trigger: str) -> str:
        """What the approval features and ``request_approval[...]`` name for ``trigger``."""
        return trigger

    def after_commit(self, kind: str) -> int | None:
        raise NotImplementedError


class FactsScheduler(Scheduler):
    """The facts tier's policy (``catalog-features@facts``), reading facts and comparisons only:

    1. the six reads;
    2. the count: for a collection-day change the due instalments; else the request's months
       (``months_left_from_start``; every third for to_quarterly; ``request_parts`` for a
       split), cut to the largest ``k`` with ``share_meets_minimum[k]``: ``create_draft[n]``;
    3. ``add_instalment[share,end]`` until the draft holds ``n`` rows: ``keep`` for a
       collection-day change, else the rounding rule's share for this row (from
       ``next_row_is_first`` / ``_is_last_declared`` / ``_below_remainder`` /
       ``_in_last_remainder``); ``end`` from ``month_end``;
    4. the first trigger of ``approval_order`` that applies (deferral:
       ``deferral_needs_approval``; instalment_count: ``draft_exceeds_max_without_approval``;
       short_notice: ``draft_first_due_within_min_notice``): request it, wait, then commit;
    5. supersede, cancel the prior due instalments and the listed reminders, the reminder
       (``lead`` unless ``new_first_lead_date_before_today``; then ``today`` only under
       send_today), the mandate when the request's day differs; submit.
    """

    order_feature = "approval_order[{t}]={p}"

    def count(self, name: str, full: float = 12) -> int:
        return int(round(float(self.obs[self.idx[name]]) * full))

    def draft_count(self, kind: str) -> int:
        if kind == "collection_day":
            return max(1, self.count("due_instalments"))
        months = self.count("months_left_from_start")
        periods = {"to_quarterly": (months - 1) // 3 + 1, "split": self.count("request_parts")}.get(kind, months)
        return max([k for k in COUNTS if k <= periods and self.on(f"share_meets_minimum[{k}]")], default=1)

    def row_action(self, kind: str) -> str | None:
        on = self.on
        if self.count("draft_instalments") >= self.count("declared_count"):
            return None
        end = "clamp" if on("month_end_last_day_of_month") else "roll"
        if kind == "collection_day":
            share = "keep"
        elif on("rounding_remainder_to_first"):
            share = "even_plus_remainder" if on("next_row_is_first") else "even"
        elif on("rounding_remainder_to_last"):
            share = "even_plus_remainder" if on("next_row_is_last_declared") else "even"
        elif on("rounding_spread_from_first"):
            share = "even_plus_one" if on("next_row_below_remainder") else "even"
        else:
            share = "even_plus_one" if on("next_row_in_last_remainder") else "even"
        return f"add_instalment[{share},{end}]"

    def applies(self, kind: str) -> dict[str, bool]:
        return {
            "deferral": self.on("deferral_needs_approval"),
            "instalment_count": self.on("draft_exceeds_max_without_approval"),
            "short_notice": self.on("draft_first_due_within_min_notice"),
        }

    def after_commit(self, kind: str) -> int | None:
        on, mask, a = self.on, self.mask, self.act
        if not on("prior_version_superseded") and mask[a["supersede_prior"]]:
            return a["supersede_prior"]
        if not on("prior_due_instalments_cancelled") and mask[a["cancel_prior_due"]]:
            return a["cancel_prior_due"]
        if self.obs[self.idx["listed_reminders_scheduled"]] > 0 and mask[a["cancel_old_reminder"]]:
            return a["cancel_old_reminder"]
        if not on("reminder_created"):
            when = "today" if on("new_first_lead_date_before_today") else "lead"
            if (when == "lead" or on("late_reminder_send_today")) and mask[a[f"create_reminder[{when}]"]]:
                return a[f"create_reminder[{when}]"]
        if on("request_day_differs_from_mandate") and mask[a["update_mandate"]]:
            return a["update_mandate"]
        return None


class RawScheduler(Scheduler):
    """The raw tier's policy (``catalog-features@raw``): it decodes the slot values exactly and
    does the arithmetic, matching and selection itself.

    1. the six reads; a collection-day change updates the mandate first (the add actions use
       the mandate's day);
    2. the outstanding D = the due slots' amounts; the count n: the due slots for a
       collection-day change, else the request's months (every third for to_quarterly, the
       parts for a split) cut to ``max(1, D // minimum)``: ``create_draft[n]``;
    3. n rows: the first from ``start``, the next ``next3`` for to_quarterly (or when the due
       slots are three months apart), else ``next1``; ``end`` from the month-end rule; the
       share: ``same_month`` for a collection-day change, else the rounding rule's row for
       ``D mod n``;
    4. the triggers in ``approval_order`` (deferral: the flag and the draft's first due date after
       the first due slot's; instalment_count: n above
       the maximum; short_notice: the draft's first due date fewer than min_notice_days after
       received_on): ask the first applying trigger's role, wait, commit;
    5. supersede the active version slot, cancel the due slots and the listed reminders, the
       reminder (``lead`` if its date is not before today, else ``today`` under send_today);
       submit.
    """

    order_feature = "rules_order[{t}]={p}"

    def num(self, name: str, full: float) -> int:
        return int(round(float(self.obs[self.idx[name]]) * full))

    def _read_kind(self, kind: str) -> None:
        on, num = self.on, self.num
        slots = [i for i in range(INSTALMENT_SLOTS) if on(f"inst[{i}]_present")]
        self.due = [i for i in slots if on(f"inst[{i}]_status_due")]
        self.outstanding = sum(num(f"inst[{i}]_amount", AMOUNT_SCALE) for i in self.due)

    def first_step(self, kind: str) -> int | None:
        new_day = self.num("request_new_collection_day", SMALL_SCALE)
        if kind == "collection_day" and new_day != self.num("mandate_collection_day", SMALL_SCALE):
            choice = self.choose("update_mandate")
            return self.finish if choice is None else choice
        return None

    def draft_count(self, kind: str) -> int:
        num = self.num
        if kind == "collection_day":
            return max(1, len(self.due))
        start = num("request_start_period", MONTH_SCALE)
        last = num("policy_term_start", MONTH_SCALE) + 11
        months = last - start + 1
        periods = {"to_quarterly": (months - 1) // 3 + 1 if months > 0 else 0,
                   "split": num("request_parts", SMALL_SCALE)}.get(kind, months)
        minimum = num("rules_minimum_instalment", MINIMUM_SCALE)
        return max(1, min(periods, self.outstanding // minimum if minimum > 0 else periods))

    def row_action(self, kind: str) -> str | None:
        on, num = self.on, self.num
        n = num("draft_declared_count", SMALL_SCALE)
        rows = num("draft_rows", SMALL_SCALE)
        if rows >= n:
            return None
        if rows == 0:
            src = "start"
        elif kind == "to_quarterly":
            src = "next3"
        elif kind == "collection_day":
            due_months = sorted(num(f"inst[{i}]_period", MONTH_SCALE) for i in self.due)
            step = due_months[rows] - due_months[rows - 1] if rows < len(due_months) else 1
            src = "next3" if step == 3 else "next1"
        else:
            src = "next1"
        end = "clamp" if on("rules_month_end_last_day_of_month") else "roll"
        if kind == "collection_day":
            share = "same_month"
        else:
            rest = self.outstanding % n if n else 0
            first_row, last_row = rows == 0, rows == n - 1
            share = {
                "remainder_to_first": "even_plus_remainder" if first_row else "even",
                "remainder_to_last": "even_plus_remainder" if last_row else "even",
                "spread_from_first": "even_plus_one" if rows < rest else "even",
                "spread_from_last": "even_plus_one" if rows >= n - rest else "even",
            }[next(r for r in ROUNDING_RULES if on(f"rules_rounding_{r}"))]
        return f"add_instalment[{src},{end},{share}]"

    def applies(self, kind: str) -> dict[str, bool]:
        on, num = self.on, self.num
        rows = num("draft_rows", SMALL_SCALE)
        notice = num("draft_first_due_date", DATE_SCALE) - num("request_received_on", DATE_SCALE)
        return {
            "deferral": on("rules_deferral_needs_approval") and bool(self.due)
                        and num("draft_first_due_date", DATE_SCALE) > min(num(f"inst[{i}]_due_date", DATE_SCALE) for i in self.due),
            "instalment_count": rows > num("rules_max_instalments_without_approval", SMALL_SCALE),
            "short_notice": notice < num("rules_min_notice_days", DAYS_SCALE),
        }

    def approver(self, trigger: str) -> str:
        return next(r for r in ROLES if self.on(f"rules_role[{trigger}]={r}"))

    def after_commit(self, kind: str) -> int | None:
        on, num, mask, a = self.on, self.num, self.mask, self.act
        for v in range(VERSION_SLOTS):
            if on(f"version[{v}]_status_active") and mask[a[f"supersede[{v}]"]]:
                return a[f"supersede[{v}]"]
        for i in self.due:
            if mask[a[f"cancel_instalment[{i}]"]]:
                return a[f"cancel_instalment[{i}]"]
        for j in range(REMINDER_SLOTS):
            if on(f"rem[{j}]_present") and not on(f"rem[{j}]_cancelled") and mask[a[f"cancel_reminder[{j}]"]]:
                return a[f"cancel_reminder[{j}]"]
        if not on("new_reminder_created"):
            send = num("new_first_due_date", DATE_SCALE) - num("rules_reminder_lead_days", DAYS_SCALE)
            when = "lead" if send >= num("today", DATE_SCALE) else "today"
            if (when == "lead" or on("rules_late_reminder_send_today")) and mask[a[f"create_reminder[{when}]"]]:
                return a[f"create_reminder[{when}]"]
        return None


__all__ = ["FactsScheduler", "RawScheduler", "Scheduler", "conclusions_policy"]
