"""The approvals domain (not built yet)."""
