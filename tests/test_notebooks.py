"""The notebooks in notebooks/: committed without outputs, and each one runs end to end.

Every notebook is executed with nbclient in a fresh kernel running this
interpreter, with the notebooks folder as working directory and the model hubs
offline; any cell that raises fails the test. The semantic notebook loads the
embedding model, so it is marked slow.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is a dev dependency")
nbclient = pytest.importorskip("nbclient", reason="nbclient is a dev dependency")
pytest.importorskip("ipykernel", reason="ipykernel is a dev dependency")

from nbclient.exceptions import CellExecutionError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SLOW_NOTEBOOKS = frozenset({"03_comparing_methods.ipynb"})
CELL_TIMEOUT_S = 300
MIN_NOTEBOOKS = 4


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def output_problems(nb: nbformat.NotebookNode) -> list[str]:
    """Why a notebook is not commit-ready: code cells with outputs or execution counts."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            problems.append(f"cell {i} has {len(cell.outputs)} output(s)")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {i} has execution_count {cell.execution_count}")
    return problems


def kernel_env(cache_dir: Path) -> dict[str, str]:
    """The kernel's environment: offline hubs and a private embedding cache."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "RANKLENS_CACHE_DIR": str(cache_dir),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def execute(nb: nbformat.NotebookNode, kernel_name: str, env: dict[str, str]) -> None:
    """Run every cell in a fresh kernel with cwd = notebooks/; raises CellExecutionError on an error."""
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout=CELL_TIMEOUT_S,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute(env=env)


@pytest.fixture(scope="session")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernel spec that starts this interpreter.

    ``python3`` when it resolves to ``sys.executable`` (jupyter_client swaps a
    bare ``python`` for the launching interpreter); otherwise a spec installed
    into a temporary prefix and put on ``JUPYTER_PATH`` for the session.
    """
    from jupyter_client.kernelspec import NoSuchKernel
    from jupyter_client.manager import KernelManager

    try:
        cmd = KernelManager(kernel_name="python3").format_kernel_cmd()
    except NoSuchKernel:
        cmd = []
    if cmd and os.path.abspath(cmd[0]) == os.path.abspath(sys.executable):
        yield "python3"
        return
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("kernels")
    name = "ranklens-notebook-tests"
    install(kernel_name=name, prefix=str(prefix))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(
            "JUPYTER_PATH",
            os.pathsep.join(
                p for p in (str(prefix / "share" / "jupyter"), os.environ.get("JUPYTER_PATH")) if p
            ),
        )
        yield name


def test_there_are_at_least_four_notebooks() -> None:
    names = [p.name for p in notebook_paths()]
    assert len(names) >= MIN_NOTEBOOKS, names
    assert set(names) >= SLOW_NOTEBOOKS, f"{sorted(SLOW_NOTEBOOKS - set(names))} missing from {names}"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert output_problems(nb) == [], f"{path.name}: strip outputs before committing"


def test_output_check_catches_outputs_and_counts() -> None:
    cell = nbformat.v4.new_code_cell("1 + 1", execution_count=3)
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"), cell])
    assert output_problems(nb) == ["cell 1 has 1 output(s)", "cell 1 has execution_count 3"]


def test_kernel_runs_this_interpreter_in_the_notebooks_folder(kernel_name: str, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import os, sys\nprint(sys.executable)\nprint(os.getcwd())")]
    )
    execute(nb, kernel_name, kernel_env(tmp_path))
    lines = nb.cells[0].outputs[0].text.splitlines()
    assert [os.path.abspath(lines[0]), lines[1]] == [os.path.abspath(sys.executable), str(NOTEBOOKS)]


def test_a_failing_cell_fails_the_run(kernel_name: str, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("raise ValueError('broken notebook')"),
            nbformat.v4.new_code_cell("y = 2"),
        ]
    )
    with pytest.raises(CellExecutionError, match="broken notebook"):
        execute(nb, kernel_name, kernel_env(tmp_path))


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW_NOTEBOOKS else [])
        for p in notebook_paths()
    ],
)
def test_notebook_runs(path: Path, kernel_name: str, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    execute(nb, kernel_name, kernel_env(tmp_path / "cache"))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
