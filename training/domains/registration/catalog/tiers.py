"""The registration tiers as declarations over the registries (:mod:`.features`, :mod:`.actions`).

Every tier plays the same episode: read the form, the variants of its names and the search; open
the form's person, create a record or refer the form; then the registration set on the current
record (phone, address, coverage, GP link, guardian and next of kin, consent); submit. The tiers
differ in what they compute for the agent:

- ``conclusions``: the rule file's matching rule per search result and in total
  (``slot[i].match``, ``match_one``, ``identifier_conflict`` ...), what is still due on the current
  record (``coverage_missing``, ``address_update_allowed``, ``items_open`` ...); a referral cites
  the candidates, ``create_patient`` gives the identifier when its check digit holds.
- ``facts``: observed facts and plain comparisons only (names, dates and identifiers against the
  form's, roster members against the current record, the record against the form); drawing the
  candidates, the referral's reason and what is due is the agent's. A referral cites the results
  opened this episode; the agent chooses to give the identifier or not.
- ``raw``: per-slot observed values only (names, phones, address parts, member ids and contacts
  as episode symbols, dates as year / month / day); every comparison is the agent's. A guardian
  consent cites a contact slot.
"""

from __future__ import annotations

from backoffice.envs.registration.tables import ADDRESS_FIELDS
from backoffice.training.catalog.features import Action
from backoffice.training.catalog.tier import Hyper, Tier, two_envs
from backoffice.training.domains.registration.catalog.actions import ACTIONS
from backoffice.training.domains.registration.catalog.desk import (
    N_CONTACTS,
    N_COVERAGES,
    N_GP,
    N_ROSTER,
    N_SLOTS,
    N_VARIANTS,
    REFER_REASONS,
)
from backoffice.training.domains.registration.catalog.feature_policies import conclusions_policy, facts_policy, raw_policy
from backoffice.training.domains.registration.catalog.features import VERIFY_REASONS

_HYPER = {
    "finish_bias": Hyper(0.0, "no prior against the ending actions: with one, PPO still settled on referring"),
    "n_steps": Hyper(256, "long rollouts: a registration is up to 14 calls"),
    "gamma": Hyper(0.995, "a long horizon: the grade comes at the end of the registration set"),
    "ent_coef": Hyper(0.02, "more exploration among the referral reasons and the registration items"),
    "reward_mode": Hyper("progress", "the shaped reward's local optimum is to refer every task"),
    "call_cost": Hyper(0.0, "free successful calls: with the per-call cost PPO referred every task that was not a referral"),
}
#: the feature policies' longest episode is 14 calls
MAX_STEPS = 18

_READ = ("form_read", "today_known", "searched", "search_next_page", "n_results")
_READS = ("get_intake_form", "get_rules", "search_patients", "get_name_variants[given]", "get_name_variants[family]",
          *(f"get_patient[{i}]" for i in range(N_SLOTS)))
_WRITES = ("update_patient[phone]", "update_patient[address]", "verify_member_id", "lookup_member", "add_coverage[card]")


def _tier_actions(consents: tuple[str, ...]) -> tuple[str | Action, ...]:
    """The facts and raw tiers' catalog: reads, opens, creates, referrals citing the opened
    results, record writes, then ``consents``."""
    return (
        *_READS, "create_patient[with_identifier]", "create_patient[without_identifier]",
        *(ACTIONS.shown_as(f"refer_to_human[{r}]", f"opened:refer_to_human[{r}]") for r in REFER_REASONS),
        *_WRITES, *(f"add_coverage[roster][{j}]" for j in range(N_ROSTER)),
        "link_gp", "add_contact[guardian]", "add_contact[next_of_kin]", "record_consent[self]", *consents, "submit",
    )


CONCLUSIONS = Tier(
    name="conclusions",
    features=(
        "form_read", "today_known", "searched", "n_results", "variants_pending",
        *(f"slot[{i}].{n}" for i in range(N_SLOTS)
          for n in ("names_agree", "dob_same", "dob_swapped", "identifier_same", "deceased", "match")),
        "match_none", "match_one", "match_many", "match_deceased", "identifier_conflict", "patient_known", "patient_created",
        "create_rejected", "current_is_match", "current_not_active", "minor", "phone_differs", "address_differs",
        "address_verified", "address_evidence", "address_update_allowed", "form_has_payer", "card_checked", "card_ok",
        "roster_checked", "roster_ok", "coverage_missing", "coverage_count", "form_has_gp", "gp_missing", "form_has_guardian",
        "guardian_missing", "guardian_contact_known", "form_has_kin", "kin_missing", "consent_recorded", "consent_count",
        "writes", "items_open", "registration_complete",
    ),
    actions=(*_READS, "create_patient", *(f"refer_to_human[{r}]" for r in REFER_REASONS), *_WRITES, "add_coverage[roster]",
             "link_gp", "add_contact[guardian]", "add_contact[next_of_kin]", "record_consent[self]",
             "record_consent[guardian]", "submit"),
    hyperparams=_HYPER,
    max_steps=MAX_STEPS,
    feature_policy=conclusions_policy,
)

