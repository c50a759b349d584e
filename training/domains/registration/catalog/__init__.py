"""The registration catalog (``backoffice/Registration-Catalog-v0``): one desk (:mod:`.desk`), the
features (:mod:`.features`) and actions (:mod:`.actions`) of every tier, and the tiers
``conclusions``, ``facts`` and ``raw`` as declarations over them (:mod:`.tiers`)."""

from __future__ import annotations

from backoffice.training.catalog.tier import DomainCatalog
from backoffice.training.domains.registration.catalog.actions import ACTIONS
from backoffice.training.domains.registration.catalog.desk import RegistrationDesk
from backoffice.training.domains.registration.catalog.features import FEATURES
from backoffice.training.domains.registration.catalog.tiers import CONCLUSIONS, FACTS, RAW

CATALOG = DomainCatalog("registration", RegistrationDesk, FEATURES, ACTIONS, {"conclusions": CONCLUSIONS, "facts": FACTS, "raw": RAW})

__all__ = ["ACTIONS", "CATALOG", "CONCLUSIONS", "FACTS", "FEATURES", "RAW", "RegistrationDesk"]
