"""``benchkit toy sums FILE``: the tool's own subcommand."""

import argparse
from pathlib import Path
from typing import Any

from benchkit_toy._format import read_sums


def add_commands(subparsers: Any) -> None:
    toy = subparsers.add_parser("toy", help="toy arithmetic benchmarks")
    commands = toy.add_subparsers(dest="toy_command", required=True)
    sums = commands.add_parser("sums", help="list the sums of a toy file (.json or .toy)")
    sums.add_argument("path", type=Path)
    sums.set_defaults(func=_sums)


def _sums(args: argparse.Namespace) -> int:
    for question, answer in read_sums(args.path):
        print(f"{question} = {answer}")
    return 0
