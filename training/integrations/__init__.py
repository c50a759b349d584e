"""Adapters from backoffice-gym to third-party training and evaluation libraries.

Each adapter is built on :class:`backoffice.training.session.Session` (one episode, its tools,
its final-only grade) and imports its library lazily, so importing this package costs nothing:

- :mod:`backoffice.training.integrations.trl`: a tool-environment class for TRL's
  ``GRPOTrainer(environment_factory=...)`` with one typed, docstringed method per domain tool.
"""
