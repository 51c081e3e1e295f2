"""How sentcl reaches a notebook's machine (sentcl.book.build.install): the repository's address set in
one place, the install cell derived from it, the placeholder never published, the wheel beside
the book's pages."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

from sentcl.book.build import install, site
from sentcl.errors import ConfigError, SentclError

ROOT = Path(__file__).resolve().parents[2]


def test_the_repository_address_is_set_in_one_place():
    """pyproject's [project.urls] Repository; the install cells and the README derive from it, the
    book's configuration holds none of its own."""
    repository = install.project_urls(ROOT)["Repository"]
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cell = install.install_cell_of(nbformat.read(path, as_version=4), path)
        assert install.cell_source(cell.source) == install.git_source(repository), path.name
    readme = (ROOT / "README.md").read_text()
    assert install.git_source(repository) in readme
    assert set(re.findall(r"git\+https://[^\s\"']+", readme)) == {install.git_source(repository)}  # every install command
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "url" not in config["repository"]


def test_the_install_cell_round_trips_its_source():
    cell = install.install_cell("git+https://example.org/a/sentcl")
    assert install.cell_source(cell) == "git+https://example.org/a/sentcl"
    moved = install.with_source(cell, "sentcl-0.1.0-py3-none-any.whl")
    assert install.cell_source(moved) == "sentcl-0.1.0-py3-none-any.whl" and moved.count("\n") == cell.count("\n")
    assert install.cell_source("print(1)") is None
    with pytest.raises(ConfigError, match="not an install cell"):
        install.with_source("print(1)", "x")


