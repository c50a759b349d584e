"""The remittance domain (not built yet)."""
