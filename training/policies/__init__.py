"""Policies: oracle, random and wrong policies per domain."""
