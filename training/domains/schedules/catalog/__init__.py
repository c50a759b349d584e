"""The schedules catalog (``backoffice/Schedules-Catalog-v0``): one desk (:mod:`.desk`), the
features (:mod:`.features`) and actions (:mod:`.actions`) of every tier, and the tiers
``conclusions``, ``facts`` and ``raw`` as declarations over them (:mod:`.tiers`)."""

from __future__ import annotations

from backoffice.training.catalog.tier import DomainCatalog
from backoffice.training.domains.schedules.catalog.actions import ACTIONS
from backoffice.training.domains.schedules.catalog.desk import ScheduleDesk
from backoffice.training.domains.schedules.catalog.features import FEATURES
from backoffice.training.domains.schedules.catalog.tiers import CONCLUSIONS, FACTS, RAW

CATALOG = DomainCatalog("schedules", ScheduleDesk, FEATURES, ACTIONS, {"conclusions": CONCLUSIONS, "facts": FACTS, "raw": RAW})

__all__ = ["ACTIONS", "CATALOG", "CONCLUSIONS", "FACTS", "FEATURES", "RAW", "ScheduleDesk"]
