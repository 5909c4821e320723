"""The sub-commands' parsers built from plain data (cli/parser_table.py), so `pyfxprof --help`,
`pyfxprof COMMAND --help` and the parsing of any command import no command module (and so no
torch, pandas or scipy); `run` and argument types are named by reference, ``"module:name"``,
and imported on first call. cli/parser_writer.py writes the table from the command modules.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

#: Parser attributes kept for each sub-command (add_parser's keyword arguments).
PARSER_FIELDS = ("description", "epilog")


class Reference:
    """A callable named ``"module:name"``, imported when first called (``args`` rebuild a
    dataclass instance). ``__name__`` is the target's, for argparse's messages.

    Example:
        >>> Reference("builtins:int", name="int")("3")
        3
    """

    def __init__(self, target: str, args: tuple = (), name: str = "") -> None:
        self.target, self.args = target, tuple(args)
        self.__name__ = name or target.rpartition(":")[2]

    def resolve(self) -> Any:
        """The callable itself (imports its module; a dataclass instance is rebuilt)."""
        module, _, name = self.target.partition(":")
        found = getattr(importlib.import_module(module), name)
        return found(*self.args) if self.args else found

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and (self.target, self.args) == (other.target,
                                                                              other.args)

    def __hash__(self) -> int:
        return hash((self.target, self.args))

    def __repr__(self) -> str:
        return f"Reference({self.target!r})"


def loaded(value: Any) -> Any:
    """The inverse of parser_writer.table_value: references become Reference objects, imported
    when called."""
    if isinstance(value, dict) and "ref" in value:
        return Reference(value["ref"], value["args"], value["name"])
    if value == argparse.SUPPRESS:  # argparse tests it by identity (a hidden option, alias)
        return argparse.SUPPRESS
    if isinstance(value, (list, tuple)):
        return type(value)(loaded(item) for item in value)
    return value


def add_from_spec(subparsers, name: str, spec: dict) -> argparse.ArgumentParser:
    """Register sub-command `name` on `subparsers` as `spec` (parser_writer.describe's data)
    says."""
    parser = subparsers.add_parser(name, help=spec["help"],
                                   **{field: spec[field] for field in PARSER_FIELDS})
    groups = [parser.add_argument_group(group["title"], group["description"])
              for group in spec["groups"]]
    for argument in spec["arguments"]:
        target = parser if argument["group"] is None else groups[argument["group"]]
        keywords = {key: loaded(value) for key, value in argument["keywords"].items()}
        if argument["options"]:
            target.add_argument(*argument["options"], action=argument["action"], **keywords)
        else:  # a positional: named by its dest; argparse works out whether it is required
            keywords.pop("required", None)
            target.add_argument(keywords.pop("dest"), action=argument["action"], **keywords)
    parser.set_defaults(**{key: loaded(value) for key, value in spec["defaults"].items()})
    return parser


