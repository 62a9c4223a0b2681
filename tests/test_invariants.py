"""The invariants of docs/extending.md that no other test pins: MindSpore-free imports, ops/ never importing
gan/, and the RNG purpose numbers every resumed run depends on."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, script_env


def imports_mindspore(module: str) -> bool:
    """Whether importing `module` in a fresh interpreter loads mindspore (the check runs there, not here)."""
    code = f"import sys, {module}; print('mindspore' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=script_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] == "True"


# gan/'s packages, lowest first: a module may import its own package and the packages before it, never one after
# (module level or inside a function). The first four import no MindSpore.
LAYERS = ("core", "config", "run", "analysis", "data", "models", "metrics", "diagnostics", "training")
MINDSPORE_FREE = LAYERS[:4]


def gan_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every gan.* import in a file, at any depth (module level or in a function); imports under
    `if TYPE_CHECKING:` name types for annotations only and never run, so they are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(n) for block in ast.walk(tree)
                 if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
                 for stmt in block.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("gan.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gan"):
            found += [(node.lineno, node.module if node.module != "gan" else f"gan.{a.name}") for a in node.names]
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def gan_graph() -> dict[str, set[str]]:
    """gan's modules and the gan modules each imports (a package import counts as its __init__)."""
    modules = {module_name(p): p for p in (REPO / "gan").rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for _, imported in gan_imports(path):
            while imported not in modules and "." in imported:  # `from gan.x.y import name`: name is no module
                imported = imported.rsplit(".", 1)[0]
            targets.add(imported)
        graph[name] = targets - {name}
    return graph


def test_gan_is_packages_in_layers() -> None:
    """Every module of gan/ sits in one of LAYERS (gan/probe_api.py, the earlier name of gan.diagnostics.api, aside)."""
    loose = [p.name for p in (REPO / "gan").glob("*.py") if p.name not in ("__init__.py", "probe_api.py")]
    assert not loose, f"modules outside gan's packages: {loose}"
    assert sorted(p.name for p in (REPO / "gan").iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)


def test_packages_import_only_packages_below() -> None:
    rank = {name: i for i, name in enumerate(LAYERS)}
    offenders = []
    for path in sorted((REPO / "gan").rglob("*.py")):
        parts = path.relative_to(REPO / "gan").parts
        if len(parts) < 2:
            continue
        for line, imported in gan_imports(path):
            target = imported.split(".")[1]
            if target in rank and rank[target] > rank[parts[0]]:
                offenders.append(f"gan/{'/'.join(parts)}:{line} ({parts[0]}) imports {imported} ({target})")
    assert not offenders, offenders


def test_no_import_cycles() -> None:
    """No cycle among gan's modules, function-level imports included: a cycle hidden inside a function still
    decides which import order works."""
    graph, state, cycles = gan_graph(), {}, []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(trail[trail.index(nxt):] + [node, nxt]) if nxt in trail
                              else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, trail + [node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, cycles


@pytest.mark.parametrize("package", [f"gan.{name}" for name in MINDSPORE_FREE])
def test_offline_packages_import_without_mindspore(package: str) -> None:
    """Every module of the package imported in a fresh interpreter loads no MindSpore: config, the run folder and
    the viewers work on a machine with only the offline dependencies."""
    modules = sorted(module_name(p) for p in (REPO / package.replace(".", "/")).rglob("*.py"))
    assert not imports_mindspore(", ".join(modules))


def test_ops_never_imports_gan() -> None:
    offenders = []
    for path in sorted((REPO / "ops").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(REPO)}:{node.lineno} imports {n}" for n in names
                          if n == "gan" or n.startswith("gan.")]
    assert not offenders, offenders


def sys_path_edits(path: Path) -> list[int]:
    """Lines of a file that change sys.path (sys.path.insert/append/extend, or an assignment to sys.path)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and ast.unparse(n.func.value) == "sys.path"]
    assigned = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(ast.unparse(t) == "sys.path" for t in n.targets)]
    return calls + assigned


def test_no_sys_path_edits() -> None:
    """Commands import the installed packages (or run as `python -m` from the repository root), never by patching
    sys.path. scripts/inspect_model.py adds the working directory on purpose: it imports the user's own model."""
    allowed = {"scripts/inspect_model.py"}
    files = [REPO / "train.py", *(p for top in ("gan", "ops", "scripts", "tools") for p in (REPO / top).rglob("*.py"))]
    offenders = [f"{p.relative_to(REPO)}:{line}" for p in sorted(files) if str(p.relative_to(REPO)) not in allowed
                 for line in sys_path_edits(p)]
    assert not offenders, offenders


def test_tiny_configs_come_from_conftest() -> None:
    """A test module builds on conftest's tiny configs (tiny_overrides, tiny_trainer, tiny_2d, ...) instead of
    declaring its own model size at module level; test_legacy_run's list is the committed run's own overrides."""
    allowed = {"tests/gan/test_legacy_run.py"}
    sizes = ("model.ngf=", "model.ndf=", "experiment=")
    offenders = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if str(path.relative_to(REPO)) in allowed:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and any(
                    isinstance(e, ast.Constant) and str(e.value).startswith(sizes) for e in node.value.elts):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, offenders


def test_rng_purpose_numbers_are_those_of_existing_runs() -> None:
    """Every random stream is default_rng([seed, step, purpose]): a changed or reused number changes every run of
    a seed and breaks bit-exact resume of runs already started. A new stream takes a new number."""
    from gan.core.streams import Purpose

    purposes = {"Z": 1, "FIXED_Z": 2, "INIT_G": 3, "INIT_D": 4, "EVAL_Z": 5, "GP_EPS": 6, "RECYCLE": 7,
                "CALIBRATION": 0x18, "POINTS": 0x2D0, "REAL_POINTS": 0x2D1, "EPOCH_ORDER": 0x0DA7A,
                "SHAPES": 0x5A9E5, "CLASSIFIER_INIT": 0x1A17, "CLASSIFIER_AUGMENT": 0xC1A55,
                "FID_Z": 8, "KID_DRAWS": 0x61D}
    assert {p.name: int(p) for p in Purpose} == purposes  # @unique: no number serves two streams
