"""The registration domain (not built yet)."""
