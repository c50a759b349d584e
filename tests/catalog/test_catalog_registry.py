"""The generic catalog pieces every domain's catalog is built from (issue 33): named features
(scalars, slot families, blocks), named actions with their legality, the desk's per-step memo,
the one vector builder (each producer called once per step) and a tier as a declaration, here
over the toy domain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backoffice.envs.core.build import build_release
from backoffice.envs.core.release import Release
from backoffice.training.catalog.base import CatalogAgent
from backoffice.training.catalog.features import Actions, Desk, Features, VectorPlan
from backoffice.training.catalog.tier import DomainCatalog, Hyper, Tier, tier_spec
from backoffice.training.catalog.wrapper import CatalogEnv
from toy_domain import DOMAIN as TOY, ToyEnv

CALLS: list[str] = []


class CounterDesk(Desk):
    def reset(self, brief: dict[str, Any], info: Any) -> None:
        self.target = int(brief["params"]["target"])
        self.values: dict[str, int] = {}

    def observe(self, action: str, call: dict[str, Any], result: dict[str, Any]) -> None:
        if result.get("status") == "ok" and "value" in (result.get("result") or {}):
            self.values[result["result"]["id"]] = int(result["result"]["value"])

    def gap(self) -> int:
        return int(self.memo("gap", lambda: CALLS.append("gap") or self.target - self.values.get("C-1", 0)))


FEATURES: Features[CounterDesk] = Features()
ACTIONS: Actions[CounterDesk] = Actions()
COUNTERS = ("C-1", "C-2")


@FEATURES.feature("c1_read", "1 once counter C-1 was read")
def c1_read(desk: CounterDesk) -> float:
    return float("C-1" in desk.values)


@FEATURES.feature("gap", "target - C-1's value, / 5")
def gap(desk: CounterDesk) -> float:
    return desk.gap() / 5


@FEATURES.feature("done", "1 if C-1 reached the target")
def done(desk: CounterDesk) -> float:
    return float(desk.gap() == 0 and "C-1" in desk.values)


@FEATURES.family("counter[{i}].value", 2, "counter slot {i}'s value / 5")
def counter_value(desk: CounterDesk, i: int) -> float:
    return desk.values.get(COUNTERS[i], 0) / 5


@FEATURES.block([("target[1]", "target is 1"), ("target[2]", "target is 2"), ("target[3]", "target is 3")])
def target_onehot(desk: CounterDesk) -> list[float]:
    CALLS.append("onehot")
    return [float(desk.target == k) for k in (1, 2, 3)]


@ACTIONS.family("read[{i}]", 2, "get_counter", "Read counter slot {i}.")
def read(desk: CounterDesk, i: int) -> dict[str, Any]:
    return {"tool": "get_counter", "args": {"counter_id": COUNTERS[i]}}


@ACTIONS.action("bump", "bump", "Bump C-1 by one.", legal=lambda desk: "C-1" in desk.values)
def bump(desk: CounterDesk) -> dict[str, Any]:
    return {"tool": "bump", "args": {"counter_id": "C-1"}}


@ACTIONS.action("submit", "submit", "Finish.")
def submit(desk: CounterDesk) -> dict[str, Any]:
    return {"tool": "submit", "args": {}}


def policy(agent: CatalogAgent) -> Any:
    idx = {f.name: i for i, f in enumerate(agent.feature_defs)}
    act = {a.name: i for i, a in enumerate(agent.spec.actions)}
    return lambda obs, mask: (act["read[0]"] if obs[idx["c1_read"]] < 0.5 else
                              act["bump"] if obs[idx["gap"]] > 0 else agent.finish)


BASE = Tier("base", features=("c1_read", "gap", "done", "target[2]", "counter[0].value"),
            actions=("read[0]", "read[1]", "bump", "submit"),
            hyperparams={"gamma": Hyper(0.9, "episodes are three steps long")}, feature_policy=policy)
CATALOG = DomainCatalog("toy", CounterDesk, FEATURES, ACTIONS, {"base": BASE})


@pytest.fixture(scope="module")
def release(tmp_path_factory: Any) -> Release:
    root: Path = tmp_path_factory.mktemp("seeds")
    build_release(TOY, root)
    return Release("toy", root)


def test_registries_refuse_twice_the_same_name_and_name_what_exists() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        FEATURES.feature("gap", "again")(lambda desk: 0.0)
    with pytest.raises(KeyError, match="no feature named 'gapp'"):
        FEATURES["gapp"]
    assert FEATURES.names()[:3] == ("c1_read", "gap", "done") and len(FEATURES) == 8


def test_the_plan_calls_each_producer_once_per_step_and_follows_the_tier_order() -> None:
    desk = CounterDesk()
    desk.reset({"params": {"target": 2}}, {})
    desk.values["C-1"] = 1
    plan = VectorPlan(FEATURES.select(("target[3]", "gap", "target[2]", "done", "counter[1].value", "counter[0].value")))
    CALLS.clear()
    vec = plan(desk)
    assert vec.dtype == np.float32 and vec.tolist() == pytest.approx([0.0, 0.2, 1.0, 0.0, 0.0, 0.2])
    assert CALLS == ["onehot", "gap"]  # the block once for two of its names, the memoised gap once for two features
    desk.changed()
    CALLS.clear()
    plan(desk)
    assert CALLS == ["onehot", "gap"]


def test_a_tier_declaration_is_a_catalog_env(release: Release) -> None:
    spec = tier_spec(CATALOG, CATALOG.tiers["base"])
    assert tier_spec(CATALOG, CATALOG.tiers["base"]) is spec
    assert [a.name for a in spec.actions] == ["read[0]", "read[1]", "bump", "submit"]
    assert spec.hyperparams == {"gamma": 0.9} and spec.tier == "base"
    env = CatalogEnv(ToyEnv(release=release, split="heldout"), spec())
    for task_id in release.split_ids["heldout"]:
        obs, info = env.reset(options={"task_id": task_id})
        assert info["action_mask"].tolist() == [1, 1, 0, 1]  # bump needs C-1 read
        decide = spec.feature_policy(env.agent)  # type: ignore[attr-defined]
        for _ in range(10):
            obs, _, term, trunc, info = env.step(decide(obs, env.action_masks()))
            if term or trunc:
                break
        assert info["is_success"], (task_id, info["grade"]["failure_codes"])


def test_a_derived_tier_adds_a_feature_of_its_own(release: Release) -> None:
    from backoffice.training.catalog.features import Feature

    twice = Feature("gap_twice", "the gap, doubled", lambda desk: 2 * desk.gap() / 5)
    mine = CATALOG.tiers["base"].derive("mine", features=(*BASE.features, twice))
    assert mine.feature_policy is None and mine.features[-1] is twice
    spec = tier_spec(CATALOG, mine)
    env = CatalogEnv(ToyEnv(release=release, split="heldout"), spec())
    obs, _ = env.reset(options={"task_id": release.split_ids["heldout"][0]})
    obs, *_ = env.step(0)  # read C-1
    names = [f.name for f in env.agent.feature_defs]
    assert obs[names.index("gap_twice")] == pytest.approx(2 * obs[names.index("gap")])


def test_counts_gates_and_tables_skip_calls_not_values() -> None:
    """A slot family's producers past ``count`` and a group's with its ``gate`` closed are not
    called, and their values are the 0 the producers give there; an ``InTable`` legality reads
    its table once a step and says what the table says."""
    from backoffice.training.catalog.features import Action, InTable, MaskPlan, derived

    calls: list[str] = []
    feats: Features[CounterDesk] = Features()
    acts: Actions[CounterDesk] = Actions()

    def read_count(desk: CounterDesk) -> int:
        calls.append("count")
        return len(desk.values)

    def bumpable(desk: CounterDesk) -> bool:
        calls.append("gate")
        return "C-1" in desk.values

    @feats.family("slot[{i}].read", 2, "1 if a {i}-th counter was read", count=read_count)
    def slot_read(desk: CounterDesk, i: int) -> float:
        calls.append(f"slot{i}")
        return float(i < len(desk.values))

    @feats.block((("c1.value", "C-1 / 5"), ("c1.left", "target - C-1, / 5")), gate=bumpable)
    def c1(desk: CounterDesk) -> tuple[float, float]:
        calls.append("c1")
        if "C-1" not in desk.values:
            return 0.0, 0.0
        return desk.values["C-1"] / 5, (desk.target - desk.values["C-1"]) / 5

    @derived
    def legal_reads(desk: CounterDesk) -> frozenset[str]:
        calls.append("table")
        return frozenset(f"read[{i}]" for i, c in enumerate(COUNTERS) if c not in desk.values)

    for i in range(2):
        acts.add(Action(f"read[{i}]", "get_counter", f"Read counter slot {i}.", read, InTable(legal_reads, f"read[{i}]"), (i,)))

    plan = VectorPlan(feats.select(("slot[0].read", "slot[1].read", "c1.value", "c1.left")))
    mask = MaskPlan(acts.select(("read[0]", "read[1]")))
    desk = CounterDesk()
    desk.reset({"params": {"target": 3}}, {})
    for values, want_calls, vector, legal in (
            ({}, ["count", "gate", "table"], [0.0, 0.0, 0.0, 0.0], [True, True]),
            ({"C-1": 1}, ["count", "slot0", "gate", "c1", "table"], [1.0, 0.0, 0.2, 0.4], [False, True]),
            ({"C-1": 1, "C-2": 4}, ["count", "slot0", "slot1", "gate", "c1", "table"], [1.0, 1.0, 0.2, 0.4], [False, False])):
        desk.values = dict(values)
        desk.changed()
        calls.clear()
        assert plan(desk).tolist() == pytest.approx(vector)
        assert mask(desk).tolist() == legal
        assert calls == want_calls
        # the same values as calling every producer and legality check
        assert [slot_read(desk, 0), slot_read(desk, 1), *c1(desk)] == pytest.approx(vector)
        assert [a.legal(desk, *a.args) for a in acts.select(("read[0]", "read[1]"))] == legal
