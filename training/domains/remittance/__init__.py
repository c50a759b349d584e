"""The remittance domain's policies and catalog (see :mod:`backoffice.training.domains`)."""
