"""The hand-written policy of each sufficiency tier: it reads only the tier's features and mask
and passes every released task (``catalog-features@<tier>``), proving the tier suffices. In
``raw`` the policy decodes day numbers and symbols and does the arithmetic and the comparisons
itself (the policy, not the catalog, computes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from backoffice.training.catalog.base import CatalogAgent
from backoffice.training.domains.sufficiency.catalog.actions import subset_name
from backoffice.training.domains.sufficiency.catalog.desk import N_DOCS, N_HELD, N_ITEM_DOCS, N_ITEMS, N_SYMBOLS, PAGED, READS
from backoffice.training.domains.sufficiency.catalog.features import DAY_SPAN

Policy = Callable[[np.ndarray, np.ndarray], int]


def conclusions_policy(agent: CatalogAgent) -> Policy:
    """The hand-written policy over (features, mask): a short decision list.

    read everything once (every page of the paginated reads) -> resume a paused clock after a reply -> wait for an outstanding reply
    (submit when none is expected) -> attach a valid held record -> request the missing items ->
    release a sufficient case -> route it by the threshold -> submit.
    """
    idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}
    reads = ("get_case", "get_requirements", "search_held_records", "list_documents")
    paged = ("search_held_records", "list_documents")

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(name: str) -> bool:
            return obs[idx[name]] > 0.5

        for name in reads:
            if mask[act[name]] and not on(f"taken[{name}]"):
                return act[name]
        for name in paged:  # the next page of a paginated read (open only while a page remains)
            if mask[act[name]] and not on("assessed"):
                return act[name]
        if on("case_released"):
            if not on("routed"):
                return act["route_senior" if obs[idx["amount_vs_threshold"]] > 0 else "route_standard"]
            return agent.finish
        if on("case_awaiting_info"):
            return agent.finish if on("no_reply_expected") else act["wait"]
        if on("clock_paused"):
            return act["resume_clock"]
        if on("any_satisfiable"):
            return act["attach_held_record"]
        if on("any_missing"):
            return act["request_missing"]
        return act["release_case"]

    return policy


def _index(agent: CatalogAgent) -> tuple[dict[str, int], dict[str, int]]:
    return {f.name: i for i, f in enumerate(agent.feature_defs)}, {a.name: i for i, a in enumerate(agent.spec.actions)}


def _procedure(agent: CatalogAgent, paused: str, uncovered: Callable[[np.ndarray], list[int]],
               usable: Callable[[np.ndarray, int], int | None], senior: Callable[[np.ndarray], bool]) -> Policy:
    """The desk procedure over a tier's features: read everything (every page) -> after release,
    route once by the threshold -> while a reply is awaited, wait (submit when none is
    expected) -> resume a paused clock (``paused``: the tier's feature for it) -> attach a
    usable held record for the first uncovered item -> request every uncovered item -> release.
    ``uncovered(obs)`` lists the item slots no valid document covers, ``usable(obs, i)`` the
    held slot that can cover item slot ``i``, ``senior(obs)`` whether the amount is at or above
    the senior threshold: the tier's own computations."""
    idx, act = _index(agent)

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        def on(name: str) -> bool:
            return bool(obs[idx[name]] > 0.5)

        for name in READS:
            if mask[act[name]] and not on(f"taken[{name}]"):
                return act[name]
        for name in PAGED:
            if mask[act[name]] and on(f"{name.replace('search_', '').replace('list_', '')}.more_pages"):
                return act[name]
        if on("case.status[released]"):
            if not on("case.routed"):
                return act["route_senior" if senior(obs) else "route_standard"]
            return agent.finish
        if on("case.status[awaiting_info]"):
            return act["wait"] if mask[act["wait"]] else agent.finish
        if mask[act["resume_clock"]] and on(paused):
            return act["resume_clock"]
        gaps = uncovered(obs)
        for i in gaps:
            h = usable(obs, i)
            if h is not None:
                return act[f"attach_held_record[{h}]"]
        if gaps:
            return act[subset_name(tuple(gaps))]
        return act["release_case"]

    return policy


def facts_policy(agent: CatalogAgent) -> Policy:
    """The desk procedure over the facts: a document is valid for its item when its flags and
    comparisons meet the item's conditions; an item is covered when one of its document slots
    is valid; a held record can cover an uncovered item when its item accepts held records
    and it meets the same conditions (and it is not yet on the case)."""
    idx, _ = _index(agent)

    def on(obs: np.ndarray, name: str) -> bool:
        return bool(obs[idx[name]] > 0.5)

    def meets(obs: np.ndarray, prefix: str, i: int) -> bool:
        item = f"item[{i}]"
        return (on(obs, f"{prefix}.legible") and on(obs, f"{prefix}.issued_by_review_date")
                and on(obs, f"{prefix}.within_age_limit")
                and (on(obs, f"{prefix}.signed") or not on(obs, f"{item}.signature_required"))
                and (on(obs, f"{prefix}.name_equal_applicant") or not on(obs, f"{item}.name_must_match")))

    def uncovered(obs: np.ndarray) -> list[int]:
        return [i for i in range(N_ITEMS) if on(obs, f"item[{i}].present") and not any(
            on(obs, f"item[{i}].doc[{j}].present") and meets(obs, f"item[{i}].doc[{j}]", i)
            and (not on(obs, f"item[{i}].doc[{j}].from_held_record") or on(obs, f"item[{i}].accept_held_record"))
            for j in range(N_ITEM_DOCS))]

    def usable(obs: np.ndarray, i: int) -> int | None:
        if not on(obs, f"item[{i}].accept_held_record"):
            return None
        for h in range(N_HELD):
            p = f"held[{h}]"
            if on(obs, f"{p}.present") and on(obs, f"{p}.item[{i}]") and not on(obs, f"{p}.attached") and meets(obs, p, i):
                return h
        return None

    return _procedure(agent, "case.clock_paused", uncovered, usable,
                      lambda obs: on(obs, "case.amount_ge_senior_threshold"))


def raw_policy(agent: CatalogAgent) -> Policy:
    """The desk procedure over raw values: the policy decodes day numbers, subtracts the
    issue date from the review date, compares the age with the item's limit (same unit),
    compares name symbols with the applicant's, matches each document and held record to
    its item slot, and compares the amount with the threshold."""
    idx, _ = _index(agent)

    def val(obs: np.ndarray, name: str) -> float:
        return float(obs[idx[name]])

    def on(obs: np.ndarray, name: str) -> bool:
        return val(obs, name) > 0.5

    def days(obs: np.ndarray, name: str) -> int:
        return int(round(val(obs, name) * DAY_SPAN))

    def meets(obs: np.ndarray, p: str, i: int) -> bool:
        item = f"item[{i}]"
        if not (on(obs, f"{p}.present") and on(obs, f"{p}.{item}") and on(obs, f"{p}.legible")):
            return False
        if on(obs, f"{item}.signature_required") and not on(obs, f"{p}.signed"):
            return False
        applicant = val(obs, "case.applicant_name")
        if on(obs, f"{item}.name_must_match") and not (applicant > 0 and abs(val(obs, f"{p}.name") - applicant) < 0.5 / N_SYMBOLS):
            return False
        age = days(obs, "case.review_date") - days(obs, f"{p}.issued_on")
        return age >= 0 and (not on(obs, f"{item}.has_age_limit") or age <= days(obs, f"{item}.max_age_days"))

    def uncovered(obs: np.ndarray) -> list[int]:
        return [i for i in range(N_ITEMS) if on(obs, f"item[{i}].present") and not any(
            meets(obs, f"doc[{k}]", i)
            and (not on(obs, f"doc[{k}].source_held_record") or on(obs, f"item[{i}].accept_held_record"))
            for k in range(N_DOCS))]

    def usable(obs: np.ndarray, i: int) -> int | None:
        if not on(obs, f"item[{i}].accept_held_record"):
            return None
        for h in range(N_HELD):
            if not on(obs, f"held[{h}].attached") and meets(obs, f"held[{h}]", i):
                return h
        return None

    def senior(obs: np.ndarray) -> bool:
        return val(obs, "case.amount") >= val(obs, "case.senior_threshold")

    return _procedure(agent, "case.clock[paused]", uncovered, usable, senior)
