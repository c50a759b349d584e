"""The remittance catalog env: the feature policy solves every heldout task, deliberately wrong
feature policies fail with the expected failure codes, the spaces are fixed, every action the
mask allows grounds to a call the native env accepts, submit is always a real submit, and the
mask leaves the judgements (which write, which case, which disposition, when to move on or post)
to the agent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from backoffice.envs.remittance.tables import DUPLICATE_ACTIONS
from backoffice.training.catalog import make_catalog_env, spec_class, tier_specs
from backoffice.training.domains.remittance.catalog.feature_policies import conclusions_policy as feature_policy
from conftest import play_catalog

Policy = Callable[[np.ndarray, np.ndarray], int]
RemittanceCatalog = spec_class("remittance", tier_specs("remittance")["conclusions"])
ACT = {a.name: i for i, a in enumerate(RemittanceCatalog.actions)}


@pytest.fixture(scope="module")
def env():
    return make_catalog_env("remittance", split="heldout")


def _run(env, policy: Policy, tid: str) -> dict:
    return play_catalog(env, policy, tid)[0]


def _sweep(env, make: Callable[[object], Policy], ids=None) -> tuple[int, int, Counter]:
    policy = make(env.agent)
    ids = list(ids or env.unwrapped.release.split_ids["heldout"])
    ok, codes = 0, Counter()
    for tid in ids:
        info = _run(env, policy, tid)
        ok += bool(info["is_success"])
        codes.update(info["grade"]["failure_codes"])
    return ok, len(ids), codes


def _skipping(*skipped: str) -> Callable[[object], Policy]:
    """The feature policy, except that whenever it would take one of the ``skipped`` actions it
    makes progress instead (applies the line, moves to the next line, waits for / reads the
    payer's replies, posts): a clerk who never does those things."""

    def make(agent) -> Policy:
        good = feature_policy(agent)
        idx = {d.name: i for i, d in enumerate(agent.feature_defs)}

        def policy(obs, mask):
            a = good(obs, mask)
            if RemittanceCatalog.actions[a].name not in skipped:
                return a
            f = lambda name: obs[idx[name]] > 0.5  # noqa: E731
            dup_post = next((f"post_{d}" for action, (d, _) in DUPLICATE_ACTIONS.items() if f(f"pol.duplicate_action[{action}]")), "post_hold")
            progress = [("allocate", f("cur_alloc_due")), ("search_next_line", f("lines_unsearched")),
                        ("wait", f("queries_awaiting")), ("get_case", f("replies_unread")),
                        ("post_apply", f("no_dup")), (dup_post, f("dup_found"))]
            return next((ACT[n] for n, cond in progress if cond and mask[ACT[n]] and n not in skipped), ACT["submit"])

        return policy

    return make


def test_feature_policy_passes_every_heldout_task(env):
    ok, n, codes = _sweep(env, feature_policy)
    assert ok == n, codes


def test_never_opening_cases_misses_cases(env):
    ok, n, codes = _sweep(env, _skipping("case_underpayment", "case_refund", "case_unidentified", "case_duplicate", "case_duplicate_refund"))
    assert 0 < ok < n
    assert set(codes) == {"missed_case"}


def test_ignoring_the_patient_share_is_caught(env):
    ok, n, codes = _sweep(env, _skipping("transfer_adj[0]", "transfer_adj[1]"))
    assert 0 < ok < n
    # moving on instead of the transfer, it also leaves a short line's case unopened
    assert "patient_responsibility_missed" in codes and set(codes) <= {"patient_responsibility_missed", "missed_case"}


def test_writing_off_every_remainder_is_a_wrong_write_off(env):
    def make(agent) -> Policy:
        good = feature_policy(agent)
        idx = {d.name: i for i, d in enumerate(agent.feature_defs)}

        def policy(obs, mask):
            f = lambda name: obs[idx[name]] > 0.5  # noqa: E731
            a = good(obs, mask)
            # once the line is applied, write off whatever stays open (beyond tolerance too, and against leave_open)
            if (RemittanceCatalog.actions[a].name in ("case_underpayment", "search_next_line", "wait", "post_apply")
                    and f("cur_matched") and f("cur_balance_positive") and not f("cur_alloc_due") and mask[ACT["write_off_small"]]):
                return ACT["write_off_small"]
            return a

        return policy

    ok, n, codes = _sweep(env, make)
    assert 0 < ok < n
    assert "wrong_write_off" in codes
    assert set(codes) <= {"wrong_write_off", "missed_case"}  # a written-off shortfall needs no case any more


def test_opposite_duplicate_disposition_is_wrong_status(env):
    def make(agent) -> Policy:
        good = feature_policy(agent)

        def policy(obs, mask):
            a = good(obs, mask)
            swap = {ACT["post_hold"]: ACT["post_return"], ACT["post_return"]: ACT["post_hold"]}
            return swap.get(a, a)

        return policy

    ok, n, codes = _sweep(env, make)
    assert 0 < ok < n
    assert "payment_status_wrong" in codes
    assert set(codes) == {"payment_status_wrong"}  # the status carries the unapplied amount (returned: 0)


def test_posting_apply_on_a_duplicate_is_caught(env):
    """post_apply stays valid on a duplicate (the mask does not know the policy's answer)."""

    def make(agent) -> Policy:
        good = feature_policy(agent)

        def policy(obs, mask):
            a = good(obs, mask)
            return ACT["post_apply"] if a in (ACT["post_hold"], ACT["post_return"]) and mask[ACT["post_apply"]] else a

        return policy

    ok, n, codes = _sweep(env, make)
    assert 0 < ok < n
    assert "payment_status_wrong" in codes


def test_spaces_are_fixed_across_tasks():
    env = make_catalog_env("remittance", split="train")
    k, n = env.action_space.n, env.observation_space.shape
    assert k == len(RemittanceCatalog.actions) <= 40
    assert len(RemittanceCatalog.features) <= 80
    for tid in env.unwrapped.release.split_ids["train"][:8]:
        obs, _ = env.reset(options={"task_id": tid})
        assert obs.shape == n and obs.dtype == np.float32 and np.all(np.abs(obs) <= 1.0)
        assert env.action_masks().shape == (k,)
    other = make_catalog_env("remittance", split="generated")
    other.reset(seed=5)
    assert other.action_space.n == k and other.observation_space.shape == n


def _tasks_by_tag(env) -> dict[str, str]:
    rel = env.unwrapped.release
    tasks: dict[str, str] = {}
    for tid in rel.split_ids["heldout"]:
        tasks.setdefault(rel.answer_key(tid)["defect_tags"][0], tid)  # test-side task choice only
    return tasks


def _replay(cat, tid: str, prefix: list[int]):
    cat.reset(options={"task_id": tid})
    for a in prefix:
        cat.step(a)
    return cat


def test_allowed_actions_ground_to_accepted_calls(env):
    """Along the feature policy's episodes (one task per defect tag), every action the mask allows
    grounds to a call of its own tool that the native env accepts (status ok): the mask is
    legality, so anything it offers is a call the tools take."""
    tasks = _tasks_by_tag(env)
    assert len(tasks) >= 8
    policy = feature_policy(env.agent)
    probe = make_catalog_env("remittance", split="heldout")
    for tid in tasks.values():
        obs, _ = env.reset(options={"task_id": tid})
        prefix: list[int] = []
        while True:
            for a in np.flatnonzero(env.action_masks()):
                cat = _replay(probe, tid, prefix)
                call = cat.agent.spec.to_call(int(a))
                name = RemittanceCatalog.actions[a].name
                assert call is not None and call["tool"] == RemittanceCatalog.actions[a].tool, name
                _, _, _, _, info = cat.step(int(a))
                assert info["result_status"] == "ok", (tid, name, info)
            a = policy(obs, env.action_masks())
            prefix.append(a)
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                assert info["is_success"]
                break


def test_submit_is_always_a_real_submit(env):
    """The finishing action is always valid and always one native submit call, posted or not."""
    tid = env.unwrapped.release.split_ids["heldout"][0]
    env.reset(options={"task_id": tid})
    assert env.action_masks()[ACT["submit"]]
    assert env.agent.spec.to_call(ACT["submit"]) == {"tool": "submit", "args": {}}
    _, _, term, _, info = env.step(ACT["submit"])
    assert term and info["result_status"] == "ok" and not info["is_success"]


def _advance(env, tid: str, until: Callable[[object], bool]) -> np.ndarray:
    """Follow the feature policy on ``tid`` until ``until(desk)`` holds; the current mask."""
    policy = feature_policy(env.agent)
    obs, _ = env.reset(options={"task_id": tid})
    for _ in range(40):
        if until(env.agent.spec.desk):
            return env.action_masks()
        obs, _, term, trunc, _ = env.step(policy(obs, env.action_masks()))
        assert not (term or trunc)
    raise AssertionError("state not reached")


def _line_cases(desk) -> list[str]:
    """The line case actions whose case does not cover the current line yet (a case opened for the
    whole payment, under case_scope payment, covers every line: a second one is refused)."""
    return [n for n, c in (("case_underpayment", "underpayment"), ("case_refund", "refund_request"),
                           ("case_unidentified", "unidentified_remittance")) if not desk.covered(desk.current(), c)]


def test_mask_leaves_judgements_to_the_agent(env):
    """At the decision points every well-formed decision/write is valid, right or wrong."""
    tasks = _tasks_by_tag(env)
    # a duplicate payment, just after the three reads: case, every disposition, working the lines
    dup = _advance(env, tasks["duplicate_payment"], lambda s: s.facts())
    for name in ("case_duplicate", "post_apply", "post_hold", "post_return", "search_next_line"):
        assert dup[ACT[name]], name
    # before any read, posting and the duplicate case are already well-formed calls
    env.reset(options={"task_id": tasks["exact_match"]})
    first = env.action_masks()
    for name in ("post_apply", "post_hold", "post_return", "case_duplicate", "get_policies", "get_payment", "list_payments"):
        assert first[ACT[name]], name
    # a matched line carrying an adjustment, before any write on it: every adjustment slot both
    # ways, allocation, small write-off, every line case, a payer query, the next line, posting
    adj = _advance(env, tasks["contractual_adjustment"],
                   lambda s: s.current() is not None and s.current().status == "matched" and s.current().line["adj_codes"])
    spec = env.agent.spec.desk
    n_adj = len(spec.current().line["adj_codes"])
    names = [f"write_off_adj[{j}]" for j in range(n_adj)] + [f"transfer_adj[{j}]" for j in range(n_adj)]
    names += ["allocate", "allocate_whole", "write_off_small", "query_payer", "post_apply", "case_duplicate", *_line_cases(spec)]
    if spec.started < len(spec.lines):
        names.append("search_next_line")
    if not any(ln.applied for ln in spec.lines):  # hold/return with active allocations: rejected by the tool
        names += ["post_hold", "post_return"]
    for name in names:
        assert adj[ACT[name]], name
    # a line matching no claim: every line case and a payer query, the next line and posting
    none = _advance(env, tasks["unreferenced_line"], lambda s: s.current() is not None and s.current().status == "none")
    for name in ("query_payer", "post_apply", "case_duplicate", *_line_cases(env.agent.spec.desk)):
        assert none[ACT[name]], name
    # an ambiguous line: the query and the cases
    amb = _advance(env, tasks["payer_reply_needed"], lambda s: s.current() is not None and s.current().status == "ambiguous")
    for name in ("query_payer", "post_apply", *_line_cases(env.agent.spec.desk)):
        assert amb[ACT[name]], name


def test_after_posting_only_submit(env):
    tid = env.unwrapped.release.split_ids["heldout"][0]
    env.reset(options={"task_id": tid})
    _, _, _, _, info = env.step(ACT["post_apply"])
    assert info["result_status"] == "ok"
    assert np.flatnonzero(env.action_masks()).tolist() == [ACT["submit"]]


def test_empty_slot_is_a_structured_error(env):
    env.reset(options={"task_id": env.unwrapped.release.split_ids["heldout"][0]})
    assert not env.action_masks()[ACT["allocate"]]
    obs, _, term, _, info = env.step(ACT["allocate"])  # nothing read yet: ungroundable
    assert info["result_status"] == "error" and info["error_code"] == "invalid_args"
    assert obs[1] == 1.0 and not term  # last_call_error
