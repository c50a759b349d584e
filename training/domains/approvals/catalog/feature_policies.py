"""The hand-written policy of each approvals tier (``catalog-features@<tier>``): the desk procedure
of the rule document written over the tier's features and mask only. Each passes every released
task, which proves its tier suffices.

- ``conclusions``: a decision list over the procedure's conclusions (:func:`conclusions_policy`);
- ``facts`` and ``raw``: :class:`DeskProcedure`, reading each authority rule of a row from the
  tier's comparisons (:class:`FactsProcedure`) or making the comparisons itself from the
  observed values (:class:`RawProcedure`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from backoffice.envs.approvals.rules import is_ledger_type
from backoffice.envs.approvals.tables import INFO_FIELDS, REQUEST_TYPES
from backoffice.training.catalog.base import CatalogAgent, FeatureReader
from backoffice.training.domains.approvals.catalog.desk import N_BANDS, N_CANDIDATES, N_PEOPLE, N_ROLES, N_ROWS


def conclusions_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
    """The desk procedure as a decision list over features (and the mask): release after a
    proceed; decide as soon as the facts establish an outcome; otherwise the next read."""
    idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}
    decide = (("procedure_reject", "decide_reject"), ("procedure_hold", "decide_hold"),
              ("procedure_escalate", "escalate"), ("procedure_proceed", "decide_proceed"))
    reads = ("get_request", "get_rules", "list_roles", "find_people", "get_person",
             *(f"lookup_role_holders[{i}]" for i in range(N_CANDIDATES)), "lookup_delegations")

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(name: str) -> bool:
            return bool(obs[idx[name]] > 0.5)

        if on("downstream_due"):
            return act["post_ledger_entry"] if on("is_ledger_type") else act["release_order"]
        if on("decision_recorded"):
            return act["submit"]
        for flag, action in decide:
            if on(flag):
                return act[action]
        for read in reads:
            if mask[act[read]]:
                return act[read]
        return act["submit"]

    return policy


class DeskProcedure(FeatureReader):
    """The rule document over a tier's features and the mask (the facts and raw tiers' feature policies):
    release after a proceed; read; open the file of the one person whose name and department
    match; look up the holders of each delegation's role; check separation of duties; check the
    authority rules of every row; decide citing the first authorising row (reject above the
    hard limit, hold when a required field is empty, else proceed) or escalate citing the
    first row failing exactly one authority rule (the approver when none does). A tier says how
    its features give the band and each authority rule of a row (the methods below)."""

    #: the feature "the requester is in the on-file person's reporting line"
    line_feature: ClassVar[str]
    #: the feature "the request's ``{fld}`` is empty"
    empty_feature: ClassVar[str]

    def _read(self) -> None:
        """Read what the tier's hooks share from ``self.obs``."""

    def typed(self) -> bool:
        """Whether the request type is known (the procedure needs it)."""
        return True

    def ledger(self) -> bool:
        raise NotImplementedError

    def band(self, bands: list[int]) -> int:
        """The band slot holding the amount, among the present ``bands`` (the top one above all)."""
        raise NotImplementedError

    def covers(self, s: int) -> bool:
        """Rule role_type: row ``s``'s role covers the request type."""
        raise NotImplementedError

    def holders_slot(self, s: int) -> int | None:
        """The ``lookup_role_holders`` slot of row ``s``'s role."""
        return s

    def level_ok(self, s: int, band: int) -> bool:
        """Rule role_level."""
        raise NotImplementedError

    def limit_ok(self, s: int) -> bool:
        """Rule role_limit."""
        raise NotImplementedError

    def window(self, s: int) -> bool:
        """Rule window: row ``s``'s window covers today."""
        raise NotImplementedError

    def revoked(self, s: int) -> bool:
        """Rule revocation: row ``s`` was revoked at or before now."""
        raise NotImplementedError

    def cap_ok(self, s: int) -> bool:
        """Rule delegation_cap: row ``s`` has no cap below the amount."""
        raise NotImplementedError

    def over_hard_limit(self, band: int) -> bool:
        raise NotImplementedError

    def band_flag(self, band: int, name: str) -> bool:
        """Band ``band``'s ``name`` flag (``sod_not_in_requester_line``, ``requires[<field>]`` ...)."""
        return self.on(f"band[{band}].{name}")

    def failures(self, s: int, band: int) -> int:
        """How many authority rules row ``s`` fails."""
        on = self.on
        checks = [self.covers(s), self.level_ok(s, band), self.limit_ok(s), self.window(s)]
        if on(f"row[{s}].is_delegation"):
            checks += [not self.revoked(s), on(f"row[{s}].delegator_among_holders"), self.cap_ok(s)]
        return sum(not c for c in checks)

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.read(obs, mask)
        self._read()
        on, act = self.on, self.act
        if on("decision_recorded"):
            if on("decided_proceed") and not on("downstream_done"):
                release = act["post_ledger_entry" if self.ledger() else "release_order"]
                if mask[release]:
                    return release
            return act["submit"]
        for read in ("get_request", "get_rules", "list_roles", "find_people"):
            if mask[act[read]]:
                return act[read]
        match = [p for p in range(N_PEOPLE) if on(f"person[{p}].present") and on(f"person[{p}].name_equal")
                 and on(f"person[{p}].department_equal")]
        if len(match) != 1 or not self.typed():
            return act["submit"]  # no such approver (never in the release)
        p = match[0]
        if not on(f"person[{p}].on_file"):
            return act[f"get_person[{p}]"]
        if mask[act["lookup_delegations"]]:
            return act["lookup_delegations"]
        band = self.band([r for r in range(N_BANDS) if self.band_flag(r, "present")])
        rows = [s for s in range(N_ROWS) if on(f"row[{s}].present")]
        # rule delegator_holds: look up the holders of every delegation's role
        for s in rows:
            if on(f"row[{s}].is_delegation") and not on(f"row[{s}].holders_read"):
                return act[f"lookup_role_holders[{self.holders_slot(s)}]"]
        # separation of duties
        if on(f"person[{p}].is_requester"):
            return act["escalate_cite_request"]
        if on(self.line_feature) and self.band_flag(band, "sod_not_in_requester_line"):
            return act["escalate_cite_requester"]
        failed = {s: self.failures(s, band) for s in rows}
        authorising = [s for s in rows if failed[s] == 0]
        if authorising:
            s = authorising[0]
            if self.over_hard_limit(band):
                return act[f"decide_reject[{s}]"]
            if any(self.band_flag(band, f"requires[{fld}]") and on(self.empty_feature.format(fld=fld)) for fld in INFO_FIELDS):
                return act[f"decide_hold[{s}]"]
            return act[f"decide_proceed[{s}]"]
        near = [s for s in rows if failed[s] == 1]
        return act[f"escalate_cite[{near[0]}]"] if near else act["escalate_cite_approver"]


