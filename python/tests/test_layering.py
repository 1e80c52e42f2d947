"""The import rules of the trainer-side package (python/src/searcher_rl_trainers; the rules are stated
in its __init__ docstring), read from the source with `ast`, lazy imports inside functions included:

- no module imports pytest or a test helper (python/testing, python/tests*);
- `connection` imports the standard library only, and `__init__` imports nothing;
- a trainer family imports `connection` and its own modules, another family's only along `CROSS_FAMILY`;
- a family imports only the trainer SDKs of its own install extra (pyproject's optional-dependencies).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

PYTHON = Path(__file__).resolve().parents[1]
PACKAGE_NAME = "searcher_rl_trainers"
PACKAGE = PYTHON / "src" / PACKAGE_NAME
SHARED = {"connection"}
# Families by module-name prefix (`verl_loop` -> verl); the few names without one, listed.
FAMILY_PREFIXES = ("openenv", "ws", "trl", "verl", "skyrl")
FAMILY_OF = {"train_trl": "trl"}
# The only imports from one family into another, each exactly: (importing family, imported module).
# TRL's environments and rollouts are openenv-core clients, with that glue's fresh sessions and retries.
CROSS_FAMILY = {("trl", "openenv_glue")}
# Distribution names whose import name differs.
IMPORT_NAME = {"openenv-core": "openenv", "skyrl-gym": "skyrl_gym"}


def family_of(module: str) -> str | None:
    if module in FAMILY_OF:
        return FAMILY_OF[module]
    prefix = module.split("_", 1)[0]
    return prefix if prefix in FAMILY_PREFIXES else None


def trainer_sdks() -> dict[str, set[str]]:
    """Each install extra's trainer SDKs, as import names (`trl` -> {trl, openenv})."""
    extras = tomllib.loads((PYTHON / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    sdks = {}
    for extra, requirements in extras.items():
        names = {re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0] for requirement in requirements}
        sdks[extra] = {IMPORT_NAME.get(name, name.replace("-", "_")) for name in names}
    return sdks


def helper_module_names() -> set[str]:
    """Module names a test can import: python/testing's and the test folders' own."""
    folders = [PYTHON / "testing", *PYTHON.glob("tests*")]
    return {path.stem for folder in folders if folder.is_dir() for path in folder.glob("*.py")} | {"pytest", "_pytest", "conftest"}


def imports_of(module: str, source: str) -> list[tuple[str, str | None]]:
    """(top-level name, package module or None) of every import: `searcher_rl_trainers.x`, `.x` and
    `from . import x` give (PACKAGE_NAME, "x")."""
    found = []
    for node in ast.walk(ast.parse(source, filename=f"{module}.py")):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found.append((parts[0], parts[1] if parts[0] == PACKAGE_NAME and len(parts) > 1 else None))
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".") if node.module else []
            if node.level:  # relative: within the package (one level: the package is flat)
                if parts:
                    found.append((PACKAGE_NAME, parts[0]))
                else:
                    found += [(PACKAGE_NAME, alias.name) for alias in node.names]
            elif parts[0] == PACKAGE_NAME:
                found += [(PACKAGE_NAME, parts[1])] if len(parts) > 1 else [(PACKAGE_NAME, a.name) for a in node.names]
            else:
                found.append((parts[0], None))
    return found


def offences(sources: dict[str, str]) -> list[str]:
    """Every broken rule in `sources` ({module name: source}), one line each."""
    helpers = helper_module_names()
    sdks = trainer_sdks()
    all_sdks = set().union(*sdks.values())
    found = []
    for module, source in sorted(sources.items()):
        family = family_of(module)
        if module not in SHARED and module != "__init__" and family is None:
            found.append(f"{module}: in no family (name it with a family's prefix, {FAMILY_PREFIXES}, or list it in FAMILY_OF)")
        for top, target in imports_of(module, source):
            where = f"{module} imports {top if target is None else f'{top}.{target}'}"
            if top in helpers or "testing" in top or (target and "testing" in target):
                found.append(f"{where} (a test helper)")
            elif module == "__init__":
                found.append(f"{where} (__init__ imports nothing: `import {PACKAGE_NAME}` needs no trainer)")
            elif module in SHARED:
                if target is not None or top not in sys.stdlib_module_names and top != "__future__":
                    found.append(f"{where} (the shared connection module takes the standard library only)")
            elif target is not None:
                other = family_of(target)
                if target in SHARED or other == family or (family, target) in CROSS_FAMILY:
                    continue
                found.append(f"{where} (another family's module: go through connection, or list the edge in CROSS_FAMILY)")
            elif top in all_sdks and top not in sdks.get(family or "", set()):
                found.append(f"{where} (a trainer SDK outside the [{family}] extra)")
    return found


def package_sources() -> dict[str, str]:
    return {path.stem: path.read_text() for path in sorted(PACKAGE.glob("*.py"))}


def test_the_package_keeps_its_layering():
    sources = package_sources()
    assert {"__init__", "connection", "ws_episodes", "openenv_glue", "verl_session", "skyrl_env"} <= set(sources)
    assert offences(sources) == []


def string_literals(source: str) -> list[str]:
    """The string constants of `source` (f-strings' literal parts included), docstrings left out."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_the_clients_build_urls_and_credentials_only_through_connection():
    sources = package_sources()
    for client in ("ws_episodes", "openenv_glue", "verl_session", "skyrl_env"):
        assert (PACKAGE_NAME, "connection") in imports_of(client, sources[client]), client
    # Nothing but the connection module spells the Authorization header or its schemes.
    spelled = {
        module: [text for text in string_literals(source) if re.search(r"Authorization|Bearer |Basic ", text)]
        for module, source in sources.items()
        if module != "connection"
    }
    assert {module: texts for module, texts in spelled.items() if texts} == {}


def test_no_test_helper_ships_in_the_package():
    assert not [name for name in package_sources() if "test" in name]


def test_the_rules_catch_what_they_forbid():
    bad = {
        "__init__": "from .connection import ServerAddress\n",
        "connection": "import websockets\nfrom .verl_session import ServeEnvSession\n",
        "verl_thing": "import pytest\nfrom .skyrl_env import SearcherServeEnv\nfrom serve_env import ServeEnv\n\n"
        "def lazy():\n    import trl\n",
        "skyrl_thing": "from searcher_rl_trainers import verl_session\nfrom .connection import ServerAddress\n",
        "trl_thing": "from .openenv_glue import env_client\nimport openenv\nimport trl\n",
        "helpers": "import json\n",
    }
    assert offences(bad) == [
        "__init__ imports searcher_rl_trainers.connection (__init__ imports nothing: `import searcher_rl_trainers` needs no trainer)",
        "connection imports websockets (the shared connection module takes the standard library only)",
        "connection imports searcher_rl_trainers.verl_session (the shared connection module takes the standard library only)",
        "helpers: in no family (name it with a family's prefix, ('openenv', 'ws', 'trl', 'verl', 'skyrl'), or list it in FAMILY_OF)",
        "skyrl_thing imports searcher_rl_trainers.verl_session (another family's module: go through connection, or list the edge in CROSS_FAMILY)",
        "verl_thing imports pytest (a test helper)",
        "verl_thing imports searcher_rl_trainers.skyrl_env (another family's module: go through connection, or list the edge in CROSS_FAMILY)",
        "verl_thing imports serve_env (a test helper)",
        "verl_thing imports trl (a trainer SDK outside the [verl] extra)",
    ]
