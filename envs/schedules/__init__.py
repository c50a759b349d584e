"""The schedules domain (not built yet)."""
