"""Reinforcement learning on the catalog envs. A run reads top to bottom in ``train``; the rest
are its parts: ``config`` (``TrainConfig``, which is also ``backoffice train``'s options),
``envs`` (the learner's envs), ``curriculum`` (greedy-failure task sampling), ``callbacks``
(validation, early stopping), ``plots`` (the learning curve), ``demos`` (demonstrations,
behaviour cloning, the tree baseline), ``sb3_policy`` and ``slot_policy`` (trained models as
policies, the slot-factored network) and ``results`` (the README's results table)."""
