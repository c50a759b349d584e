"""The ``facts`` and ``raw`` feature tiers of the sufficiency catalog (issue 14).

The ``conclusions`` tier (:class:`~backoffice.training.catalog.sufficiency.SufficiencyCatalog`)
hands the agent the clerk's assessment of the case (``any_missing``, ``any_satisfiable``,
``sufficient``, the failed conditions of the uncovered items ...), the routing verdict
(``amount_vs_threshold``), and actions that apply it: ``attach_held_record`` attaches "the first
valid held record of the first item a held record can cover", ``request_missing`` asks for
"exactly the items still missing". The two tiers here keep the same desk, the same tools and the
catalog rules (features from the brief and tool results only, a mask that expresses legality
only, one action = one native call, ``submit`` always valid), and take those away.

**What both tiers change in the actions** (the same 29 actions in both tiers).

- ``attach_held_record[h]`` attaches the ``h``-th held record ``search_held_records`` returned
  (in the order listed): which record covers a gap (its item still uncovered, the item accepts
  held records, the record meets the item's conditions on the review date) is the agent's.
- ``request_items[S]`` asks the applicant for the required items of the item slots in ``S`` (one
  action per non-empty subset of the 4 item slots; an item slot is the ``i``-th item
  ``get_requirements`` lists): which items are still uncovered is the agent's, and so is asking
  once per review for all of them (a second request in a review fails ``duplicate_request``).
- The reads, ``wait``, ``resume_clock``, ``release_case``, ``route_standard`` /
  ``route_senior`` (the routing rule's two queues: which one is the agent's in every tier) and
  ``submit`` are those of the conclusions tier: they only ground a call.

**facts** (:class:`SufficiencyFacts`, 29 actions, 228 own features; 259 with the generic and
``taken`` ones): observed facts and plain comparisons between observed values. Per item slot the
requirement's conditions as read (age limit, signature, name match, held records accepted); per
item slot and document slot (the item's documents on the case, newest 5) the document's flags
(legible, signed, attached from a held record) and three comparisons: its name equals the
applicant's (case and spaces aside), it was issued on or before the review date, its age on the
review date is within its item's age limit; per held-record slot its item slot (a same-entity
fact), its flags and the same three comparisons against its item, and whether it is attached;
the case's status, clock, queue (equal to the routing rule's standard / senior queue) and
whether its amount is at or above the routing rule's senior threshold. There is no "item
satisfied / satisfiable / missing" flag, no count of them, no "sufficient", no failed-condition
count and no "this is due" flag: combining a document's comparisons with its item's conditions
into validity, an item's documents into "covered", the held records into "satisfiable", and
choosing attach / request / release is the agent's. *What the tier makes easy:* every comparison
a clerk makes between two values is already made (dates against the review date and the age
limit, names against the applicant's), and the documents are grouped by the item they are for,
so a document's validity is a short boolean formula over its own flags and its item's four
conditions (legible AND (signed OR no signature needed) AND (name equal OR no name match
needed) AND issued by the review date AND within the age limit AND (not from a held record OR
held records accepted)), an item is covered when one of its 5 document slots is valid, and the
routing decision is one flag; what remains is the OR over slots, the set of items to request
and the procedure's order (read, resume after a reply, attach, request, wait, release, route).

**raw** (:class:`SufficiencyRaw`, 29 actions, 221 own features; 252 in all): per-slot observed
values only. Dates (the review date, each document's and held record's issue date) are day
numbers ``(date - 2024-01-01) / 2048`` and the age limits are days ``/ 2048`` in the same unit
(the agent subtracts and compares); amounts (the case's, the routing rule's senior threshold) are
cents ``/ 1e6``; names (the applicant's, each document's and held record's) are *episode
symbols*, the ``k``-th distinct name seen this episode ``/ 32`` (two names are the same name
exactly when their symbols are equal, letter case and runs of spaces aside); status, clock state,
case type and source are one-hot; id equalities between slots only as same-entity facts (a
document's or held record's item is item slot ``i``, a held record is attached to the case, the
case's queue is the routing rule's standard / senior queue). Documents are 12 flat slots (every
document on the case in the order known: listed, then attached and uploaded), not grouped by
item. The agent must match each document to its item, compute its age and compare it with the
limit, compare names by symbol, combine the conditions, find the usable held records, compare
the amount with the threshold and pick the items to request. *What the tier makes easy:* names
are normalised before they are named (the name-match trap of lookalike spellings is gone: a
match is an equality of two symbols, and the applicant's name, read first, is usually symbol 1),
dates are on one linear day scale (an age is a difference of two features, the age limit is in
the same unit), and the mask removes malformed calls, repeated reads, attachments of a record
already on the case and anything after the release and the route. Episodes stay short (the
feature policies need at most 18 calls).

Each tier's hand-written :meth:`feature_policy` (a staticmethod, found on the class by
``catalog-features@<tier>``) reads only the feature vector and the mask and passes every released
task: the tier suffices. In ``raw`` it decodes day numbers and symbols and does the arithmetic
and the comparisons itself (the policy, not the catalog, computes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from itertools import combinations
from typing import Any, ClassVar

import numpy as np

from backoffice.envs.sufficiency.rules import normalise_name
from backoffice.envs.sufficiency.tables import INTAKE_QUEUE, parse_day
from backoffice.training.catalog.base import ActionDef, CatalogAgent, FeatureDef, scale
from backoffice.training.catalog.sufficiency import CASE_TYPES, SufficiencyCatalog, _merge

Policy = Callable[[np.ndarray, np.ndarray], int]

#: required items per case type (every case type requires 4): the item slots, in the order
#: ``get_requirements`` lists them
N_ITEMS = 4
#: held-record slots (the released tasks hold at most 3 records per applicant)
N_HELD = 4
#: facts: document slots per item slot (the item's newest documents; released tasks reach 4)
N_ITEM_DOCS = 5
#: raw: flat document slots (the released tasks reach 10 documents on a case)
N_DOCS = 12
#: the request subsets: every non-empty subset of the item slots, by size then slot order
SUBSETS: tuple[tuple[int, ...], ...] = tuple(s for k in range(1, N_ITEMS + 1) for s in combinations(range(N_ITEMS), k))
#: raw: dates as ``(date - DATE_BASE) / DAY_SPAN``, day counts (age limits) as ``days / DAY_SPAN``
DATE_BASE = date(2024, 1, 1)
DAY_SPAN = 2048.0
#: raw: amounts in cents / AMOUNT_SPAN
AMOUNT_SPAN = 1_000_000.0
#: raw: names are ``k / N_SYMBOLS`` (the k-th distinct name seen this episode)
N_SYMBOLS = 32
#: facts: age limits as days / AGE_SPAN (a value read from get_requirements)
AGE_SPAN = 400.0

CASE_STATUSES = ("in_review", "awaiting_info", "released")
READS = ("get_case", "get_requirements", "search_held_records", "list_documents")
PAGED = ("search_held_records", "list_documents")


def _subset_name(s: tuple[int, ...]) -> str:
    return f"request_items[{','.join(str(i) for i in s)}]"


ACTIONS: tuple[ActionDef, ...] = (
    ActionDef("get_case", "get_case", "Read the task's case (type, applicant, amount, status, clock, queue, date)."),
    ActionDef("get_requirements", "get_requirements",
              "Read the required items, their validity conditions and the routing rule of the case's type."),
    ActionDef("search_held_records", "search_held_records",
              "Read the records held about the case's applicant; while the last page returned a next_cursor, read the "
              "next page."),
    ActionDef("list_documents", "list_documents",
              "Read the documents on the case and the review date; while the last page returned a next_cursor, read "
              "the next page."),
    *(ActionDef(f"attach_held_record[{h}]", "attach_held_record",
                f"Attach the {h}-th held record search_held_records returned to the case.") for h in range(N_HELD)),
    *(ActionDef(_subset_name(s), "request_items",
                f"Ask the applicant for the required items of item slots {', '.join(str(i) for i in s)} "
                f"(the items get_requirements lists at those positions); pauses a running SLA clock.") for s in SUBSETS),
    ActionDef("wait", "wait", "Wait for the applicant's reply (new date, uploaded documents)."),
    ActionDef("resume_clock", "resume_clock", "Restart the paused SLA clock."),
    ActionDef("release_case", "release_case", "Release the case for decision."),
    ActionDef("route_standard", "route_case", "Route the case to its routing rule's standard decision queue."),
    ActionDef("route_senior", "route_case", "Route the case to its routing rule's senior decision queue."),
    ActionDef("submit", "submit", "Finish the episode."),
)
_INDEX = {a.name: i for i, a in enumerate(ACTIONS)}


class _TieredSufficiency(SufficiencyCatalog):
    """What the ``facts`` and ``raw`` tiers share: the conclusions tier's episode state
    (``reset``, the case state), grounding, observation bookkeeping and legality mask, over the
    29 primitive actions (the record to attach and the items to request are the agent's), with
    attached held records tracked by id."""

    domain = "sufficiency"
    #: the conclusions tier's step limit (40): the feature policies' longest episode is 18 calls
    max_steps = SufficiencyCatalog.max_steps
    #: (the conclusions tier's 12 actions are a fixed-length tuple to mypy; these are 29 others)
    actions: ClassVar[tuple[ActionDef, ...]] = ACTIONS  # type: ignore[assignment]

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        #: held records known to be on the case (attached this episode, or a document citing them)
        self.attached: set[str] = set()
        #: item type -> item slot (from the requirements; ``None``: recompute)
        self._slots: dict[Any, int] | None = None

    # -- observed values --------------------------------------------------------------------
    def _today(self) -> date | None:
        """The review date: the date part of the last reported ``now``."""
        try:
            return parse_day(self.now) if self.now else None
        except ValueError:
            return None

    def _requirement(self, i: int) -> dict[str, Any] | None:
        reqs = self.requirements or ()
        return reqs[i] if i < len(reqs) else None

    def _item_slot(self, item_type: Any) -> int | None:
        """The item slot of ``item_type`` (a same-entity fact), ``None`` if the type is not required."""
        if self._slots is None:
            self._slots = {}
            for i, req in enumerate((self.requirements or ())[:N_ITEMS]):
                self._slots.setdefault(req.get("item_type"), i)
        return self._slots.get(item_type)

    def _held_record(self, h: int) -> dict[str, Any] | None:
        held = self.held or ()
        return held[h] if h < len(held) else None

    def _is_attached(self, record: Mapping[str, Any]) -> bool:
        return str(record.get("id")) in self.attached

    @staticmethod
    def _issued(row: Mapping[str, Any]) -> date | None:
        try:
            return parse_day(str(row.get("issued_on")))
        except ValueError:
            return None

    # -- grounding --------------------------------------------------------------------------
    def _choice_call(self, name: str, cid: str) -> dict[str, Any] | None:
        """``attach_held_record[h]``: held record slot ``h``; ``request_items[...]``: the item
        slots named."""
        if name.startswith("attach_held_record["):
            record = self._held_record(int(name[len("attach_held_record["):-1]))
            return None if record is None else {"tool": "attach_held_record", "args": {"case_id": cid, "record_id": str(record["id"])}}
        if name.startswith("request_items["):
            slots_ = [int(i) for i in name[len("request_items["):-1].split(",")]
            reqs = [self._requirement(i) for i in slots_]
            if any(r is None for r in reqs):
                return None
            return {"tool": "request_items", "args": {"case_id": cid, "items": [str(r["item_type"]) for r in reqs if r]}}
        return None

    # -- observing ----------------------------------------------------------------------------
    def _take_attached(self, document: dict[str, Any], args: Mapping[str, Any]) -> None:
        """The attached held record is on the case (tracked by id); its document is merged."""
        self.attached.add(str(document.get("held_record_id") or args.get("record_id")))
        if self.documents is not None:
            self.documents = _merge(self.documents, [document])

    def _take_uploads(self, documents: list[dict[str, Any]]) -> None:
        self.documents = _merge(self.documents, documents)

    def _after_observe(self, tool: str) -> None:
        """Run after every successful observation: the item slots follow the requirements, and
        a document citing a held record puts it on the case (``raw`` also names its new symbols)."""
        if tool == "get_requirements":
            self._slots = None
        self.attached.update(str(d["held_record_id"]) for d in self.documents or () if d.get("held_record_id"))

    # -- mask -------------------------------------------------------------------------------
    def _mask_choices(self, m: np.ndarray, released: bool) -> None:
        """Which record to attach and which items to request are never masked (only on a
        released case, a record already on the case, an item slot with no requirement)."""
        if released:
            return
        for h in range(N_HELD):
            record = self._held_record(h)
            m[_INDEX[f"attach_held_record[{h}]"]] = record is not None and not self._is_attached(record)
        n_items = len(self.requirements or ())
        for s in SUBSETS:
            m[_INDEX[_subset_name(s)]] = self.requirements is not None and max(s) < n_items

    # -- features shared by both tiers ------------------------------------------------------------
    def _case_values(self) -> dict[str, float]:
        case_type = self.case.get("case_type") if self.case is not None else None
        return {
            **{f"case.status[{s}]": float(self.status == s) for s in CASE_STATUSES},
            "case.routed": float(self.routed),
            "case.wait_refused": float(self.no_reply),
            "case.review_round": scale(self.review_round, 4.0),
            "case.requests": scale(self.n_requests, 4.0),
            **{f"case.type[{t}]": float(case_type == t) for t in CASE_TYPES},
            "held_records.more_pages": float(self.held_cursor is not None),
            "documents.more_pages": float(self.documents_cursor is not None),
        }

    @classmethod
    def _layout(cls) -> dict[str, int]:
        """Feature name -> index in the tier's own features (computed once per class)."""
        layout = _LAYOUTS.get(cls)
        if layout is None:
            layout = _LAYOUTS[cls] = {f.name: i for i, f in enumerate(cls.features)}
        return layout

    def _start(self, values: Mapping[str, float]) -> tuple[np.ndarray, dict[str, int]]:
        """A zero vector of the tier's features with ``values`` (by name) and the case's and the
        item slots' shared values set, and the layout (a block of a slot's features is contiguous
        in the order its feature names are declared: :meth:`_put` writes one)."""
        layout = self._layout()
        vec = np.zeros(len(self.features), dtype=np.float32)
        for name, x in {**self._case_values(), **values}.items():
            vec[layout[name]] = x
        for i, req in enumerate((self.requirements or ())[:N_ITEMS]):
            self._put(vec, layout, f"item[{i}].present", (
                1.0, float(req.get("max_age_days") is not None), float(bool(req.get("signature_required"))),
                float(bool(req.get("name_must_match"))), float(bool(req.get("accept_held_record")))))
        return vec, layout

    @staticmethod
    def _put(vec: np.ndarray, layout: Mapping[str, int], first: str, values: tuple[float, ...]) -> None:
        """Write a slot's block: ``values`` from the feature named ``first`` on."""
        start = layout[first]
        vec[start:start + len(values)] = values


_LAYOUTS: dict[type, dict[str, int]] = {}

_CASE_FEATURES = (
    *(FeatureDef(f"case.status[{s}]", f"1 if the case's last reported status (get_case, request, wait, release) is {s}")
      for s in CASE_STATUSES),
    FeatureDef("case.routed", "1 if a route_case call on the case succeeded"),
    FeatureDef("case.wait_refused", "1 if a wait on the awaited case returned an error (the tool says no further "
                                    "reply is expected before the end of the review period)"),
    FeatureDef("case.review_round", "replies received (the case's review_round as last reported) / 4"),
    FeatureDef("case.requests", "successful request_items calls this episode / 4"),
    *(FeatureDef(f"case.type[{t}]", f"1 if the case type is {t}") for t in CASE_TYPES),
    FeatureDef("held_records.more_pages", "1 if the last search_held_records page returned a next_cursor"),
    FeatureDef("documents.more_pages", "1 if the last list_documents page returned a next_cursor"),
)
_ITEM_FEATURES = (
    ("present", "1 if get_requirements lists an i-th item"),
    ("has_age_limit", "1 if the i-th item has a max_age_days"),
    ("signature_required", "the i-th item's signature_required"),
    ("name_must_match", "the i-th item's name_must_match"),
    ("accept_held_record", "the i-th item's accept_held_record"),
)


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
            return act[_subset_name(tuple(gaps))]
        return act["release_case"]

    return policy


# ======================================================================================
# facts
# ======================================================================================
_DOC_FACTS = (
    ("present", "1 if the i-th item has a j-th document on the case (its newest 5 documents, oldest first)"),
    ("legible", "the document's legible flag"),
    ("signed", "the document's signed flag"),
    ("from_held_record", "1 if the document's source is held_record (attached from a held record)"),
    ("name_equal_applicant", "1 if the name on the document equals the applicant's name (letter case and runs of "
                             "spaces aside)"),
    ("issued_by_review_date", "1 if the document was issued on or before the review date (the last reported now)"),
    ("within_age_limit", "1 if the document's age on the review date (days since issue) is at most the item's "
                         "max_age_days (1 when the item has no age limit)"),
)
_HELD_FACTS = (
    ("present", "1 if search_held_records returned an h-th record"),
    *((f"item[{i}]", f"1 if the h-th held record is of the {i}-th required item's type") for i in range(N_ITEMS)),
    ("item_not_required", "1 if the h-th held record's item type is none of the required items"),
    ("legible", "the record's legible flag"),
    ("signed", "the record's signed flag"),
    ("name_equal_applicant", "1 if the name on the record equals the applicant's name (letter case and runs of "
                             "spaces aside)"),
    ("issued_by_review_date", "1 if the record was issued on or before the review date"),
    ("within_age_limit", "1 if the record's age on the review date is at most its item's max_age_days (1 when the "
                         "item has no age limit; 0 when its item is not required)"),
    ("attached", "1 if the record is on the case (attached this episode, or a document on the case cites it)"),
)


class SufficiencyFacts(_TieredSufficiency):
    """Sufficiency, ``facts`` tier: observed facts and plain comparisons, no assessment (see the
    module docstring)."""

    tier = "facts"
    slot_actions = {"attach_held_record": "held"}
    slot_sets = ("item",)
    features = (
        *_CASE_FEATURES,
        FeatureDef("case.clock_paused", "1 if the case's last reported SLA clock_state is paused"),
        FeatureDef("case.queue_standard", "1 if the case's queue as last reported is its routing rule's standard queue"),
        FeatureDef("case.queue_senior", "1 if the case's queue as last reported is its routing rule's senior queue"),
        FeatureDef("case.amount_ge_senior_threshold", "1 if the case's amount_cents is at or above its routing rule's "
                                                      "senior_threshold_cents (0 before both were read)"),
        *(FeatureDef(f"item[{i}].{n}", d.replace("i-th", f"{i}-th")) for i in range(N_ITEMS) for n, d in _ITEM_FEATURES),
        *(FeatureDef(f"item[{i}].max_age_days", f"the {i}-th item's max_age_days / {AGE_SPAN:g} (0 without a limit)")
          for i in range(N_ITEMS)),
        *(FeatureDef(f"item[{i}].doc[{j}].{n}", d.replace("i-th", f"{i}-th").replace("j-th", f"{j}-th"))
          for i in range(N_ITEMS) for j in range(N_ITEM_DOCS) for n, d in _DOC_FACTS),
        *(FeatureDef(f"held[{h}].{n}", d.replace("h-th", f"{h}-th")) for h in range(N_HELD) for n, d in _HELD_FACTS),
    )

    def _comparisons(self, row: Mapping[str, Any], req: Mapping[str, Any] | None,
                     today: date | None) -> tuple[float, float, float]:
        """``name_equal_applicant``, ``issued_by_review_date`` and ``within_age_limit`` of ``row``
        (a document or a held record) against its item's requirement ``req``."""
        issued = self._issued(row)
        age = (today - issued).days if today is not None and issued is not None else None
        max_age = req.get("max_age_days") if req is not None else None
        name_equal = self.case is not None and (
            normalise_name(row.get("name_on_document")) == normalise_name(self.case.get("applicant_name")))
        return (float(name_equal), float(age is not None and age >= 0),
                float(req is not None and age is not None and (max_age is None or age <= int(max_age))))

    def feature_vector(self) -> np.ndarray:
        today = self._today()
        amount = (self.case or {}).get("amount_cents")
        threshold = (self.routing or {}).get("senior_threshold_cents")
        vec, layout = self._start({
            "case.clock_paused": float(self.clock_state == "paused"),
            "case.queue_standard": float(self.routing is not None and self.queue == self.routing.get("standard_queue")),
            "case.queue_senior": float(self.routing is not None and self.queue == self.routing.get("senior_queue")),
            "case.amount_ge_senior_threshold": float(amount is not None and threshold is not None and amount >= threshold),
        })
        docs_of: dict[int, list[dict[str, Any]]] = {}
        for d in self.documents or ():
            i = self._item_slot(d.get("item_type"))
            if i is not None:
                docs_of.setdefault(i, []).append(d)
        for i, req in enumerate((self.requirements or ())[:N_ITEMS]):
            if req.get("max_age_days") is not None:
                vec[layout[f"item[{i}].max_age_days"]] = scale(req["max_age_days"], AGE_SPAN)
            for j, d in enumerate(docs_of.get(i, [])[-N_ITEM_DOCS:]):
                self._put(vec, layout, f"item[{i}].doc[{j}].present", (
                    1.0, float(bool(d.get("legible"))), float(bool(d.get("signed"))),
                    float(d.get("source") == "held_record"), *self._comparisons(d, req, today)))
        for h, r in enumerate((self.held or ())[:N_HELD]):
            i = self._item_slot(r.get("item_type"))
            self._put(vec, layout, f"held[{h}].present", (
                1.0, *(float(i == k) for k in range(N_ITEMS)), float(i is None),
                float(bool(r.get("legible"))), float(bool(r.get("signed"))),
                *self._comparisons(r, self._requirement(i) if i is not None else None, today),
                float(self._is_attached(r))))
        return np.clip(vec, -1.0, 1.0)

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Policy:
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


# ======================================================================================
# raw
# ======================================================================================
_ROW_RAW = (
    ("present", "1 if there is a k-th {what}"),
    *((f"item[{i}]", f"1 if the k-th {{what}} is of the {i}-th required item's type") for i in range(N_ITEMS)),
    ("item_not_required", "1 if the k-th {what}'s item type is none of the required items"),
    ("issued_on", f"its issue date: days since {DATE_BASE.isoformat()} / {DAY_SPAN:g}"),
    ("signed", "its signed flag"),
    ("legible", "its legible flag"),
    ("name", f"the name on it: the episode symbol of the name (k-th distinct name seen) / {N_SYMBOLS}"),
)
_DOC_RAW = (*_ROW_RAW, ("source_held_record", "1 if its source is held_record (attached from a held record)"))
_HELD_RAW = (*_ROW_RAW, ("attached", "1 if the record is on the case (a same-entity fact: attached this episode, or "
                                     "a document on the case cites it)"))


def _day_value(day: date | None) -> float:
    return scale((day - DATE_BASE).days, DAY_SPAN) if day is not None else 0.0


class SufficiencyRaw(_TieredSufficiency):
    """Sufficiency, ``raw`` tier: per-slot observed values (see the module docstring)."""

    tier = "raw"
    #: the 2 envs this tier's runs were made on, with the rollout size of the other tiers (2 x 256)
    hyperparams = {**_TieredSufficiency.hyperparams, "n_envs": 2, "n_steps": 256}
    features = (
        *_CASE_FEATURES,
        *(FeatureDef(f"case.clock[{c}]", f"1 if the case's last reported SLA clock_state is {c}") for c in ("running", "paused")),
        FeatureDef("case.queue[intake]", f"1 if the case's queue as last reported is {INTAKE_QUEUE}"),
        FeatureDef("case.queue[standard]", "1 if the case's queue as last reported is its routing rule's standard queue "
                                           "(same entity)"),
        FeatureDef("case.queue[senior]", "1 if the case's queue as last reported is its routing rule's senior queue"),
        FeatureDef("case.amount", f"the case's amount_cents / {AMOUNT_SPAN:g}"),
        FeatureDef("case.senior_threshold", f"the routing rule's senior_threshold_cents / {AMOUNT_SPAN:g}"),
        FeatureDef("case.review_date", f"the review date (the last reported now): days since {DATE_BASE.isoformat()} / "
                                       f"{DAY_SPAN:g}"),
        FeatureDef("case.applicant_name", f"the applicant's name: its episode symbol / {N_SYMBOLS}"),
        *(FeatureDef(f"item[{i}].{n}", d.replace("i-th", f"{i}-th")) for i in range(N_ITEMS) for n, d in _ITEM_FEATURES),
        *(FeatureDef(f"item[{i}].max_age_days", f"the {i}-th item's max_age_days / {DAY_SPAN:g} (the date unit; 0 "
                                                f"without a limit)") for i in range(N_ITEMS)),
        *(FeatureDef(f"doc[{k}].{n}", d.replace("k-th", f"{k}-th").format(what="document on the case"))
          for k in range(N_DOCS) for n, d in _DOC_RAW),
        *(FeatureDef(f"held[{k}].{n}", d.replace("k-th", f"{k}-th").format(what="held record"))
          for k in range(N_HELD) for n, d in _HELD_RAW),
    )

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        super().reset(brief, info)
        self.symbols: dict[str, int] = {}

    def _after_observe(self, tool: str) -> None:
        """Name the names seen so far, in a fixed order: the applicant's, the held records', the documents'."""
        super()._after_observe(tool)
        rows = [{"name_on_document": (self.case or {}).get("applicant_name")}, *(self.held or ()), *(self.documents or ())]
        for r in rows:
            name = normalise_name(r.get("name_on_document"))
            if name and name not in self.symbols:
                self.symbols[name] = len(self.symbols) + 1

    def _symbol(self, name: Any) -> float:
        k = self.symbols.get(normalise_name(name), 0)
        return min(k, N_SYMBOLS) / N_SYMBOLS

    def _row(self, r: Mapping[str, Any], last: float) -> tuple[float, ...]:
        """A document's or held record's block (``_ROW_RAW`` then ``last``)."""
        i = self._item_slot(r.get("item_type"))
        return (1.0, *(float(i == k) for k in range(N_ITEMS)), float(i is None), _day_value(self._issued(r)),
                float(bool(r.get("signed"))), float(bool(r.get("legible"))), self._symbol(r.get("name_on_document")), last)

    def feature_vector(self) -> np.ndarray:
        routing = self.routing or {}
        vec, layout = self._start({
            "case.clock[running]": float(self.clock_state == "running"),
            "case.clock[paused]": float(self.clock_state == "paused"),
            "case.queue[intake]": float(self.queue == INTAKE_QUEUE),
            "case.queue[standard]": float(self.routing is not None and self.queue == routing.get("standard_queue")),
            "case.queue[senior]": float(self.routing is not None and self.queue == routing.get("senior_queue")),
            "case.amount": scale((self.case or {}).get("amount_cents"), AMOUNT_SPAN),
            "case.senior_threshold": scale(routing.get("senior_threshold_cents"), AMOUNT_SPAN),
            "case.review_date": _day_value(self._today()),
            "case.applicant_name": self._symbol((self.case or {}).get("applicant_name")) if self.case else 0.0,
        })
        for i, req in enumerate((self.requirements or ())[:N_ITEMS]):
            if req.get("max_age_days") is not None:
                vec[layout[f"item[{i}].max_age_days"]] = scale(req["max_age_days"], DAY_SPAN)
        for k, d in enumerate((self.documents or ())[:N_DOCS]):
            self._put(vec, layout, f"doc[{k}].present", self._row(d, float(d.get("source") == "held_record")))
        for k, r in enumerate((self.held or ())[:N_HELD]):
            self._put(vec, layout, f"held[{k}].present", self._row(r, float(self._is_attached(r))))
        return np.clip(vec, -1.0, 1.0)

    @staticmethod
    def feature_policy(agent: CatalogAgent) -> Policy:
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


__all__ = ["SufficiencyFacts", "SufficiencyRaw"]
