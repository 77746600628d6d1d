"""Work a parallel build runs ahead of a chapter as commands of their own (`planning.AHEAD`: `lib.edition.train_ahead`,
`lib.edition.features`, `lib.edition.finetuning`): the command line a build starts, and the arguments each such command
reads its chapter's values from (the profile's, then the build's planned values, then `-p NAME VALUE`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from ..core.profiles import chapter_parameters, checked_value, command_line_values, profile_parameters


def command(module: str, profile: str, parameters: Mapping[str, Any]) -> list[str]:
    """The start of the command line that runs `module` with a build's planned values of its chapter."""
    return [sys.executable, "-m", module, "--profile", profile, "--parameters-json", json.dumps(parameters)]


def parser(module: str, chapter: str, doc: str) -> argparse.ArgumentParser:
    """The arguments every command ahead takes; the module adds its own."""
    out = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    out.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    out.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help=f"a parameter of {chapter} (VALUE is YAML)")
    out.add_argument("--parameters-json", default="{}", help=argparse.SUPPRESS)  # a build's planned values (`command`)
    return out


def values(chapter: str, args: argparse.Namespace) -> dict[str, Any]:
    """The chapter's values for this command: the profile's, then the build's planned values, then `-p` pairs, each
    checked. An unknown profile stops here, before anything is trained."""
    profile_parameters(args.profile, chapter)
    planned = chapter_parameters(chapter, args.profile) | json.loads(args.parameters_json)
    return planned | {name: checked_value(chapter, name, value) for name, value in command_line_values(args.parameter).items()}
