"""The facts of one model directory and one launch, for ``diagnose preflight`` (commands/preflight.py)."""

from __future__ import annotations

from pathlib import Path

from diagnose.model import InputFile, Skipped, skip
from diagnose.preflight import checks, launch as launch_mod, modelcard
from diagnose.preflight.factsource import FactSource
from diagnose.preflight.origins import Sources, fact_origins


class LaunchUnreadable(ValueError):
    """A launch that cannot be read (a file, a command that is not a vLLM launch, a flag value that does not
    parse); the message says which and why, one problem a line."""


def build_facts(model_dir: str | None, serve_cmd: str | None, serve_script: str | None, mindie_config: str | None,
                target, facts_path: str) -> tuple[FactSource, str]:
    """The facts of one model directory and one launch as a source of the run (named ``facts_path``, with the
    files read and the ones skipped, and the origin of each fact), and the facts as ``--facts`` writes them."""
    inputs: list[InputFile] = []
    skipped: list[Skipped] = []
    card = None
    sources = Sources()
    if model_dir:
        card = modelcard.load_model_dir(model_dir)
        for name in (modelcard.CONFIG, modelcard.INDEX, modelcard.QUANT_DESC):
            p = Path(model_dir) / name
            packed = p.with_name(name + ".gz")
            if str(packed) in card.files:
                p = packed
            if str(p) in card.files:
                inputs.append(InputFile(path=str(p), kind="model-metadata", lines=0, bytes=p.stat().st_size))
                text = _text(p) if name == modelcard.CONFIG else None  # key lines for the facts' origins
                setattr(sources, {modelcard.CONFIG: "config", modelcard.INDEX: "index",
                                  modelcard.QUANT_DESC: "quant"}[name], (str(p), text))
            elif not p.exists():
                skipped.append(Skipped(str(p), skip("not_in_model_dir")))
    launch = None
    if serve_cmd:
        launch = launch_mod.parse_serve_script(serve_cmd, "--serve-cmd")
    elif serve_script or mindie_config:
        path = Path(serve_script or mindie_config)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise LaunchUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
        inputs.append(InputFile(path=str(path), kind="launch", lines=text.count("\n") + 1, bytes=len(text.encode())))
        sources.launch_text[str(path)] = text
        if serve_script:
            launch = launch_mod.parse_serve_script(text, str(path))
            if not launch.command:
                nd = launch_mod.parse_non_default_args(text, str(path))
                if nd is None:
                    launch.problems = [f"{path}: not a vLLM launch: no `vllm serve MODEL ...` or `python -m "
                                       f"vllm.entrypoints.openai.api_server ...` command, and no `non-default args:` "
                                       f"line of a vLLM log"]
                launch = nd or launch
        else:
            launch = launch_mod.parse_mindie_config(text, str(path), target.npus)
    if launch is not None and launch.problems:
        # A launch that cannot be read is not checked with defaults in its place: say what could not be read.
        raise LaunchUnreadable("\n".join(launch.problems))
    facts = checks.compute(card, launch, target)
    text = checks.render(facts, model_dir, launch.source if launch else None)
    source = FactSource(read=inputs, skipped=skipped)
    # A --serve-cmd is held by no file: findings on its facts point at the option.
    places = [o or ("--serve-cmd", 1) for o in fact_origins(facts, sources, launch)]
    source.add(facts_path, facts, places, text, None)
    return source, text


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
