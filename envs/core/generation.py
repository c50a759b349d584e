"""What every generator shares: the retry loop around one attempt at a world.

A domain's generator draws a world, plants the trap of its defect tag, and checks that the world
says what the key says (no accidental second trap, no ambiguity the key does not name). A draw
that fails the check is redrawn from the next attempt's stream::

    def _attempt(seed: int, tag: str, attempt: int) -> Generated | None:
        rng = random.Random(derive_seed("my-domain", seed, attempt))
        ...
        return None if inconsistent else Generated(task, snapshot, key)

    generate = retrying(_attempt, DEFECT_TAGS, tries=50)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from backoffice.envs.core.domain import Generated

Attempt = Callable[[int, str, int], "Generated | None"]


def retrying(attempt: Attempt, defect_tags: Sequence[str], tries: int = 50) -> Callable[[int, str], Generated]:
    """``generate(seed, defect_tag)`` that calls ``attempt(seed, tag, k)`` for ``k = 0, 1, ...``
    until one returns a :class:`Generated` (at most ``tries`` times).

    Raises ``ValueError`` for an unknown tag and ``RuntimeError`` when every attempt fails.
    Pure in its arguments as long as ``attempt`` is.
    """
    tags = tuple(defect_tags)

    def generate(seed: int, defect_tag: str) -> Generated:
        if defect_tag not in tags:
            raise ValueError(f"unknown defect tag {defect_tag!r}; choose from {', '.join(tags)}")
        for k in range(tries):
            gen = attempt(seed, defect_tag, k)
            if gen is not None:
                return gen
        raise RuntimeError(f"could not generate a {defect_tag} task from seed {seed} in {tries} attempts")

    generate.__doc__ = attempt.__doc__ or "One task whose trap is ``defect_tag`` (pure in its arguments)."
    generate.__name__ = "generate"
    return generate
