"""A tier of my own: approvals' conclusions without the procedure's verdict, plus one fact.

    PYTHONPATH=docs/examples backoffice train --env approvals --tier my_tiers:NO_VERDICT --out runs/no-verdict
"""

from backoffice.training.catalog import Hyper
from backoffice.training.catalog.features import Feature
from backoffice.training.domains.approvals.catalog import CONCLUSIONS
from backoffice.training.domains.approvals.catalog.desk import ApprovalsDesk


def band_is_top(desk: ApprovalsDesk) -> float:
    """A feature is one function of the desk: what the agent has read so far."""
    band = desk.band()
    return float(band is not None and band["max_amount"] is None)


VERDICT = {"procedure_reject", "procedure_hold", "procedure_escalate", "procedure_proceed", "procedure_open"}

NO_VERDICT = CONCLUSIONS.derive(
    "no_verdict",
    features=(*(f for f in CONCLUSIONS.features if f not in VERDICT),
              Feature("band_is_top", "1 if the cited band has no upper bound", band_is_top)),
    hyperparams={**CONCLUSIONS.hyperparams, "timesteps": Hyper(100_000, "a first look")},
)
