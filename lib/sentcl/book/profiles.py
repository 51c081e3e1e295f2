"""The four profiles a chapter notebook runs in, and what each one means, in one place.

A profile is a set of parameter values (``notebooks/<chapter>.profiles.yaml``) and a policy, :class:`Profile`: the
data it reads, the STS-B test pairs a model's geometry is measured on, whether its results are judged against the
paper's, and how the book names it. Every module that checks or reads a profile asks :func:`policy` (a
ConfigError naming the profiles for an unknown one) or iterates :data:`PROFILES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class Profile:
    name: str
    words: str
    """How the book's answer names a build of this profile alone."""
    data: str
    """``"samples"``: always the project's sample data; ``"optional"``: a data root if given, else the sample data
    with a warning; ``"required"``: a real data root, or a ConfigError."""
    geometry_pairs: int
    """STS-B test pairs a model's geometry is measured on (0: all 1,379); the demo draws 500 with seed 0, about 100
    of them scored above 4, so that measuring every model of a chapter fits a laptop's budget; the rehearsal 200."""
    judged: bool = False
    """Whether its results are judged against the paper's (the paper's models on the paper's data)."""
    stand_in: bool = False
    """Whether it runs the paper's schedules on a tiny stand-in encoder (its numbers test the code, not the paper)."""


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("smoke", "the smoke profile (a test run)", data="samples", geometry_pairs=0),
    Profile("demo", "the demo profile (a miniature)", data="optional", geometry_pairs=500),
    Profile("rehearsal", "the rehearsal profile (the paper schedules on a tiny stand-in)", data="optional",
            geometry_pairs=200, stand_in=True),
    Profile("paper", "the paper profile", data="required", geometry_pairs=0, judged=True),
)}
"""Every profile by name, from the smallest run to the paper's."""
NAMES = tuple(PROFILES)


def policy(name: object, where: str = "") -> Profile:
    """The profile called ``name``; a ConfigError naming the profiles (and ``where`` it was given) otherwise."""
    found = PROFILES.get(name) if isinstance(name, str) else None
    if found is None:
        raise ConfigError(f"{where + ': ' if where else ''}unknown profile {name!r}; valid: {', '.join(NAMES)}")
    return found


__all__ = ["NAMES", "PROFILES", "Profile", "policy"]