class FactsProcedure(DeskProcedure):
    """The desk procedure reading the facts tier's comparisons (against the cited rule)."""

    line_feature = "requester_in_reporting_line"
    empty_feature = "request_empty[{fld}]"

    def ledger(self) -> bool:
        return self.on("request_is_ledger_type")

    def band_flag(self, band: int, name: str) -> bool:
        # one rule, the cited one: band slot 0 stands for it
        return band == 0 and self.on(f"rule.{name}")

    def band(self, bands: list[int]) -> int:
        return 0

    def covers(self, s: int) -> bool:
        return self.on(f"row[{s}].covers_request_type")

    def level_ok(self, s: int, band: int) -> bool:
        return self.on(f"row[{s}].level_ge_required")

    def limit_ok(self, s: int) -> bool:
        return self.on(f"row[{s}].limit_ge_amount")

    def window(self, s: int) -> bool:
        return self.on(f"row[{s}].from_le_today") and self.on(f"row[{s}].to_ge_today")

    def revoked(self, s: int) -> bool:
        return self.on(f"row[{s}].revoked_by_now")

    def cap_ok(self, s: int) -> bool:
        return not self.on(f"row[{s}].cap_below_amount")

    def over_hard_limit(self, band: int) -> bool:
        return self.on("rule.amount_gt_hard_limit")


class RawProcedure(DeskProcedure):
    """The desk procedure making the raw tier's comparisons itself."""

    line_feature = "reporting_line.has_requester"
    empty_feature = "request.empty[{fld}]"

    def _read(self) -> None:
        self.rtype = next((t for t in REQUEST_TYPES if self.on(f"request.type[{t}]")), None)
        self.amount = self.v("request.amount")

    def typed(self) -> bool:
        return self.rtype is not None

    def ledger(self) -> bool:
        return self.rtype is not None and is_ledger_type(self.rtype)

    def band(self, bands: list[int]) -> int:
        v = self.v
        return next((r for r in bands if v(f"band[{r}].min_amount") <= self.amount <= v(f"band[{r}].max_amount")), bands[-1])

    def _role_of(self, s: int) -> int | None:
        return next((i for i in range(N_ROLES) if self.on(f"row[{s}].role[{i}]")), None)

    def covers(self, s: int) -> bool:
        i = self._role_of(s)
        return i is not None and self.on(f"role[{i}].covers[{self.rtype}]")

    def holders_slot(self, s: int) -> int | None:
        return self._role_of(s)

    def level_ok(self, s: int, band: int) -> bool:
        i = self._role_of(s)
        return i is not None and self.v(f"role[{i}].level") >= self.v(f"band[{band}].required_level")

    def limit_ok(self, s: int) -> bool:
        i = self._role_of(s)
        return i is not None and self.v(f"role[{i}].amount_limit") >= self.amount

    def window(self, s: int) -> bool:
        v = self.v
        return v(f"row[{s}].valid_from") <= 0 <= v(f"row[{s}].valid_to")

    def revoked(self, s: int) -> bool:
        return self.v(f"row[{s}].revoked_at") <= 0

    def cap_ok(self, s: int) -> bool:
        return self.v(f"row[{s}].cap") >= self.amount

    def over_hard_limit(self, band: int) -> bool:
        return self.amount > self.v(f"band[{band}].hard_limit")


__all__ = ["DeskProcedure", "FactsProcedure", "RawProcedure", "conclusions_policy"]
