"""``python -m diagnose.knowledge.harvest pin PROJECT==VERSION --include GLOB``: the sources.toml entry of a
registry release, so adding a source is one command and a paste, with the hash taken from the registry and
checked again on every build.

The file chosen is the source distribution when there is one (it holds every module, for every platform), else
a CPython 3.11 x86-64 Linux wheel, else a pure-Python wheel, else any Linux wheel (some Ascend packages ship for ARM only).
"""

from __future__ import annotations

from diagnose.knowledge.harvest.sources import registry_files


def choose(files: list[tuple[str, str, str]]) -> tuple[str, str]:
    """(file name, sha256) of the file to harvest among a release's files."""
    def rank(name: str) -> int:
        if name.endswith((".tar.gz", ".zip")):
            return 0
        if "cp311" in name and "x86_64" in name and "linux" in name:
            return 1
        if name.endswith("-none-any.whl"):
            return 2
        if "x86_64" in name and "linux" in name:
            return 3
        if "linux" in name:  # the Python modules of an ARM-only wheel are the same on every machine
            return 4 if "cp311" in name else 5
        return 9
    name, _url, sha = min(files, key=lambda f: (rank(f[0]), f[0]))
    if rank(name) == 9:
        raise ValueError(f"no usable file among {[f[0] for f in files]}")
    return name, sha


def entry(spec: str, include: list[str], origin: str = "python") -> str:
    """The TOML text of one ``[[release]]`` entry."""
    project, _, version = spec.partition("==")
    files = registry_files(project, version)
    if not files:
        raise ValueError(f"{spec}: the registry lists no files")
    name, sha = choose(files)
    globs = ", ".join(f'"{g}"' for g in include)
    return (f'[[release]]\nproject = "{project}"\nversion = "{version}"\norigin = "{origin}"\n'
            f'file = "{name}"\nsha256 = "{sha}"\ninclude = [{globs}]\n')