FACTS = Tier(
    name="facts",
    features=(
        *_READ, "form.identifier_given", "form.identifier_valid", "form.phone_given", "form.payer_given",
        "form.member_id_given", "form.gp_given", "form.guardian_given", "form.kin_given", "form.address_evidence",
        *(f"slot[{i}].{n}" for i in range(N_SLOTS)
          for n in ("present", "family_equal", "given_equal", "given_variant", "swapped_family_equal", "swapped_given_equal",
                    "swapped_given_variant", "dob_equal", "dob_swapped", "identifier_equal", "active", "opened", "current")),
        "current.known", "current.created", "current.active", "current.age_years", "current.phone_equal_form",
        "current.address_equal_form", "current.address_verified", "current.coverage_card_id",
        *(f"current.coverage_roster_id[{j}]" for j in range(N_ROSTER)), "current.payer_coverages",
        "current.gp_linked_form_practice", "current.guardian_named_form", "current.kin_named_form", "current.consent_written",
        "card.checked", "card.valid", "card.family_equal_current", "card.dob_equal_current", "roster.checked",
        *(f"roster[{j}].{n}" for j in range(N_ROSTER) for n in ("present", "active", "given_equivalent_current")),
        "consents_written", "writes",
    ),
    actions=_tier_actions(("record_consent[guardian]",)),
    hyperparams={**_HYPER,
                 "timesteps": Hyper(600_000, "the slot-factored policy reaches its plateau within it"),
                 "policy": Hyper("slots", "one scorer for the search results and one for the roster members: the flat MLP "
                                          "stays far below the clone")},
    max_steps=MAX_STEPS,
    feature_policy=facts_policy,
    slot_actions={"get_patient": "slot", "add_coverage[roster]": "roster"},
)


def _date(prefix: str) -> tuple[str, ...]:
    return f"{prefix}.year", f"{prefix}.month", f"{prefix}.day"


RAW = Tier(
    name="raw",
    features=(
        *_READ, *_date("today"), "form.given", "form.family", *_date("form.dob"), "form.identifier_given", "form.phone",
        *(f"form.{k}" for k in ADDRESS_FIELDS), "form.evidence[address]", "form.payer_given", "form.member_id",
        "form.gp_given", "form.guardian", "form.next_of_kin",
        *(f"variants[{w}][{j}]" for w in ("given", "family") for j in range(N_VARIANTS)),
        *(n for i in range(N_SLOTS) for n in (
            f"slot[{i}].present", f"slot[{i}].given", f"slot[{i}].family", *_date(f"slot[{i}].dob"),
            f"slot[{i}].identifier_same_as_form", f"slot[{i}].status[active]", f"slot[{i}].status[deceased]",
            f"slot[{i}].opened", f"slot[{i}].is_current")),
        "current.known", "current.created", "current.status[active]", "current.given", "current.family",
        *_date("current.dob"), "current.phone", *(f"current.{k}" for k in ADDRESS_FIELDS), "current.verified[address]",
        "current.consents_written",
        *(f"coverage[{j}].{n}" for j in range(N_COVERAGES) for n in ("payer_is_form_payer", "member_id", "status[active]")),
        *(f"gp_link[{j}].{n}" for j in range(N_GP) for n in ("present", "practice_is_form_practice", "status[active]")),
        *(f"contact[{j}].{n}" for j in range(N_CONTACTS) for n in ("role[guardian]", "role[next_of_kin]", "name", "added")),
        "card.checked", "card.valid", *(f"card.reason[{r}]" for r in VERIFY_REASONS), "card.family", *_date("card.dob"),
        "roster.checked",
        *(f"roster[{j}].{n}" for j in range(N_ROSTER) for n in ("present", "member_id", "given", "status[active]")),
        "writes",
    ),
    actions=_tier_actions(tuple(f"record_consent[guardian][{j}]" for j in range(N_CONTACTS))),
    hyperparams={**_HYPER, **two_envs(1024)},
    max_steps=MAX_STEPS,
    feature_policy=raw_policy,
)

__all__ = ["CONCLUSIONS", "FACTS", "MAX_STEPS", "RAW"]
