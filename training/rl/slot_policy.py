"""A slot-factored MaskablePPO policy: one scorer shared by the slots of an entity list.

Catalog tiers that leave a choice among listed entities to the agent (the approver's rows in
approvals, the search hits in remittance, the search results in registration) give each entity a
*slot*: features ``<group>[i].<name>`` and actions ``<family>[i]``. A flat MLP policy learns every
slot's features and every ``<family>[i]`` logit with its own weights, so a rule learnt for row 0
(cite the row whose role covers the request and is in effect) has to be learnt again for row 3,
from the few train tasks where the right row sits there. This policy shares them, as
entity-based policies do (pointer-style target selection):

- each slot ``i`` of group ``g`` is encoded by one MLP ``phi_g`` (the same weights for every
  slot): ``e[g, i] = phi_g(x[g, i])``;
- the trunk reads the features that belong to no slot and the sum over slots of each group's
  encodings (a set summary: counts and "is there a slot with ..." are sums): ``h``; a group no
  action picks from (``slot_sets``: the listed payments of remittance, the requirements of a
  sufficiency case) also enters it slot by slot, in order;
- a non-slot action's logit is a linear function of ``h``; a slot action's logit
  ``<family>[i]`` is one linear function per family of ``[h, e[g, i]]``, the same for every ``i``;
- the value is an MLP over the same trunk input.

The catalog names the slots (:func:`slot_layout` reads them from feature and action names, given
the spec's ``slot_actions``: action family -> feature group). Nothing about the task is added:
the policy sees exactly the catalog's observation and mask. A ``bias`` vector over all actions
(zero at start) keeps ``finish_bias`` working as for the flat head.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

#: width of a slot's encoding
SLOT_DIM = 32
_SLOT_FEATURE = re.compile(r"^(\w+)\[(\d+)\]\.(.+)$")
_SLOT_ACTION = re.compile(r"^(.+)\[(\d+)\]$")


def slot_layout(features: Sequence[str], actions: Sequence[str], slot_actions: Mapping[str, str],
                slot_sets: Sequence[str] = ()) -> dict[str, Any]:
    """The policy's ``slots`` argument from the catalog's feature and action names:
    ``groups``: group -> per slot, the indices of its features (the same names in the same order
    for every slot); ``families``: group -> per family, its action index per slot (-1: no such
    slot action). ``slot_sets`` are groups encoded the same way that no action picks from (they
    enter the trunk's set summary only). Raises ``ValueError`` if the slots of a group do not have
    the same features or a family names an unknown group."""
    by_group: dict[str, dict[int, dict[str, int]]] = {}
    for j, name in enumerate(features):
        m = _SLOT_FEATURE.match(name)
        if m:
            by_group.setdefault(m[1], {}).setdefault(int(m[2]), {})[m[3]] = j
    used = sorted(set(slot_actions.values()) | set(slot_sets))
    groups: dict[str, list[list[int]]] = {}
    for g in used:
        if g not in by_group:
            raise ValueError(f"no features of slot group {g!r}")
        slots = by_group[g]
        n = max(slots) + 1
        names = sorted(slots[0])
        if any(sorted(slots.get(i, {})) != names for i in range(n)):
            raise ValueError(f"the slots of group {g!r} do not all have the same features")
        groups[g] = [[slots[i][k] for k in names] for i in range(n)]
    families: dict[str, list[list[int]]] = {g: [] for g in used}
    fam_index: dict[str, dict[int, int]] = {}
    for a, name in enumerate(actions):
        m = _SLOT_ACTION.match(name)
        if m and m[1] in slot_actions:
            fam_index.setdefault(m[1], {})[int(m[2])] = a
    for fam in sorted(slot_actions):
        g = slot_actions[fam]
        if fam not in fam_index:
            raise ValueError(f"no actions of family {fam!r}")
        if max(fam_index[fam]) >= len(groups[g]):
            raise ValueError(f"family {fam!r} has more slots than group {g!r}")
        families[g].append([fam_index[fam].get(i, -1) for i in range(len(groups[g]))])
    return {"groups": groups, "families": families}


def _mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.Tanh()]
    return nn.Sequential(*layers)


class SlotExtractor(nn.Module):
    """The trunk: slot encoders, the set summary, the policy and value MLPs. ``forward`` returns
    ``(latent_pi, latent_vf)`` with ``latent_pi = [h, e[g, i] for every group and slot]``."""

    global_idx: torch.Tensor

    def __init__(self, n_features: int, net_arch: Sequence[int], slots: Mapping[str, Any]):
        super().__init__()
        groups: Mapping[str, list[list[int]]] = slots["groups"]
        self.group_names = list(groups)
        # a group no action picks from enters the trunk in order too (its i-th slot may mean
        # something: the i-th requirement of a case), beside the sum
        self.whole = [g for g in self.group_names if not slots["families"].get(g)]
        in_slot = {j for g in groups.values() for slot in g for j in slot}
        self.register_buffer("global_idx", torch.tensor([j for j in range(n_features) if j not in in_slot], dtype=torch.long))
        for g, idx in groups.items():
            self.register_buffer(f"idx_{g}", torch.tensor(idx, dtype=torch.long))
        self.encoders = nn.ModuleDict({g: _mlp([len(idx[0]), SLOT_DIM, SLOT_DIM]) for g, idx in groups.items()})
        trunk_in = int(self.global_idx.numel()) + SLOT_DIM * (len(groups) + sum(len(groups[g]) for g in self.whole))
        self.policy_net = _mlp([trunk_in, *net_arch])
        self.value_net = _mlp([trunk_in, *net_arch])
        self.h_dim = net_arch[-1] if net_arch else trunk_in
        self.n_slots = [len(idx) for idx in groups.values()]
        self.latent_dim_pi = self.h_dim + SLOT_DIM * sum(self.n_slots)
        self.latent_dim_vf = self.h_dim

    def _buffer(self, name: str) -> torch.Tensor:
        out = getattr(self, name)
        assert isinstance(out, torch.Tensor)
        return out

    def _trunk(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        enc = [self.encoders[g](x[:, self._buffer(f"idx_{g}")]) for g in self.group_names]  # (B, N_g, E)
        whole = [e.flatten(1) for g, e in zip(self.group_names, enc, strict=True) if g in self.whole]
        trunk = torch.cat([x[:, self.global_idx], *(e.sum(dim=1) for e in enc), *whole], dim=1)
        return trunk, enc

    def _latent_pi(self, trunk: torch.Tensor, enc: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat([self.policy_net(trunk), *(e.flatten(1) for e in enc)], dim=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        trunk, enc = self._trunk(x)
        return self._latent_pi(trunk, enc), self.value_net(trunk)

    def forward_actor(self, x: torch.Tensor) -> torch.Tensor:
        return self._latent_pi(*self._trunk(x))

    def forward_critic(self, x: torch.Tensor) -> torch.Tensor:
        return self.value_net(self._trunk(x)[0])


class SlotHead(nn.Module):
    """Logits from ``[h, e]``: a linear map of ``h`` for the non-slot actions, one shared linear
    map of ``[h, e[g, i]]`` per slot family, plus ``bias`` (all actions)."""

    flat_idx: torch.Tensor

    def __init__(self, h_dim: int, n_actions: int, slots: Mapping[str, Any]):
        super().__init__()
        groups: Mapping[str, list[list[int]]] = slots["groups"]
        families: Mapping[str, list[list[int]]] = slots["families"]
        self.h_dim = h_dim
        self.group_names = list(groups)
        self.n_slots = [len(groups[g]) for g in self.group_names]
        slot_actions = {a for g in self.group_names for fam in families[g] for a in fam if a >= 0}
        flat = [a for a in range(n_actions) if a not in slot_actions]
        self.register_buffer("flat_idx", torch.tensor(flat, dtype=torch.long))
        self.flat = nn.Linear(h_dim, len(flat), bias=False)
        self.scorers = nn.ModuleDict()
        self.scored = [g for g in self.group_names if families[g]]
        for g in self.scored:
            fam = torch.tensor(families[g], dtype=torch.long).T  # (N_g, F_g): action per slot and family
            self.register_buffer(f"act_{g}", fam)
            self.scorers[g] = nn.Linear(h_dim + SLOT_DIM, fam.shape[1], bias=False)
        self.bias = nn.Parameter(torch.zeros(n_actions))
        self.n_actions = n_actions

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        b = latent.shape[0]
        h = latent[:, : self.h_dim]
        logits = latent.new_zeros(b, self.n_actions + 1)  # the last column takes the absent (-1) slot actions
        logits[:, self.flat_idx] = self.flat(h)
        start = self.h_dim
        for g, n in zip(self.group_names, self.n_slots, strict=True):
            e = latent[:, start : start + n * SLOT_DIM].reshape(b, n, SLOT_DIM)
            start += n * SLOT_DIM
            if g not in self.scorers:
                continue
            scores = self.scorers[g](torch.cat([h.unsqueeze(1).expand(b, n, self.h_dim), e], dim=2))  # (B, N_g, F_g)
            act = getattr(self, f"act_{g}")
            assert isinstance(act, torch.Tensor)
            logits[:, act.flatten()] = scores.flatten(1)
        return logits[:, : self.n_actions] + self.bias


class SlotPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with the slot-factored trunk and head (module docstring);
    ``slots`` is :func:`slot_layout`'s result."""

    def __init__(self, *args: Any, slots: Mapping[str, Any], **kwargs: Any):
        self.slots = dict(slots)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch if isinstance(self.net_arch, list) else list(self.net_arch.get("pi", [64, 64]))
        self.mlp_extractor = SlotExtractor(self.features_dim, arch, self.slots)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        extractor = self.mlp_extractor
        assert isinstance(extractor, SlotExtractor)
        head = SlotHead(extractor.h_dim, int(self.action_space.n), self.slots)  # type: ignore[attr-defined]
        if self.ortho_init:
            head.apply(lambda m: self.init_weights(m, gain=0.01))
        self.action_net = head
        # as SB3's _build does, now over the head's parameters
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "slots": self.slots}


__all__ = ["SLOT_DIM", "SlotExtractor", "SlotHead", "SlotPolicy", "slot_layout"]
