"""The comparison table of positional-encoding schemes (type, extrapolation, parameters, users)."""
from __future__ import annotations

# One row per scheme. Parameter counts are for the models named; L = trained length, d = d_model.
ROWS: tuple[dict[str, str], ...] = (
    {"Scheme": "Sinusoidal", "Type": "absolute, fixed; added to the token embeddings",
     "Extrapolation": "defined for every position, but models trained on length L degrade soon after L "
                      "(Press et al. 2022 measured this)",
     "Parameters": "0", "Used by": "original Transformer (2017), Marian MT, fairseq NMT models",
     "key": "sinusoidal"},
    {"Scheme": "Learned absolute", "Type": "absolute, trained; one vector per position, added to the embeddings",
     "Extrapolation": "none: positions past the trained maximum have no vector at all",
     "Parameters": "L x d: BERT-base 512 x 768 = 393,216; GPT-2 small 1024 x 768 = 786,432; "
                   "all-MiniLM-L6-v2 512 x 384 = 196,608",
     "Used by": "BERT (512), RoBERTa, GPT-2 (1024), OPT", "key": "learned"},
    {"Scheme": "Relative bias (T5)", "Type": "relative; a learned scalar per distance bucket and head, added to the scores",
     "Extrapolation": "reasonable: far distances share the last (log-spaced) bucket",
     "Parameters": "buckets x heads (T5-base: 32 x 12 = 384, shared by the layers)",
     "Used by": "T5, mT5 (DeBERTa uses a related relative scheme)", "key": "relative"},
    {"Scheme": "RoPE", "Type": "relative; rotates q and k, so q_m . k_n = q^T R_(n-m) k",
     "Extrapolation": "poor beyond the trained length as is; extended with position interpolation "
                      "(PI), NTK-aware scaling or YaRN",
     "Parameters": "0", "Used by": "LLaMA, Mistral, Qwen, GPT-NeoX, SmolLM2", "key": "rope"},
    {"Scheme": "ALiBi", "Type": "relative; subtracts slope_h x distance from the scores, no position vectors",
     "Extrapolation": "good: trained on 1024 tokens, the paper's model keeps its perplexity on much longer inputs",
     "Parameters": "0 (slopes are fixed: 1/2, 1/4, ... for 8 heads)", "Used by": "BLOOM, MPT", "key": "alibi"},
)


def comparison_rows(highlight: str | None = None) -> list[dict[str, str]]:
    """The table as a list of dicts (column -> text); `highlight` (a position_scheme such as
    "learned" or "rope") marks the row of the loaded model in a "This model" column."""
    rows = []
    for row in ROWS:
        out = {k: v for k, v in row.items() if k != "key"}
        if highlight is not None:
            out = {"This model": "◀" if row["key"] == highlight else "", **out}
        rows.append(out)
    return rows
