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

from typing import Any, List, Union, get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

_RuntimeParam: Any
try:
    from typer._coercion import RuntimeParam as _RuntimeParam
except ImportError:  # pragma: no cover - another typer: it does its own coercion
    _RuntimeParam = None


def _plain_type(annotation: Any) -> tuple[type, bool] | None:
    """(str|int|bool, is_list) for the annotations the light coercion handles, else None."""
    if get_origin(annotation) is Union:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        annotation = args[0]
    if get_origin(annotation) in (list, List):
        (item,) = get_args(annotation) or (str,)
        return (item, True) if item in (str, int) else None
    return (annotation, False) if annotation in (str, int, bool) else None


def _one(kind: type, value: Any, parameter_info: Any, param: Any, ctx: Any) -> Any:
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
        number = int(value)
    except (TypeError, ValueError):
        raise typer.BadParameter(f"{value!r} is not a whole number.", ctx=ctx, param=param) from None
    low = getattr(parameter_info, "min", None)
    if low is not None and number < low:
        raise typer.BadParameter(f"{number} is below {low}.", ctx=ctx, param=param)
    return number


_PlainParam: Any = None
if _RuntimeParam is not None:
    try:
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class _PlainParam(_RuntimeParam):  # type: ignore[misc, no-redef]
            kind: type = str
            many: bool = False

            def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
                if self.many:
                    return [_one(self.kind, v, self.parameter_info, param, ctx) for v in value]
                return _one(self.kind, value, self.parameter_info, param, ctx)

    except TypeError:  # pragma: no cover - a RuntimeParam of another shape
        _PlainParam = None


def _lighten(params: list[Any]) -> list[Any]:
    if _PlainParam is None:
        return params
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", 0) is not None:
            continue
        plain = _plain_type(descriptor.annotation)
        if plain is not None and plain[0] in (str, int) and not getattr(param, "is_flag", False):
            # typer's help prints "ID <str>", "FILES <list[str]>", "--subject <str>": Python's
            # types, noise to a person reading the help. An argument's name and help say what it
            # is; an option without a metavar shows its name, as click does ("--subject SUBJECT").
            if getattr(param, "param_type_name", "") == "argument":
                param.display_type_rich = lambda ctx: None
            elif param.metavar is None and param.name:
                param.display_type_rich = lambda ctx, label=param.name.upper(): label
        if plain is not None:
            try:
                param._runtime_param = _PlainParam(descriptor.parameter_info, descriptor.annotation, *plain)
            except TypeError:  # pragma: no cover
                return params
    return params


class LeanCommand(TyperCommand):
    """A typer command whose plain parameters skip typer's pydantic coercion."""

    def get_params(self, ctx: Any) -> list[Any]:  # a click Context (typer's own, or click's)
        # Here, not in __init__: the help option is made on demand.
        return _lighten(super().get_params(ctx))


class LeanGroup(TyperGroup):
    """A typer group whose own options (--debug, --version, completion) skip it too."""

    def get_params(self, ctx: Any) -> list[Any]:
        # Here, not in __init__: typer adds its completion and help options later.
        return _lighten(super().get_params(ctx))
