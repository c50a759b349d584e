"""One folder per domain: its policies (oracle, wrong, blind and rule-ignoring policies, exploit
hooks) and its catalog (desk, named features and actions, tiers). What every domain shares is
in :mod:`backoffice.training.policies` and :mod:`backoffice.training.catalog`."""
