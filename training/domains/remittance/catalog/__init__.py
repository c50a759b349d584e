"""The remittance catalog (``backoffice/Remittance-Catalog-v0``): one desk (:mod:`.desk`), the
features (:mod:`.features`) and actions (:mod:`.actions`) of every tier, and the tiers
``conclusions``, ``facts`` and ``raw`` as declarations over them (:mod:`.tiers`)."""

from __future__ import annotations

from backoffice.training.catalog.tier import DomainCatalog
from backoffice.training.domains.remittance.catalog.actions import ACTIONS
from backoffice.training.domains.remittance.catalog.desk import RemittanceDesk
from backoffice.training.domains.remittance.catalog.features import FEATURES
from backoffice.training.domains.remittance.catalog.tiers import CONCLUSIONS, FACTS, RAW

CATALOG = DomainCatalog("remittance", RemittanceDesk, FEATURES, ACTIONS, {"conclusions": CONCLUSIONS, "facts": FACTS, "raw": RAW})

__all__ = ["ACTIONS", "CATALOG", "CONCLUSIONS", "FACTS", "FEATURES", "RAW", "RemittanceDesk"]
