"""The one page registry: every view of the app with its section, file, title, icon, blurb and
lecture order. app.py builds the navigation from it, the home page lists it, the lab pages take
their Previous/Next links from it, and the tests walk it. Plain data: no streamlit here."""
from __future__ import annotations

from dataclasses import dataclass

FOLDER = "app_pages"  # Streamlit's advice for st.navigation apps: not "pages/", which has a legacy mode


@dataclass(frozen=True)
class PageSpec:
    section: str  # top-navigation section: Inspect, Analyse or Learn
    name: str  # file stem in app_pages/ and the URL path (/heatmap)
    title: str  # navigation label
    icon: str  # navigation icon (a material symbol; icons ship with Streamlit's frontend)
    blurb: str = ""  # one line on the home page saying what the page is for
    heading: str = ""  # the page's own title when it differs from the navigation label (lab pages)

    @property
    def file(self) -> str:
        """Path of the page's script, relative to the folder holding app.py."""
        return f"{FOLDER}/{self.name}.py"

    @property
    def prefix(self) -> str:
        """The start of every widget and session key the page binds (its own; st.session_state is one
        namespace for all pages): prefix + "_" + name, or "_" + prefix + "_" + name for internal state."""
        return KEY_PREFIXES[self.name]

    @property
    def lecture(self) -> bool:
        """A numbered lab page: part of the lecture order (Previous/Next links)."""
        return self.section == "Learn" and self.title[:1].isdigit()


# In navigation order; the lab pages are in lecture order.
# (section, name, title, icon, blurb, heading)
PAGES: tuple[PageSpec, ...] = tuple(PageSpec(*row) for row in (
    ('Inspect', 'home', 'Home', ':material/home:', '', ''),
    ('Inspect', 'heatmap', 'Attention heatmap', ':material/grid_on:', 'every head as a thumbnail, one head in detail, one token across heads, the text shaded by attention', ''),
    ('Inspect', 'query_key', 'Query · key', ':material/join_inner:', 'one attention row rebuilt from the query and key vectors', ''),
    ('Inspect', 'vision', 'Vision', ':material/image:', "a vision transformer's attention drawn over image patches", ''),
    ('Inspect', 'generate', 'Generate', ':material/edit_note:', 'watch a causal LM write: what it attended to for every token, and how sampling chose it', ''),
    ('Inspect', 'long', 'Long inputs', ':material/notes:', 'thousands of tokens on a real LLM: maps on demand, pooled grid, sinks', ''),
    ('Analyse', 'entropy', 'Entropy', ':material/bar_chart:', 'which heads are focused and which are broad', ''),
    ('Analyse', 'rollout', 'Rollout', ':material/account_tree:', 'which input tokens feed each output token (rollout and flow)', ''),
    ('Analyse', 'head_roles', 'Head roles', ':material/explore:', 'what each head does, induction heads included', ''),
    ('Analyse', 'ablation', 'Ablation', ':material/content_cut:', 'switch heads off and measure the effect', ''),
    ('Analyse', 'contributions', 'Contributions', ':material/scale:', 'what attention actually moves: value norms, mixing ratios, ALTI', ''),
    ('Analyse', 'trust', 'Trust the view?', ':material/fact_check:', 'attention, contributions and gradients checked against the prediction', ''),
    ('Analyse', 'logit_lens', 'Logit lens', ':material/layers:', 'the next-token guess read from every layer', ''),
    ('Analyse', 'causal', 'Which heads cause it', ':material/troubleshoot:', 'patch heads between a clean and a corrupted prompt: which ones carry the answer, and why they attend', ''),
    ('Analyse', 'atlas', 'Head atlas', ':material/travel_explore:', 'every head over a corpus: statistics, patterns, syntax heads, search', ''),
    ('Analyse', 'compare', 'Compare', ':material/compare:', 'two sentences or two models side by side', ''),
    ('Learn', 'lab_steps', '1 · Scaled dot-product', ':material/science:', 'the computation step by step, on numbers you can edit', '1 · Scaled dot-product, step by step'),
    ('Learn', 'lab_scaling', '2 · Why √d_k', ':material/functions:', 'why the scores are divided by √d_k', '2 · Why √d_k'),
    ('Learn', 'lab_temperature', '3 · Temperature', ':material/thermostat:', 'from soft averaging to a hard lookup', '3 · Temperature and soft lookup'),
    ('Learn', 'lab_masks', '4 · Masks', ':material/visibility_off:', 'causal and padding masks, and what forgetting one does', '4 · Masks'),
    ('Learn', 'lab_multihead', '5 · Multi-head', ':material/view_module:', 'heads as slices of d_model, grouped-query attention', '5 · Multi-head attention'),
    ('Learn', 'lab_variants', '6 · Variants', ':material/alt_route:', 'Bahdanau and Luong scores; self-, cross- and causal attention', '6 · Variants: Bahdanau, Luong, self / cross / causal'),
    ('Learn', 'lab_kv_cache', '7 · KV cache', ':material/storage:', 'what generation stores per token, and what it saves', '7 · KV cache'),
    ('Learn', 'lab_quiz', '8 · Quick checks', ':material/quiz:', 'test yourself; common mistakes happening live', '8 · Quick checks and common mistakes'),
    ('Learn', 'lab_explanation', '9 · Not explanation', ':material/report:', 'a sentence where the weights and the contributions disagree', '9 · Attention is not explanation'),
    ('Learn', 'deck', 'Lecture deck', ':material/slideshow:', "build, save, prepare and present a lecture made of the app's own views", ''),
    ('Learn', 'positional', 'Positional encodings', ':material/place:', 'sinusoidal, learned, RoPE, ALiBi', ''),
    ('Learn', 'complexity', 'Complexity', ':material/speed:', 'what attention costs as inputs grow', ''),
    ('Learn', 'training', 'Training evolution', ':material/model_training:', 'watch attention form while a model learns', ''),
))
HOME = PAGES[0]
# Each page's key prefix (PageSpec.prefix); tests/unit/test_page_keys.py checks that every key a page binds
# carries it, or is one of the keys shared by all pages (sidebar, deck, links), and that no two pages share one.
KEY_PREFIXES: dict[str, str] = {
    "home": "home", "heatmap": "hm", "query_key": "qk", "vision": "vi", "generate": "gen", "long": "lg", "entropy": "en", "rollout": "ro",
    "head_roles": "hr", "ablation": "ab", "contributions": "ct", "trust": "trust", "logit_lens": "ll", "causal": "ca",
    "atlas": "at", "compare": "cmp", "lab_steps": "steps", "lab_scaling": "scaling", "lab_temperature": "temp",
    "lab_masks": "masks", "lab_multihead": "mh", "lab_variants": "var", "lab_kv_cache": "kv", "lab_quiz": "quiz",
    "lab_explanation": "nx", "deck": "deck", "positional": "pe", "complexity": "cx", "training": "tr",
}


def page(name: str) -> PageSpec:
    """The page called `name` (its file stem)."""
    for spec in PAGES:
        if spec.name == name:
            return spec
    raise KeyError(name)


def lecture_order() -> list[PageSpec]:
    """The numbered lab pages in lecture order."""
    return [p for p in PAGES if p.lecture]
