"""What every expert-load reader shares: the limits an input must keep and the codes of a refusal.

The readers turn real files into loads. A file outside these limits is refused whole with a code and its values
(``Refused``), listed in every report's inputs and on standard error, and nothing of it is counted: one ``nan``,
a negative count or a 5,000-digit number would otherwise change the suggested map without a word. The limits are
far above any real deployment (DeepSeek-V3/R1: 58 MoE layers plus MTP, 256 routed experts, a few hundred slots
per rank) and low enough that a hostile file cannot make the report hold more than a few hundred megabytes:
a CSV row of a million cells is refused from its first line, before any table is built.
"""

from __future__ import annotations

from diagnose.model.expertload import Refused

MAX_SLOTS = 4096  # columns of one dump row (local slots of one rank)
MAX_LAYERS = 1000  # rows of one dump block (MoE layers, MTP included)
MAX_EXPERTS = 4096  # logical expert ids (DeepSeek-V3/R1: 256 routed, id 256 the shared one)
MAX_RANKS = 4096  # devices of one map layer
MAX_CELL = 10**15  # tokens in one cell: a million tokens a second for thirty years
MAX_JSON_BYTES = 32 * 1024 * 1024  # an expert map or a token-collect JSON (61 layers x 64 devices: well under 1 MB)
MAX_PT_BYTES = 1024 * 1024 * 1024  # a torch.save file
MAX_PT_CELLS = 128 * 1024 * 1024  # numbers in one tensor of such a file
FIRST_LINE_BYTES = 1024 * 1024  # how far the shape test reads into a CSV

# Why an input was refused; the words are messages.toml [expertload.refused].
REFUSALS = (
    "bad_cell",  # a cell that is not a whole number of tokens (nan, inf, 1e400, text)
    "negative",  # a negative count
    "huge",  # a count above MAX_CELL (a 5,000-digit number)
    "too_wide",  # more slots per row than MAX_SLOTS
    "ragged",  # rows of different widths before the last one
    "too_many_layers",  # more rows per block than MAX_LAYERS
    "rows_unknown",  # the rows per block could not be told
    "layers_disagree",  # model_gen_config.json and the dumps' period give different rows per block (layers.py)
    "map_layers",  # a map that is neither the rows per block nor one layer short (MTP) (layers.py)
    "node_rows",  # in a fleet: counted on its node at rows per block the fleet's inputs do not give (fleet/expert.py)
    "bad_map",  # not the expert-map schema, or ids that are not experts
    "too_big",  # larger than the reader's byte limit
    "pt_format",  # not a torch.save zip archive
    "pt_global",  # a .pt pickle that names something other than tensors and plain containers
    "pt_shape",  # a tensor of the wrong rank or size for its role
    "bad_json",  # a token-collect JSON that is not {layer: {expert: count}}
    "unreadable",  # the file could not be read at all
)


def refuse(path: str, reason: str, **params: object) -> Refused:
    assert reason in REFUSALS, reason
    return Refused(path, reason, {k: str(v) for k, v in params.items()})


def count_ok(value: object) -> str | None:
    """None when ``value`` is a token count the report may add up, else the refusal code."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            return "bad_cell"
    if value < 0:
        return "negative"
    if value > MAX_CELL:
        return "huge"
    return None
