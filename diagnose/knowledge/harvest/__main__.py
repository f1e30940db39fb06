"""``python -m diagnose.knowledge.harvest``: rebuild the message index from knowledge/sources.toml.

Subcommands: ``build`` (the default), ``pin PROJECT==VERSION --include GLOB`` (print a sources.toml entry) and
``table`` (rewrite the table of index sizes in docs/knowledge.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from diagnose.knowledge.indexfile import index_path, knowledge_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m diagnose.knowledge.harvest")
    sub = parser.add_subparsers(dest="command")
    build_p = sub.add_parser("build", help="download, verify and harvest every pinned source; write the index")
    pin_p = sub.add_parser("pin", help="print the sources.toml entry of a registry release")
    pin_p.add_argument("spec", help="PROJECT==VERSION")
    pin_p.add_argument("--include", action="append", required=True, help="glob of harvested paths")
    pin_p.add_argument("--origin", default="python", choices=["python", "native"])
    table_p = sub.add_parser("table", help="rewrite the table of index sizes in docs/knowledge.md")
    table_p.add_argument("--doc", type=Path, default=Path(__file__).resolve().parents[3] / "docs" / "knowledge.md")
    for p in (parser, build_p):
        p.add_argument("--sources", type=Path, default=knowledge_dir() / "sources.toml")
        p.add_argument("--out", type=Path, default=index_path())
        p.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=PATH",
                       help="a local clone or mirror of a git source")
        p.add_argument("--git-root", action="append", type=Path, default=[],
                       help="a folder holding clones as OWNER+NAME or OWNER/NAME")
        p.add_argument("--find-links", action="append", type=Path, default=[],
                       help="a folder of release files to use before downloading")
        p.add_argument("--only", action="append", default=[], help="harvest only these projects (a trial run)")
    args = parser.parse_args(argv)
    if args.command == "table":
        from diagnose.knowledge.harvest.table import rewrite, size_table
        args.doc.write_text(rewrite(args.doc, size_table()), encoding="utf-8")
        return 0
    if args.command == "pin":
        from diagnose.knowledge.harvest.pin import entry
        sys.stdout.write(entry(args.spec, args.include, args.origin))
        return 0
    from diagnose.knowledge.harvest.build import build
    git_dirs = {k: Path(v) for k, _, v in (g.partition("=") for g in args.git)}
    return build(args.sources, args.out, git_dirs, args.git_root, args.find_links, set(args.only))


if __name__ == "__main__":
    sys.exit(main())
