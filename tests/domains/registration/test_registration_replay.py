"""Registration calls that replay, or are refused, whatever an agent sends in them (regressions of the replay issue)."""

from __future__ import annotations

import math

from traced import SUBMIT, traced

from backoffice.envs import make_native
from backoffice.envs.core.replay import replay


def _world_with(patient_id: str, payer_id: str = "PAY-MER") -> str:
    """The first heldout registration task whose world holds ``patient_id`` and ``payer_id`` (the
    issue's case was REG-H0128 of seeds v1.1)."""
    from backoffice.envs.core.release import load_release

    rel = load_release("registration")
    return next(t for t in rel.split_ids["heldout"] if rel.snapshot(rel.task(t).snapshot_id).table("patients").get(patient_id)
                is not None and payer_id in rel.snapshot(rel.task(t).snapshot_id).table("payers"))


def test_registration_consent_with_an_infinite_contact_id_replays(tmp_path) -> None:
    call = {"tool": "record_consent", "args": {"patient_id": "PAT-0010", "given_by": "self", "contact_id": math.inf}}
    infos, lines = traced("registration", tmp_path, [call, SUBMIT], split="heldout", options={"task_id": _world_with("PAT-0010")})
    assert infos[0]["error_code"] == "invalid_args"
    assert lines[0]["args"]["contact_id"] is None  # orjson's reading, as before
    assert lines[0]["sent"]["args"]["contact_id"] == {"$float": "inf"}
    res = replay(lines)
    assert res[0].ok, res[0].divergences
    assert res[0].end_state_hash == infos[-1]["end_state_hash"] and res[0].grade == infos[-1]["grade"]


def test_registration_member_id_and_identifier_in_other_digits_are_refused() -> None:
    env = make_native("registration", split="heldout")
    env.reset(options={"task_id": _world_with("PAT-0010")})
    for member_id in ("MR32³1²⁸⁹⁴", "MR٣٢٣١٢٨٩٤", "MR３２３１２８９４"):
        _, _, _, _, info = env.step({"tool": "verify_member_id", "args": {"payer_id": "PAY-MER", "member_id": member_id}})
        assert info["result_status"] == "ok", member_id
        assert env.last_result["result"]["valid"] is False and env.last_result["result"]["reason"] == "wrong_format"
    from backoffice.envs.registration.tables import identifier_check_digit, identifier_valid, member_id_valid

    first9 = "943476591"
    ident = first9 + str(identifier_check_digit(first9))
    assert identifier_valid(ident)
    assert not identifier_valid(ident.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")))
    assert not member_id_valid("MR32³1²⁸⁹⁴", "MR")
