"""What every generator shares: the retry loop around one attempt at a world.

A domain's generator draws a world, plants the trap of its defect tag, and checks that the world
says what the key says (no accidental second trap, no ambiguity the key does not name). A draw
that fails the check is redrawn from the next attempt's stream::

    def _attempt(seed: int, tag: str, attempt: int) -> Generated | None:
        rng = random.Random(derive_seed("my-domain", seed, attempt))
        ...
        return None if inconsistent else Generated(task, snapshot, key)

    generate = retrying(_attempt, DEFECT_TAGS, tries=50)

An attempt that takes a ``scale`` keyword (``_attempt(seed, tag, attempt, scale=1)``) gets the
world scale of ``generate(seed, tag, scale=k)``, checked here (an int >= 1); it must draw the task
and its scale-1 world before any row scale adds, so the scaled world holds the scale-1 one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from backoffice.envs.core.domain import Generated

Attempt = Callable[..., "Generated | None"]


def check_scale(scale: object) -> int:
    """``scale`` if it is an int >= 1 (``bool`` is not), else ``ValueError``."""
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an int >= 1, got {scale!r}")
    return scale


def retrying(attempt: Attempt, defect_tags: Sequence[str], tries: int = 50) -> Callable[..., Generated]:
    """``generate(seed, defect_tag, scale=1)`` that calls ``attempt(seed, tag, k)`` (with
    ``scale=`` when the attempt takes it) for ``k = 0, 1, ...`` until one returns a
    :class:`Generated` (at most ``tries`` times).

    Raises ``ValueError`` for an unknown tag or a bad scale (or a scale > 1 the attempt cannot
    draw) and ``RuntimeError`` when every attempt fails.
    Pure in its arguments as long as ``attempt`` is.
    """
    tags = tuple(defect_tags)
    scaled = "scale" in inspect.signature(attempt).parameters

    def generate(seed: int, defect_tag: str, scale: int = 1) -> Generated:
        if defect_tag not in tags:
            raise ValueError(f"unknown defect tag {defect_tag!r}; choose from {', '.join(tags)}")
        check_scale(scale)
        if not scaled and scale != 1:
            raise ValueError("this generator draws no larger worlds (its attempt takes no scale)")
        extra = {"scale": scale} if scale != 1 else {}  # scale 1: the attempt's own default
        for k in range(tries):
            gen = attempt(seed, defect_tag, k, **extra)
            if gen is not None:
                return gen
        raise RuntimeError(f"could not generate a {defect_tag} task from seed {seed} in {tries} attempts")

    generate.__doc__ = attempt.__doc__ or "One task whose trap is ``defect_tag`` (pure in its arguments)."
    generate.__name__ = "generate"
    return generate
