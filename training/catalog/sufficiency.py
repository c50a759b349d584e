"""Catalog of the sufficiency desk (``backoffice/Sufficiency-Catalog-v0``).

One case per task. The agent reads the case, its type's requirements, the applicant's held
records and the case's documents once; from then on it tracks the documents itself (an attach
returns the attached document, a reply returned by ``wait`` lists the uploaded ones, with the
new date), so it re-assesses the case after every change without re-reading.

The assessment is the rule ``get_requirements`` states, applied to what the tools returned on
the date they reported (:func:`backoffice.envs.sufficiency.rules.assess`, the clerk's
computation, fed only observed rows): each required item is *satisfied*, *satisfiable* from a
held record not yet attached, or *missing*. The actions ground their arguments from it:
``attach_held_record`` attaches the first valid held record of the first satisfiable item,
``request_missing`` asks for exactly the missing items.

The decisions left to the policy: attach vs request vs release, wait and resume the clock after
a request, the decision queue (standard or senior), when to route and when to stop.

The mask expresses legality only (what can be formed and what the tool would accept, as far as
the observations show), never judgement:

- reads: ``get_requirements`` needs the case type (``get_case``); every read is masked once its
  answer is known (the agent tracks the documents and the case state itself). The paginated
  reads (``search_held_records``, ``list_documents``) stay open while a page remains: the same
  action fetches the next page (its ``next_cursor``), and the held records or the documents
  count as read (and the assessment starts) only after the last page;
- ``attach_held_record`` / ``request_missing`` need their argument (a held record that covers an
  uncovered item / a non-empty list of missing items) and a case that is not released; a second
  request while the first is still open is legal (the tool accepts it) and left to the agent:
  the grade fails it (``duplicate_request``);
- ``wait`` is masked when the case is known not to await a reply, or a wait already reported
  that no further reply is expected; ``resume_clock`` when the clock is known to run or the
  case awaits a reply; ``release_case`` when the case is known to be released or awaiting a
  reply (each a precondition error the tool would return);
- ``route_*`` need the routing rule (the queue names) and are masked only for the queue the
  case already sits in (the tool rejects it: conflict) and once the case is released and routed
  (the work is done; a second route is a ``duplicate_decision``);
- an action whose identical call just failed is masked until a later call succeeds.

Whether to read before acting, attach, request, release, resume, route (and where, and before or
after the release) and when to stop are the agent's: the features carry what a clerk computes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from backoffice.envs.sufficiency.rules import Assessment, assess
from backoffice.training.catalog.base import ActionDef, CatalogAgent, CatalogSpec, FeatureDef, scale

#: the case types, in a fixed order (one-hot features)
CASE_TYPES = ("disability_claim", "housing_application", "income_support_claim")
#: the validity conditions an uncovered item can fail (count features)
CONDITIONS = ("presence", "age", "signature", "name_match", "legibility")
#: items a case type requires (scale of the item counts)
ITEMS_FULL = 4.0

#: the catalog's feature tiers (``backoffice.training.catalog.TIERS``): this module's catalog is the
#: ``conclusions`` tier; ``facts`` and ``raw`` are in :mod:`.sufficiency_tiers`
TIERS = {
    "conclusions": "SufficiencyCatalog",
    "facts": "backoffice.training.catalog.sufficiency_tiers:SufficiencyFacts",
    "raw": "backoffice.training.catalog.sufficiency_tiers:SufficiencyRaw",
}


class SufficiencyCatalog(CatalogSpec):
    domain = "sufficiency"
    #: ~3x the longest feature-policy episode (14 steps): the unmasked route_standard/route_senior
    #: alternation can loop, and a short limit made such loops pay (terminal shaping at truncation)
    max_steps = 40
    #: tuned: a shorter horizon and a milder finish prior (run r4 of the catalog's revision:
    #: 100 % validation at 90k steps; with the defaults 91.7 % heldout, then a collapse)
    #: ``progress``: the v1 grade asks for requests, replies waited for and reviewed before a decision
    hyperparams = {"gamma": 0.95, "finish_bias": -2.0, "reward_mode": "progress"}
    actions = (
        ActionDef("get_case", "get_case", "Read the task's case (type, applicant, amount, status, clock, date)."),
        ActionDef("get_requirements", "get_requirements",
                  "Read the required items, their validity conditions and the routing rule of the case's type."),
        ActionDef("search_held_records", "search_held_records", "Read every record held about the case's applicant."),
        ActionDef("list_documents", "list_documents", "Read the documents on the case and the review date."),
        ActionDef("attach_held_record", "attach_held_record",
                  "Attach the first valid held record of the first item (by name) a held record can cover."),
        ActionDef("request_missing", "request_items",
                  "Ask the applicant for exactly the items still missing (not satisfied, no valid held record)."),
        ActionDef("wait", "wait", "Wait for the applicant's reply (new date, uploaded documents)."),
        ActionDef("resume_clock", "resume_clock", "Restart the paused SLA clock."),
        ActionDef("release_case", "release_case", "Release the case for decision."),
        ActionDef("route_standard", "route_case", "Route the case to its type's standard decision queue."),
        ActionDef("route_senior", "route_case", "Route the case to its type's senior decision queue."),
        ActionDef("submit", "submit", "Finish the episode."),
    )
    features = (
        FeatureDef("case_in_review", "1 if the case's last reported status (get_case, request, wait, release) is in_review"),
        FeatureDef("case_awaiting_info", "1 if the case's last reported status is awaiting_info (a request is outstanding)"),
        FeatureDef("case_released", "1 if the case's last reported status is released"),
        FeatureDef("clock_paused", "1 if the case's last reported SLA clock_state is paused"),
        FeatureDef("routed", "1 if a route_case call on the case succeeded"),
        FeatureDef("queue_standard", "1 if the case's queue as last reported (get_case, release, route) is the "
                                     "standard decision queue of its routing rule"),
        FeatureDef("queue_senior", "1 if the case's queue as last reported is the senior decision queue of its routing rule"),
        FeatureDef("assessed", "1 if the requirements, the held records and the documents have all been read "
                               "(the assessment features below are 0 until then)"),
        FeatureDef("any_missing", "1 if an item is missing: no valid document on the case and no valid held record, "
                                  "on the last reported date"),
        FeatureDef("n_missing", "missing items / 4"),
        FeatureDef("any_satisfiable", "1 if an item lacks a valid document but a held record not yet attached "
                                      "meets its conditions (and the item accepts held records)"),
        FeatureDef("n_satisfiable", "satisfiable-from-held-record items / 4"),
        FeatureDef("n_satisfied", "items with a valid document on the case / 4"),
        FeatureDef("sufficient", "1 if assessed and every required item has a valid document on the case"),
        *(FeatureDef(f"fail_{c}", f"uncovered items (missing or satisfiable) whose documents fail `{c}` / 4 "
                                  f"(presence: no document of that item)") for c in CONDITIONS),
        FeatureDef("amount_vs_threshold", "+1 if the case amount is at or above the senior threshold of its routing "
                                          "rule, -1 if below, 0 before both were read"),
        FeatureDef("amount_ratio", "case amount / senior threshold, / 2 (0 before both were read)"),
        FeatureDef("n_requests", "successful request_items calls this episode / 4"),
        FeatureDef("no_reply_expected", "1 if the last wait failed (no further reply before the end of the review period)"),
        FeatureDef("review_round", "replies received (the case's review_round as last reported) / 4"),
        FeatureDef("n_held_records", "held records found for the applicant / 4"),
        FeatureDef("n_documents", "documents known on the case (listed, attached, uploaded) / 10"),
        *(FeatureDef(f"case_type[{t}]", f"1 if the case type is {t}") for t in CASE_TYPES),
    )

    def __init__(self) -> None:
        #: the index of each action name
        self._index = {a.name: i for i, a in enumerate(self.actions)}

    def reset(self, brief: dict[str, Any], info: Mapping[str, Any]) -> None:
        self.case_id: str = str((brief.get("params") or {}).get("case_id") or "")
        self.case: dict[str, Any] | None = None
        self.requirements: list[dict[str, Any]] | None = None
        self.routing: dict[str, Any] | None = None
        self.held: list[dict[str, Any]] | None = None
        self.documents: list[dict[str, Any]] | None = None
        #: the cursor of the next page of held records / documents (None: every page read)
        self.held_cursor: str | None = None
        self.documents_cursor: str | None = None
        self.now: str | None = None
        self.status: str | None = None
        self.clock_state: str | None = None
        self.review_round = 0
        self.queue: str | None = None
        self.routed = False
        self.n_requests = 0
        self.no_reply = False
        #: the items of the request made since the last reply (None: none outstanding)
        self.outstanding: tuple[str, ...] | None = None
        #: actions whose call failed since the last successful call (the same call would fail again)
        self.failed: set[int] = set()
        self._assessment: Assessment | None = None

    # -- the assessment ----------------------------------------------------------------------
    def assessment(self) -> Assessment | None:
        """The case's assessment on the last reported date (``None`` until everything was read)."""
        if (self._assessment is None and None not in (self.case, self.requirements, self.held, self.documents, self.now)
                and self.held_cursor is None and self.documents_cursor is None):
            assert self.case is not None and self.requirements is not None and self.held is not None
            assert self.documents is not None and self.now is not None
            self._assessment = assess(self.requirements, self.documents, self.held,
                                      str(self.case.get("applicant_name") or ""), self.now[:10])
        return self._assessment

    def _changed(self) -> None:
        self._assessment = None

    def _attach_target(self) -> str | None:
        a = self.assessment()
        if a is None or not a.satisfiable_from_records:
            return None
        return a.satisfiable_from_records[sorted(a.satisfiable_from_records)[0]][0]

    def _case_state(self, row: Mapping[str, Any]) -> None:
        if row.get("status") is not None:
            self.status = str(row["status"])
        if row.get("clock_state") is not None:
            self.clock_state = str(row["clock_state"])
        if row.get("review_round") is not None:
            self.review_round = int(row["review_round"])
        if row.get("queue") is not None:
            self.queue = str(row["queue"])

    # -- the interface -----------------------------------------------------------------------
    def to_call(self, action: int) -> dict[str, Any] | None:
        """The call of an action, by its name (every tier's; the record to attach and the items
        to request are the tier's own: :meth:`_choice_call`)."""
        name = self.actions[action].name
        cid = self.case_id
        if name == "submit":
            return {"tool": "submit", "args": {}}
        if not cid:
            return None
        if name == "get_case":
            return {"tool": "get_case", "args": {"case_id": cid}}
        if name == "get_requirements":
            return None if self.case is None else {"tool": "get_requirements", "args": {"case_type": self.case["case_type"]}}
        if name == "search_held_records" and self.held_cursor is not None:
            return {"tool": "search_held_records", "args": {"case_id": cid, "cursor": self.held_cursor}}
        if name == "list_documents" and self.documents_cursor is not None:
            return {"tool": "list_documents", "args": {"case_id": cid, "cursor": self.documents_cursor}}
        if name in ("search_held_records", "list_documents", "wait", "resume_clock", "release_case"):
            return {"tool": self.actions[action].tool, "args": {"case_id": cid}}
        if name in ("route_standard", "route_senior"):
            if self.routing is None:
                return None
            return {"tool": "route_case", "args": {"case_id": cid, "queue": self.routing[name.replace("route_", "") + "_queue"]}}
        return self._choice_call(name, cid)

    def _choice_call(self, name: str, cid: str) -> dict[str, Any] | None:
        """``attach_held_record``: the first record that satisfies an uncovered item;
        ``request_missing``: the items no document or record satisfies."""
        if name == "attach_held_record":
            record = self._attach_target()
            return None if record is None else {"tool": "attach_held_record", "args": {"case_id": cid, "record_id": record}}
        if name == "request_missing":
            a = self.assessment()
            if a is None or not a.missing_items:
                return None
            return {"tool": "request_items", "args": {"case_id": cid, "items": list(a.missing_items)}}
        return None

    def observe(self, action: int, call: dict[str, Any], result: dict[str, Any]) -> None:
        tool = self.actions[action].tool
        if result.get("status") != "ok":
            if tool == "wait" and result.get("code") == "precondition_failed" and self.status == "awaiting_info":
                self.no_reply = True
            self.failed.add(action)
            return
        self.failed.clear()
        out = result.get("result") or {}
        args = call.get("args") or {}
        if tool == "get_case":
            self.case = dict(out["case"])
            self.now = out.get("now") or self.now
            self._case_state(self.case)
        elif tool == "get_requirements":
            self.requirements = [dict(r) for r in out["tables"]["items"]]
            self.routing = dict(out["tables"]["routing"])
        elif tool == "search_held_records":
            more = "cursor" in args and self.held is not None
            self.held = _merge(self.held if more else None, out["records"])
            self.held_cursor = out.get("next_cursor")
        elif tool == "list_documents":
            more = "cursor" in args and self.documents is not None
            self.documents = _merge(self.documents if more else None, out["documents"])
            self.documents_cursor = out.get("next_cursor")
            self.now = out.get("now") or self.now
        elif tool == "attach_held_record":
            self._take_attached(dict(out["attached"]), args)
        elif tool == "request_items":
            self.n_requests += 1
            self.outstanding = tuple(sorted(args["items"]))
            self._case_state(out.get("case") or {})
        elif tool == "wait":
            self.outstanding = None
            self.now = out.get("now") or self.now
            if self.documents is not None:
                self._take_uploads(list(out.get("documents") or []))
            self._case_state(out.get("case") or {})
        elif tool in ("resume_clock", "release_case"):
            self._case_state(out.get("case") or {})
        elif tool == "route_case":
            self.routed = True
            self._case_state(out.get("case") or {})
        self._changed()
        self._after_observe(tool)

    def _take_attached(self, document: dict[str, Any], args: Mapping[str, Any]) -> None:
        """``attach_held_record`` put ``document`` on the case."""
        if self.documents is not None:
            self.documents.append(document)

    def _take_uploads(self, documents: list[dict[str, Any]]) -> None:
        """``wait`` reported these documents uploaded (the documents are known)."""
        assert self.documents is not None
        self.documents.extend(dict(d) for d in documents)

    def _after_observe(self, tool: str) -> None:
        """Run after every successful observation."""

    def mask(self) -> np.ndarray:
        """Legality only (see the module doc): (a) the call can be formed, (b) no re-read of a known
        answer, (c) no call the tool is certain to reject given what was observed, (d) nothing but
        submit once the case is released and routed. ``None`` status/clock (not read yet) rules
        nothing out."""
        idx = self._index
        m = np.zeros(len(self.actions), dtype=bool)
        m[idx["submit"]] = True
        if not self.case_id:
            return m
        status, released = self.status, self.status == "released"
        if released and self.routed:  # (d) the terminal writes are done
            return m
        m[idx["get_case"]] = self.case is None
        m[idx["get_requirements"]] = self.case is not None and self.requirements is None
        m[idx["search_held_records"]] = self.held is None or self.held_cursor is not None
        m[idx["list_documents"]] = self.documents is None or self.documents_cursor is not None
        self._mask_choices(m, released)
        m[idx["wait"]] = status in (None, "awaiting_info") and not self.no_reply
        m[idx["resume_clock"]] = self.clock_state in (None, "paused") and status != "awaiting_info"
        m[idx["release_case"]] = status in (None, "in_review")
        if self.routing is not None:
            m[idx["route_standard"]] = self.queue != self.routing.get("standard_queue")
            m[idx["route_senior"]] = self.queue != self.routing.get("senior_queue")
        for action in self.failed:
            m[action] = False
        m[idx["submit"]] = True
        return m

    def _mask_choices(self, m: np.ndarray, released: bool) -> None:
        """The attach and request actions (never on a released case)."""
        a = self.assessment()
        m[self._index["attach_held_record"]] = not released and self._attach_target() is not None
        m[self._index["request_missing"]] = not released and a is not None and bool(a.missing_items)

    def feature_vector(self) -> np.ndarray:
        a = self.assessment()
        f: list[float] = [
            float(self.status == "in_review"), float(self.status == "awaiting_info"), float(self.status == "released"),
            float(self.clock_state == "paused"), float(self.routed),
            float(self.routing is not None and self.queue == self.routing.get("standard_queue")),
            float(self.routing is not None and self.queue == self.routing.get("senior_queue")),
            float(a is not None),
        ]
        if a is not None:
            uncovered = [*a.missing_items, *sorted(a.satisfiable_from_records)]
            f += [
                float(bool(a.missing_items)), scale(len(a.missing_items), ITEMS_FULL),
                float(bool(a.satisfiable_from_records)), scale(len(a.satisfiable_from_records), ITEMS_FULL),
                scale(len(a.satisfied_items), ITEMS_FULL), float(a.sufficient),
                *(scale(sum(_fails(a, i, c) for i in uncovered), ITEMS_FULL) for c in CONDITIONS),
            ]
        else:
            f += [0.0] * (6 + len(CONDITIONS))
        if self.case is not None and self.routing is not None:
            amount = float(self.case.get("amount_cents") or 0)
            threshold = float(self.routing.get("senior_threshold_cents") or 0)
            f += [1.0 if amount >= threshold else -1.0, scale(amount / threshold, 2.0) if threshold > 0 else 0.0]
        else:
            f += [0.0, 0.0]
        f += [
            scale(self.n_requests, 4.0), float(self.no_reply), scale(self.review_round, 4.0),
            scale(len(self.held) if self.held is not None else None, 4.0),
            scale(len(self.documents) if self.documents is not None else None, 10.0),
        ]
        case_type = self.case.get("case_type") if self.case is not None else None
        f += [float(case_type == t) for t in CASE_TYPES]
        return np.clip(np.asarray(f, dtype=np.float32), -1.0, 1.0)


def _fails(a: Assessment, item: str, condition: str) -> bool:
    """Whether an uncovered item's documents fail ``condition`` (a document dated after the review
    date counts as failing ``age``: the feature is about the document's date)."""
    failed = a.failures.get(item, ())
    return condition in failed or (condition == "age" and "not_after_review_date" in failed)


def _merge(known: list[dict[str, Any]] | None, page: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a list read so far with the rows of its next page (a row already known by its
    id, e.g. a document the agent attached meanwhile, is not added twice)."""
    rows = list(known or [])
    seen = {r.get("id") for r in rows}
    rows.extend(dict(r) for r in page if r.get("id") not in seen)
    return rows


def feature_policy(agent: CatalogAgent) -> Callable[[np.ndarray, np.ndarray], int]:
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