def checkout_copy(tmp_path: Path, urls: str | None = None) -> Path:
    """A copy of what set_repository and the book build read: pyproject (with ``urls`` as its
    [project.urls] table), README, notebooks, book sources; the library, data and pins linked."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("README.md", "_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, tree / name)
    text = (ROOT / "pyproject.toml").read_text()
    if urls is not None:
        text = re.sub(r'^Repository = "[^"]*"$', urls, text, count=1, flags=re.M)
    (tree / "pyproject.toml").write_text(text)
    shutil.copytree(ROOT / "notebooks", tree / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    shutil.copytree(ROOT / "book", tree / "book", ignore=shutil.ignore_patterns("_vendor", "_generated"))
    (tree / "book" / "_vendor").symlink_to(ROOT / "book" / "_vendor", target_is_directory=True)
    for part in ("lib", "data", "requirements"):
        (tree / part).symlink_to(ROOT / part, target_is_directory=True)
    (tree / "benchmarks").mkdir()
    (tree / "benchmarks" / "results").symlink_to(ROOT / "benchmarks" / "results", target_is_directory=True)
    return tree


def test_set_repository_rewrites_everything_that_derives_from_it(tmp_path):
    tree = checkout_copy(tmp_path)
    url = "https://github.com/someone/sentcl"
    changed = install.set_repository(tree, url + "/")
    assert {p.name for p in changed} == {"pyproject.toml", "README.md"} | {p.name for p in (tree / "notebooks").glob("*.ipynb")}
    assert install.repository_url(tree) == url
    for path in sorted((tree / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert install.install_cell_of(nb, path).source == install.install_cell(f"git+{url}")
    readme = (tree / "README.md").read_text()
    assert f"git+{url}" in readme and "OWNER" not in readme
    assert install.set_repository(tree, url) == []  # set already: nothing rewritten
    with pytest.raises(ConfigError, match="expected an https:// URL"):
        install.set_repository(tree, "github.com/someone/sentcl")


@pytest.mark.parametrize(
    ("urls", "expected"),
    [
        ('[project.urls]\nRepository = "https://github.com/OWNER/sentcl"', None),
        ('[project.urls]\nRepository = "https://github.com/OWNER/sentcl-fork/"', None),
        ("", None),
        ('[project.urls]\nRepository = "https://github.com/someone/sentcl/"', "https://github.com/someone/sentcl"),
    ],
)
def test_the_placeholder_is_no_address(tmp_path, urls, expected):
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "sentcl"\nversion = "0.1.0"\n{urls}\n')
    assert install.repository_url(tmp_path) == expected


@pytest.mark.parametrize(
    ("urls", "expected"),
    [
        ('Repository = "https://github.com/OWNER/sentcl"', "sentcl-{version}-py3-none-any.whl"),
        ('Repository = "https://github.com/someone/sentcl"', "git+https://github.com/someone/sentcl"),
        ('Repository = "https://github.com/someone/sentcl"\nDocumentation = "https://someone.example/sentcl/"',
         "https://someone.example/sentcl/_static/sentcl-{version}-py3-none-any.whl"),
    ],
)
def test_the_books_notebooks_install_from_its_address_else_the_repository_else_the_wheel(tmp_path, urls, expected):
    tree = checkout_copy(tmp_path, urls)
    version = install._project(tree)["version"]
    assert install.book_source(tree) == expected.format(version=version)


def staged_config(src: Path) -> dict:
    return yaml.safe_load((src / "_config.yml").read_text())


@pytest.mark.slow
def test_a_book_staged_with_the_placeholder_has_no_colab_buttons_and_says_so(mathjax, tmp_path, capsys):
    src = site.stage(ROOT, tmp_path / "out")
    config = staged_config(src)
    assert "launch_buttons" not in config and "url" not in config.get("repository", {})
    err = capsys.readouterr().err
    assert re.search(r"^sentcl: WARNING: .*\[project\.urls\] Repository is the placeholder .*no Colab buttons", err, re.M)
    assert len([line for line in err.splitlines() if "placeholder" in line]) == 1
    wheel = src / "book" / install.WHEEL_FOLDER / install.wheel_name(ROOT)
    assert wheel.is_file()  # beside the pages: Sphinx copies book/_static into the HTML's _static
    section = (src / "book" / "_generated" / "install.md").read_text()
    assert f'href="../_static/{wheel.name}"' in section and "no Colab button" in section and "OWNER" not in section


@pytest.mark.slow
def test_a_book_staged_with_an_address_has_its_buttons_and_installs_from_it(mathjax, tmp_path, capsys):
    urls = 'Repository = "https://github.com/someone/sentcl"\nDocumentation = "https://someone.example/sentcl"'
    tree = checkout_copy(tmp_path, urls)
    out = tmp_path / "out"
    executed = out / "notebooks" / "bsc.ipynb"
    executed.parent.mkdir(parents=True)
    shutil.copy2(tree / "notebooks" / "bsc.ipynb", executed)  # as if it had run
    src = site.stage(tree, out)
    config = staged_config(src)
    assert config["repository"]["url"] == "https://github.com/someone/sentcl"
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert "placeholder" not in capsys.readouterr().err
    staged = nbformat.read(src / "notebooks" / "bsc.ipynb", as_version=4)
    wheel_url = f"https://someone.example/sentcl/_static/{install.wheel_name(tree)}"
    assert install.cell_source(install.install_cell_of(staged, executed).source) == wheel_url
    assert executed.read_bytes() == (tree / "notebooks" / "bsc.ipynb").read_bytes()  # the executed notebook itself is untouched
    section = (src / "book" / "_generated" / "install.md").read_text()
    assert "git+https://github.com/someone/sentcl" in section and wheel_url in section


# --------------------------------------------------------------------------- the dependencies, as locked


def test_the_lock_constraints_pin_everything_but_the_runtimes_torch():
    lock = (ROOT / "requirements" / "lock.txt").read_text()
    pins = install.lock_constraints(lock)
    assert "transformers==" + re.search(r"^transformers==(\S+)$", lock, re.M).group(1) in pins
    assert not [p for p in pins if p.startswith(("torch==", "triton", "nvidia-"))]
    assert len(pins) == len(re.findall(r"^\S+==\S+$", lock, re.M)) - 1  # every pin but torch's
    with pytest.raises(ConfigError, match="expected name==version lines, found 'numpy>=1'"):
        install.lock_constraints("numpy>=1\n")


class _Pip:
    """A stand-in for subprocess.run recording pip's commands; the first ``fail`` of them fail."""

    def __init__(self, fail: int):
        self.commands: list[list[str]] = []
        self.fail = fail

    def __call__(self, command):
        self.commands.append(list(command))
        return subprocess.CompletedProcess(command, 1 if len(self.commands) <= self.fail else 0)


def test_install_dependencies_pins_the_lock_and_keeps_torch(capsys):
    import importlib.metadata

    pip = _Pip(fail=0)
    install.install_dependencies(run=pip)
    [command] = pip.commands
    torch = f"torch=={importlib.metadata.version('torch')}"
    assert command[-2] == "-c" and f"sentcl[{install.EXTRAS}]" in command and torch in command
    assert capsys.readouterr().err == ""


def test_where_the_runtime_cannot_take_the_pins_it_says_so_and_lets_pip_choose(capsys):
    pip = _Pip(fail=1)
    install.install_dependencies(run=pip)
    assert len(pip.commands) == 2 and "-c" in pip.commands[0] and "-c" not in pip.commands[1]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot take the lock's pinned versions" in err
    with pytest.raises(SentclError, match=r"^sentcl's dependencies could not be installed: pip exited with status 1"):
        install.install_dependencies(run=_Pip(fail=2))


def test_the_install_cell_names_the_wheel_command_and_make_wheel_exists():
    assert "`make wheel`" in install.INSTALL_INSTRUCTION and "dist/sentcl-<version>-py3-none-any.whl" in install.INSTALL_INSTRUCTION
    assert re.search(r"^wheel: .*\n\t\$\(BIN\)/sentcl wheel --out dist$", (ROOT / "Makefile").read_text(), re.M)
