"""The four profiles a chapter notebook runs in, and what each one means, in one place.

A profile is a set of parameter values (``notebooks/<chapter>.profiles.yaml``) and a policy, :class:`Profile`: the
data it reads, the STS-B test pairs a model's geometry is measured on, whether its results are judged against the
paper's, and how the book names it. Every module that checks or reads a profile asks :func:`policy` (a
ConfigError naming the profiles for an unknown one) or iterates :data:`PROFILES`; the data root a run of a profile
reads is :func:`resolve_data`'s choice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..paths import data_root
from .redaction import describe_data


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


class SampleDataWarning(UserWarning):
    """A demo or paper run reads the project's sample data: its numbers mean nothing."""


@dataclass(frozen=True)
class DataChoice:
    """The data root a run reads, and whether it is the project's sample data."""

    root: Path
    sample: bool
    warning: str | None = None  # set exactly when the sample data stands in for the real data a profile names

    @property
    def samples_stand_in(self) -> bool:
        """Whether the sample data stands in for the real data the profile names (a demo without a data
        root, or a data root that is the sample data): the counts and sizes the profile expects do not
        hold. The smoke profile's own data is the sample data: False there."""
        return self.sample and self.warning is not None

    def describe(self) -> str:
        """The run's words for its data (no machine path: it goes into results files and onto pages)."""
        return describe_data(self.root, self.sample)


def resolve_data(profile: str, data_dir: str | os.PathLike | None = None) -> DataChoice:
    """The data root a profile runs on.

    ``smoke`` always reads ``data/samples``. ``demo`` and ``rehearsal`` read ``data_dir`` (or
    ``$SENTCL_DATA``) and, when neither is set, fall back to ``data/samples`` with a
    warning. ``paper`` requires a real data root.
    """
    from ..data.registry import SAMPLE_MARKER, samples_root

    reads = policy(profile).data
    if reads == "samples":
        return DataChoice(samples_root(), True)
    root = data_root(data_dir, required=False)
    if root is None:
        if reads == "required":
            raise ConfigError(
                f"the {profile} profile needs the real data: set the notebook parameter data_dir "
                "(papermill -p data_dir DIR), pass --data-dir DIR to sentcl reproduce, or set $SENTCL_DATA"
            )
        return DataChoice(
            samples_root(),
            True,
            "no data root (the notebook parameter data_dir, sentcl reproduce --data-dir, or $SENTCL_DATA): "
            f"the {profile} profile falls back to the project's "
            "sample data in data/samples, so its numbers say nothing about the papers",
        )
    if (root / SAMPLE_MARKER).exists() or root == samples_root().resolve():
        return DataChoice(root, True, f"the data root {root} is the project's sample data: its numbers say nothing about the papers")
    return DataChoice(root, False)


__all__ = ["NAMES", "PROFILES", "DataChoice", "Profile", "SampleDataWarning", "policy", "resolve_data"]
