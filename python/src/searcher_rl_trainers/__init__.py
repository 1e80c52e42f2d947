"""The trainer side of searcher-rl: clients of `searcher-rl serve-env` for distributed trainers.

How the modules depend on each other (python/tests/test_layering.py checks it):

- `connection` is shared by every client: the server's address, the token and the headers that
  carry it, the retry rule, the session error. Standard library only; it imports nothing of the
  package.
- Each trainer has a family of modules, named by prefix: `openenv_*` (glue around openenv-core's
  clients), `ws_*` (the protocol with `websockets` alone), `trl_*` and `train_trl` (TRL), `verl_*`
  (verl), `skyrl_*` (SkyRL). A family imports `connection` and its own modules, not another
  family's; the one exception is TRL's on `openenv_glue` (TRL's environments are OpenEnv clients).
- A family imports only the trainer SDKs of its own install extra (`[project.optional-dependencies]`
  in pyproject.toml): `pip install searcher-rl-trainers[verl]` needs no TRL.
- This module imports nothing, so `import searcher_rl_trainers` needs no trainer.
- No module imports pytest or a test helper: the serve-env launcher and verl's stand-ins live in
  python/testing, on the tests' path only.
"""

__version__ = "0.1.0"
