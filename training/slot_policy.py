"""The import path that trained models pickled their policy class under: models saved before the
package was split by concern (``policy="slots"``) name ``backoffice.training.slot_policy.SlotPolicy``.
The class lives in :mod:`backoffice.training.rl.slot_policy`."""

from backoffice.training.rl.slot_policy import SlotPolicy

__all__ = ["SlotPolicy"]
