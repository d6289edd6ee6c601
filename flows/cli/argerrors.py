"""argparse's refusals rewritten in the documented style: one line naming what the user typed.

`invalid value for --flag: 'typed' (accepted: ...)` for a bad value or choice, `unknown flag
--x (did you mean --y?)` for a flag no parser knows; never argparse's `argument ...` wording.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re

_TYPES: dict[object, str] = {int: "a whole number", float: "a number"}
_TYPED = re.compile(r"invalid (?:\S+ )?(?:value|choice): (?P<value>'.*?'|\".*?\")")


def bad_value(parser: argparse.ArgumentParser, err: argparse.ArgumentError) -> str:
    """The one line for an `ArgumentError` raised while `parser` parsed its arguments."""
    name = err.argument_name or "an argument"
    action = _action(parser, name)
    message = err.message
    if message.startswith("expected one argument"):
        return f"{name} needs a value"
    found = _TYPED.match(message)
    if found is None:
        return f"{name}: {message}"
    value = ast.literal_eval(found.group("value"))
    line = f"invalid value for {name}: {value!r}"
    accepted = _accepted(action)
    if action is not None and action.choices is not None:
        close = difflib.get_close_matches(value, [str(c) for c in action.choices], n=1)
        if close:
            line += f" (did you mean {close[0]}?)"
    return f"{line} (accepted: {accepted})" if accepted else line


def unknown(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """The one line for arguments no parser took (a flag gets the closest known flag)."""
    first = extras[0]
    if not first.startswith("-"):
        return f"unexpected argument {first!r}"
    flag = first.split("=", 1)[0]
    known = [option for option in parser._option_string_actions if option.startswith("--")]
    close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown flag {flag}{hint}"


def _action(parser: argparse.ArgumentParser, name: str) -> argparse.Action | None:
    for option in name.split("/"):
        if option in parser._option_string_actions:
            return parser._option_string_actions[option]
    for action in parser._actions:
        if action.metavar == name or action.dest == name:
            return action
    return None


def _accepted(action: argparse.Action | None) -> str:
    if action is None:
        return ""
    if action.choices is not None:
        return ", ".join(str(choice) for choice in action.choices)
    return next((text for kind, text in _TYPES.items() if action.type is kind), "")
