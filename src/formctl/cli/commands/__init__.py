"""The ``formctl`` commands, one module per concern; importing one registers its commands on
:data:`formctl.cli.base.app` (in the order ``formctl --help`` lists them: see :mod:`formctl.cli.app`).

No ``from __future__ import annotations`` in these modules: typer evaluates every parameter's
type hints at start-up, and each string annotation costs a compile.
"""
