"""The sufficiency domain (not built yet)."""
