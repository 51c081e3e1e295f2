"""The shared validators (sentcl.errors.check_*): one wording for every invalid option."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import pytest

import sentcl
from sentcl import errors
from sentcl.errors import ConfigError, SentclError, check_choice, check_number, check_positive_int


def test_the_library_raises_only_its_typed_errors():
    typed = {name for name, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, SentclError)}
    # argparse's type= functions must raise ArgumentTypeError; `python -m sentcl.data.samples` exits;
    # parameters.unknown_parameter builds a ConfigError with a did-you-mean hint; a module's __getattr__ (PEP 562: a
    # package's lazily imported names) must raise AttributeError for a name it lacks
    allowed = typed | {"argparse.ArgumentTypeError", "SystemExit", "unknown_parameter"}
    for path in Path(sentcl.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        raised = set(re.findall(r"raise ([\w.]+)\(", text))
        assert raised <= allowed | ({"AttributeError"} if "\ndef __getattr__(name: str)" in text else set()), \
            (str(path), raised - allowed)


def test_check_choice():
    assert check_choice("pooling", "mean", ("mean", "cls")) == "mean"
    with pytest.raises(ConfigError, match=r"^unknown pooling 'max'; choose one of mean, cls$"):
        check_choice("pooling", "max", ("mean", "cls"))


@pytest.mark.parametrize("value", [0.0, -1, math.inf, math.nan, True, "1", None])
def test_check_number_refuses_what_is_outside_or_not_a_number(value):
    with pytest.raises(ConfigError, match=r"^scale must be a number in \(0\.0, inf\), got"):
        check_number("scale", value, low=0.0, low_open=True)


def test_check_number_bounds():
    assert check_number("ratio", 1, low=0.0, high=1.0) == 1.0 and isinstance(check_number("x", 3), float)
    assert check_number("ratio", 0.0, low=0.0, high=1.0) == 0.0
    with pytest.raises(ConfigError, match=r"ratio must be a number in \[0\.0, 1\.0\], got 1\.5"):
        check_number("ratio", 1.5, low=0.0, high=1.0)


def test_check_positive_int():
    assert check_positive_int("steps", 3) == 3 and check_positive_int("steps", None, optional=True) is None
    for bad in (0, -2, 1.0, True, None):
        with pytest.raises(ConfigError, match="steps must be a positive integer"):
            check_positive_int("steps", bad)
