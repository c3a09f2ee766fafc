"""Typer, without paying for what formctl does not use at start-up.

Typer (0.2x) coerces every non-flag parameter through a pydantic ``TypeAdapter``, built on
first use: ``formctl list --forms DIR`` would import pydantic (~50 ms, more than the whole
of ``python -c pass``) to check that a string is a string. formctl's parameters are all
plain ``str``, ``int``, ``bool`` or lists of ``str``, so :class:`LeanCommand` and
:class:`LeanGroup` pre-seed such parameters with the light coercion below. Any other
annotation keeps typer's own coercion, and so does everything when typer's internals are
not the ones this was written against (``typer._coercion.RuntimeParam``): then the CLI is
only slower, never broken.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, List, Optional, Union, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    # The click typer runs on: its own copy (typer._click) since typer 0.2x, the types mypy reads
    # from the typer installed. Only names here: at run time nothing is imported from it.
    from typer._click.core import Context as ClickContext
    from typer._click.core import Parameter
    from typer.core import _TyperParameter
    from typer.models import ParameterInfo

try:
    from typer._coercion import RuntimeParam

    _COERCION = True
except ImportError:  # pragma: no cover - another typer: it does its own coercion
    _COERCION = False


def _plain_type(annotation: object) -> Optional[tuple[type, bool]]:
    """(str|int|bool, is_list) for the annotations the light coercion handles, else None."""
    if get_origin(annotation) is Union:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        annotation = args[0]
    if get_origin(annotation) in (list, List):
        (item,) = get_args(annotation) or (str,)
        return (item, True) if item in (str, int) else None
    return (annotation, False) if isinstance(annotation, type) and annotation in (str, int, bool) else None


def _one(
    kind: type, value: object, parameter_info: "ParameterInfo", param: "_TyperParameter", ctx: "ClickContext"
) -> object:
    if kind is str:
        return value if isinstance(value, str) else str(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on", "y", "t"):
            return True
        if text in ("0", "false", "no", "off", "n", "f", ""):
            return False
        raise typer.BadParameter(f"{value!r} is not true or false.", ctx=ctx, param=param)
    try:
        number = int(value if isinstance(value, (str, bytes, int, float)) else str(value))
    except (TypeError, ValueError):
        raise typer.BadParameter(f"{value!r} is not a whole number.", ctx=ctx, param=param) from None
    low = getattr(parameter_info, "min", None)
    if low is not None and number < low:
        raise typer.BadParameter(f"{number} is below {low}.", ctx=ctx, param=param)
    return number


_PLAIN = False  # whether _PlainParam could be made on the typer installed
if _COERCION:
    try:
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class _PlainParam(RuntimeParam):
            kind: type = str
            many: bool = False

            def _coerce_value(self, value: object, param: "_TyperParameter", ctx: "ClickContext") -> object:
                if self.many and isinstance(value, Iterable):  # typer refuses a str here first
                    return [_one(self.kind, v, self.parameter_info, param, ctx) for v in value]
                return _one(self.kind, value, self.parameter_info, param, ctx)

        _PLAIN = True
    except TypeError:  # pragma: no cover - a RuntimeParam of another shape
        pass


def _lighten(params: "list[Parameter]") -> "list[Parameter]":
    if not _PLAIN:
        return params
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", 0) is not None:
            continue
        plain = _plain_type(descriptor.annotation)
        # typer's parameters are set here through their __dict__: an attribute of the instance,
        # as an assignment would make it, which click's Parameter type does not declare.
        own = vars(param)
        if plain is not None and plain[0] in (str, int) and not getattr(param, "is_flag", False):
            # typer's help prints "ID <str>", "FILES <list[str]>", "--subject <str>": Python's
            # types, noise to a person reading the help. An argument's name and help say what it
            # is; an option without a metavar shows its name, as click does ("--subject SUBJECT").
            if getattr(param, "param_type_name", "") == "argument":
                own["display_type_rich"] = lambda ctx: None
            elif param.metavar is None and param.name:
                own["display_type_rich"] = lambda ctx, label=param.name.upper(): label
        if plain is not None:
            try:
                own["_runtime_param"] = _PlainParam(descriptor.parameter_info, descriptor.annotation, *plain)
            except TypeError:  # pragma: no cover
                return params
    return params


class LeanCommand(TyperCommand):
    """A typer command whose plain parameters skip typer's pydantic coercion."""

    def get_params(self, ctx: "ClickContext") -> "list[Parameter]":
        # Here, not in __init__: the help option is made on demand.
        return _lighten(super().get_params(ctx))


class LeanGroup(TyperGroup):
    """A typer group whose own options (--debug, --version, completion) skip it too."""

    def get_params(self, ctx: "ClickContext") -> "list[Parameter]":
        # Here, not in __init__: typer adds its completion and help options later.
        return _lighten(super().get_params(ctx))
