"""The house rules of CONTRIBUTING.md, read from the code: imports point one way, there is no import cycle,
``models/`` never imports spaCy, ``analysis/`` never imports Streamlit, nothing outside ``cli/`` imports
``training/``, and no module-level mutable state is shared between modules.

Floors, lowest first (a module imports only from its own floor or lower ones): the top-level utilities,
then each package in ``FLOORS``. ``training`` sits beside the inference packages and only ``cli`` uses it.
Imports under ``if TYPE_CHECKING:`` are not run, so they count for direction but not for cycles.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spacy_contextual"
FLOORS = [
    {"models"},
    {"formats"},
    {"hub"},
    {"embedders"},
    {"corpus", "layers", "training"},
    {"pipeline"},
    {"analysis"},
    {"dashboard", "cli"},
]
TOP_LEVEL = 0  # types, errors, settings, writer, ...: below every package
ONLY_CLI_IMPORTS = {"training"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor(module: str) -> int:
    parts = module.split(".")
    if len(parts) < 3 and not (PACKAGE / parts[-1]).is_dir():  # spacy_contextual.errors, ...
        return TOP_LEVEL
    package = parts[1]
    return 1 + next(index for index, packages in enumerate(FLOORS) if package in packages)


def imports(path: Path) -> list[tuple[str, bool]]:
    """The package modules ``path`` imports, each with whether it is imported only for type checking."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [f"{target}.{alias.name}" for alias in node.names]
            for name in [target, *names]:  # a module, or a name in one (kept where it is a module)
                if name.startswith("spacy_contextual"):
                    found.append((name, id(node) in typing_only))
        elif isinstance(node, ast.Import):
            found += [(alias.name, id(node) in typing_only) for alias in node.names if alias.name.startswith("spacy_")]
    return found


def exists(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
NAMES = {name: imports(path) for name, path in MODULES.items()}  # modules and names in modules
GRAPH = {name: [(target, typing) for target, typing in found if exists(target)] for name, found in NAMES.items()}


def test_imports_point_one_way():
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target, _ in targets
        if floor(target) > floor(module) and not module.endswith("__main__")
    ]
    assert not upward, upward


def test_there_is_no_import_cycle():
    graph = {module: {target for target, typing in targets if not typing} for module, targets in GRAPH.items()}
    state: dict[str, int] = defaultdict(int)  # 0 unseen, 1 on the path, 2 done
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if target == module or (module.startswith(f"{target}.") and MODULES[target].name == "__init__.py"):
                continue  # a package's own __init__, run first by Python, is not a cycle of modules
            if state[target] == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif state[target] == 0:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if state[module] == 0:
            visit(module, [module])
    assert not cycles, cycles


def test_models_never_import_spacy_and_analysis_never_imports_streamlit():
    def third_party(path: Path) -> set[str]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level}
        return {name.split(".")[0] for name in names if name}

    assert not [m for m, p in MODULES.items() if ".models" in m and third_party(p) & {"spacy", "thinc"}]
    assert not [m for m, p in MODULES.items() if ".analysis" in m and "streamlit" in third_party(p)]


def test_only_the_command_line_imports_training():
    users = {
        module
        for module, targets in GRAPH.items()
        for target, _ in targets
        if target.split(".")[1:2] == ["training"] and module.split(".")[1:2] not in (["training"], ["cli"])
    }
    assert not users, users


def test_no_module_level_mutable_state_is_shared_between_modules():
    """Module-level state (a list, dict or set bound to a lower-case name, as UPPER_CASE names are constants,
    or a name that a function rebinds with ``global``) stays in its module: no other module imports it."""
    state = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        state |= {f"{module}.{name}" for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            value = getattr(node, "value", None)
            mutable = isinstance(value, (ast.List, ast.Dict, ast.Set)) or (
                isinstance(value, ast.Call) and ast.unparse(value.func) in {"list", "dict", "set", "defaultdict"}
            )
            state |= {
                f"{module}.{target.id}"
                for target in targets
                if mutable and isinstance(target, ast.Name) and not target.id.isupper()
            }
    assert state  # the check sees some (each private to its module)
    shared = [f"{module} imports {name}" for module, found in NAMES.items() for name, _ in found if name in state]
    assert not shared, shared


def room(module: str) -> str:
    """A top-level module, or the package a module is in (``spacy_contextual.models``)."""
    parts = module.split(".")
    return module if floor(module) == TOP_LEVEL else ".".join(parts[:2])


def test_contributing_states_the_structure_as_it_is():
    """CONTRIBUTING.md's numbers (modules, rooms, arrows between rooms) are today's, counted here."""
    root = "spacy_contextual"
    rooms = {room(module) for module in MODULES} - {root}
    arrows = {
        (room(module), room(target))
        for module, found in GRAPH.items()
        for target, _ in found
        if len({room(module), room(target), root}) == 3
    }
    text = " ".join((PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    stated = (
        f"{len(MODULES)} modules in {len(rooms)} rooms (the top-level modules and the packages) on "
        f"{len(FLOORS) + 1} floors, {len(arrows)} arrows between rooms"
    )
    assert stated in text
