"""Clean/corrupted prompt pairs for causal analysis, the task sets built from them, and their score: the logit
difference of two next tokens (causal LMs) or the cosine similarity of the sentence embedding to a reference
sentence (encoders), normalised so the corrupted run scores 0 and the clean run 1."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput
from attnviz.units import count_text

# Names, subjects and years the generated sets draw from; a word is used only where the model's tokenizer reads
# it (with its leading space) as one token, so the clean and corrupted prompts keep the same length.
NAMES = ("Mary", "John", "Alice", "Bob", "Sarah", "Tom", "Anna", "James", "Emma", "David", "Laura", "Mark")
IOI_TEMPLATES = (
    "When {a} and {b} went to the store, {s} gave a drink to",
    "After {a} and {b} met at the park, {s} handed a book to",
    "Then {a} and {b} had lunch at home, and {s} passed the salt to",
)
# (prompt, answer): the answer follows the prompt; the corrupted prompt takes another fact's subject
FACTS = (
    ("The Eiffel Tower is in the city of", " Paris"),
    ("The Colosseum is in the city of", " Rome"),
    ("The Brandenburg Gate is in the city of", " Berlin"),
    ("Big Ben is in the city of", " London"),
    ("The Sagrada Familia is in the city of", " Barcelona"),
    ("The Statue of Liberty is in the city of", " New York"),
    ("The Acropolis is in the city of", " Athens"),
    ("The Kremlin is in the city of", " Moscow"),
    ("The Golden Gate Bridge is in the city of", " San Francisco"),
    ("The Forbidden City is in the city of", " Beijing"),
)
YEAR_TEMPLATE = "The war lasted from the year {c}{yy:02d} to the year {c}"
# Sentence similarity: reference sentence -> words of its topic. A clean sentence names a word of the reference's
# topic, its corrupted twin a word of another topic, in the same frame.
TOPICS = {
    "A man is playing the guitar on stage.": ("piano", "violin", "drums", "song", "band", "concert"),
    "She is cooking pasta in the kitchen.": ("soup", "bread", "rice", "pizza", "dinner", "meal"),
    "The team won the football match.": ("game", "soccer", "tennis", "player", "league", "goal"),
    "A dog is running in the park.": ("cat", "puppy", "horse", "pet", "rabbit", "bird"),
    "It is raining heavily outside today.": ("storm", "snow", "rain", "wind", "weather", "cloud"),
}
FRAMES = ("The story was about a {w}.", "We talked about the {w} all evening.", "I keep thinking about that {w}.")
# what a task's score is, by the kind of model it needs
LOGIT_DIFF, COSINE = "logit difference", "cosine similarity"


@dataclass(frozen=True)
class Pair:
    """One clean prompt, its corrupted twin (same length in tokens), and the two next tokens compared."""

    clean: tuple  # token ids of the clean prompt (n,)
    corrupted: tuple  # token ids of the corrupted prompt (n,), differing from the clean one somewhere
    answer: int  # the token the clean prompt should be continued with
    wrong: int  # the competing token (what the corrupted prompt suggests)
    label: str  # a short description, e.g. "Mary vs John"
    clean_tokens: tuple = ()  # display labels of the clean prompt's tokens
    corrupted_tokens: tuple = ()  # and of the corrupted prompt's
    note: str = ""  # said to the user, e.g. that only the first token of a multi-token answer is used
    # similarity pairs (answer and wrong are -1): the reference sentence and its embedding (d_model floats)
    reference_text: str = ""
    reference: tuple = ()

    def __post_init__(self):
        if len(self.clean) != len(self.corrupted) or not self.clean:
            raise ValueError(f"a pair needs two prompts of the same positive length, not {len(self.clean)} and "
                             f"{len(self.corrupted)}")

    @property
    def n(self) -> int:
        return len(self.clean)

    @property
    def similarity(self) -> bool:
        """True when the score is the sentence embedding's cosine similarity to `reference`."""
        return bool(self.reference)


@dataclass(frozen=True)
class TaskSet:
    """Several pairs of one task."""

    name: str  # "ioi", "induction", "greater_than", "factual", "similarity" or "user"
    title: str  # shown to the user
    pairs: tuple  # (Pair, ...)

    @property
    def measure(self) -> str:
        """What the score is: LOGIT_DIFF or COSINE."""
        return COSINE if self.pairs and self.pairs[0].similarity else LOGIT_DIFF


def ids_of(tokenizer, text: str) -> list[int]:
    """Token ids of `text` as a prompt of a causal LM: the beginning-of-text token only where the tokenizer adds
    one to every text (no separator at the end, whose next token would be read instead)."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is not None and getattr(tokenizer, "add_bos_token", False):
        ids = [bos] + ids
    return ids


def _labels(tokenizer, ids) -> tuple:
    return tuple(tokenizer.decode([int(i)]) for i in ids)


def _single(tokenizer, word: str) -> int | None:
    """The id of `word` when the tokenizer reads it as one token, else None."""
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    return int(ids[0]) if len(ids) == 1 else None


def _next_token(tokenizer, prompt_ids: list, prompt: str, continuation: str) -> int | None:
    """The first token of `continuation` written after `prompt`, when the prompt's own tokens stay as they are;
    else (a tokenizer that would merge them) the first token of `continuation` read alone."""
    full = ids_of(tokenizer, prompt + continuation)
    if len(full) > len(prompt_ids) and full[:len(prompt_ids)] == prompt_ids:
        return int(full[len(prompt_ids)])
    alone = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    return int(alone[0]) if alone else None


def _pair(tokenizer, clean: list, corrupted: list, answer: int, wrong: int, label: str, note: str = "",
          reference_text: str = "", reference: tuple = ()) -> Pair:
    return Pair(tuple(clean), tuple(corrupted), int(answer), int(wrong), label, _labels(tokenizer, clean),
                _labels(tokenizer, corrupted), note, reference_text, tuple(float(v) for v in reference))


def ioi(tokenizer, n_pairs: int = 8, seed: int = 0) -> TaskSet:
    """Indirect-object identification: "When Mary and John went to the store, John gave a drink to" -> " Mary"
    against " John"; the corrupted prompt names a third person where John is repeated, so nothing singles out
    Mary any more."""
    rng = np.random.default_rng(seed)
    names = [n for n in NAMES if _single(tokenizer, " " + n) is not None]
    if len(names) < 3:
        raise BadInput("This model's tokenizer splits the names of the indirect-object task into several tokens, "
                       "so the task cannot be built for it.")
    pairs = []
    for k in range(n_pairs * 4):
        if len(pairs) == n_pairs:
            break
        a, b, c = rng.choice(names, size=3, replace=False)
        template = IOI_TEMPLATES[k % len(IOI_TEMPLATES)]
        clean = ids_of(tokenizer, template.format(a=a, b=b, s=b))
        corrupted = ids_of(tokenizer, template.format(a=a, b=b, s=c))
        if len(clean) != len(corrupted):
            continue
        pairs.append(_pair(tokenizer, clean, corrupted, _single(tokenizer, " " + a), _single(tokenizer, " " + b),
                           f"{a} vs {b}"))
    return TaskSet("ioi", "Indirect object", tuple(pairs))


def induction(tokenizer, n_pairs: int = 8, length: int = 10, seed: int = 0) -> TaskSet:
    """Induction on random tokens: a random sequence, then its start again; the answer is the token that came
    next the first time. The corrupted prompt starts with other random tokens, so the repeat has no earlier
    occurrence to copy from; the wrong answer is what its first half would suggest."""
    rng = np.random.default_rng(seed)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    vocab = len(tokenizer)
    low, high = min(1000, vocab // 4), min(vocab, 20000)
    pool = np.array([i for i in range(low, high) if i not in special])
    half = length // 2
    pairs = []
    for _ in range(n_pairs):
        first, other = rng.choice(pool, size=(2, length), replace=False)
        clean = list(first) + list(first[:half])
        corrupted = list(other) + list(first[:half])
        pairs.append(_pair(tokenizer, clean, corrupted, first[half], other[half],
                           f"repeat of {length} random tokens"))
    return TaskSet("induction", "Induction", tuple(pairs))


def greater_than(tokenizer, n_pairs: int = 8, seed: int = 0) -> TaskSet:
    """Greater-than with years: "from the year 1732 to the year 17" is continued with a later year; the answer
    is the first token of a year after 32, the wrong answer that of a year before it. The corrupted prompt
    starts in 1701, where no year of the century is earlier."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n_pairs * 4):
        if len(pairs) == n_pairs:
            break
        century = int(rng.integers(12, 20))
        yy = int(rng.integers(2, 9)) * 10 + int(rng.integers(1, 10))  # tens digit 2..8
        text = YEAR_TEMPLATE.format(c=century, yy=yy)
        clean = ids_of(tokenizer, text)
        corrupted = ids_of(tokenizer, YEAR_TEMPLATE.format(c=century, yy=1))
        later = (yy // 10 + 1) * 10 + int(rng.integers(0, 10))  # a later decade
        earlier = int(rng.integers(0, yy // 10)) * 10 + int(rng.integers(1, 10))  # an earlier decade
        answer = _next_token(tokenizer, clean, text, f"{later:02d}")
        wrong = _next_token(tokenizer, clean, text, f"{earlier:02d}")
        if len(clean) != len(corrupted) or answer is None or wrong is None or answer == wrong:
            continue
        pairs.append(_pair(tokenizer, clean, corrupted, answer, wrong,
                           f"{century}{yy:02d}: {century}{later:02d} vs {century}{earlier:02d}"))
    return TaskSet("greater_than", "Greater-than", tuple(pairs))


def factual(tokenizer, n_pairs: int = 8) -> TaskSet:
    """Factual recall: "The Eiffel Tower is in the city of" -> " Paris"; the corrupted prompt names another
    landmark (with as many tokens), whose city is the wrong answer. A city of several tokens is compared by its
    first token."""
    encoded = [(ids_of(tokenizer, prompt), prompt, city) for prompt, city in FACTS]
    pairs = []
    for ids, prompt, city in encoded:
        for other_ids, other_prompt, other_city in encoded:
            if len(pairs) == n_pairs:
                break
            if other_prompt == prompt or len(other_ids) != len(ids):
                continue
            answer = _next_token(tokenizer, ids, prompt, city)
            wrong = _next_token(tokenizer, ids, prompt, other_city)
            if answer is None or wrong is None or answer == wrong:
                continue
            pairs.append(_pair(tokenizer, ids, other_ids, answer, wrong, f"{city.strip()} vs {other_city.strip()}"))
    return TaskSet("factual", "Factual recall", tuple(pairs))


def similarity(tokenizer, embed, n_pairs: int = 8, seed: int = 0) -> TaskSet:
    """Sentence similarity for an encoder: "The story was about a piano." against the reference "A man is playing
    the guitar on stage." (the score: cosine similarity of the two mean-pooled sentence embeddings); the corrupted
    sentence names a word of another topic ("... about a soup."). embed: text -> the reference's embedding."""
    rng = np.random.default_rng(seed)
    refs = list(TOPICS)
    embedded = {}
    pairs = []
    for k in range(n_pairs * 4):
        if len(pairs) == n_pairs:
            break
        ref = refs[k % len(refs)]
        other = refs[(k + 1 + int(rng.integers(0, len(refs) - 1))) % len(refs)]
        word, foil = str(rng.choice(TOPICS[ref])), str(rng.choice(TOPICS[other]))
        frame = FRAMES[k % len(FRAMES)]
        clean = tokenizer(frame.format(w=word))["input_ids"]
        corrupted = tokenizer(frame.format(w=foil))["input_ids"]
        if len(clean) != len(corrupted) or clean == corrupted:
            continue
        if ref not in embedded:
            embedded[ref] = embed(ref)
        pairs.append(_pair(tokenizer, clean, corrupted, -1, -1, f"{word} vs {foil}", reference_text=ref,
                           reference=embedded[ref]))
    return TaskSet("similarity", "Sentence similarity", tuple(pairs))


def _user_texts(fields) -> None:
    for what, text in fields:
        if not text or not text.strip():
            raise BadInput(f"The {what} is empty. Fill in every box of your pair.")


def _same_length(tokenizer, clean: str, corrupted: str, a: list, b: list) -> None:
    if clean == corrupted:
        raise BadInput("The clean and corrupted prompts are the same, so patching one into the other changes "
                       "nothing. Change a word of the corrupted prompt.")
    if len(a) != len(b):
        clean_shown, corrupted_shown = (" | ".join(_labels(tokenizer, ids)) for ids in (a, b))
        raise BadInput(f"The clean prompt has {count_text(len(a))} tokens and the corrupted prompt "
                       f"{count_text(len(b))}, but patching "
                       f"needs the same number at the same positions. Clean: {clean_shown}. Corrupted: "
                       f"{corrupted_shown}.")


def user_similarity_pair(tokenizer, clean: str, corrupted: str, reference: str, embed) -> Pair:
    """An encoder's pair from the user's two sentences and the reference sentence both are compared with; the
    same plain errors as user_pair."""
    _user_texts((("clean sentence", clean), ("corrupted sentence", corrupted), ("reference sentence", reference)))
    a, b = tokenizer(clean)["input_ids"], tokenizer(corrupted)["input_ids"]
    _same_length(tokenizer, clean, corrupted, a, b)
    return _pair(tokenizer, a, b, -1, -1, "your pair", reference_text=reference.strip(),
                 reference=embed(reference.strip()))


def user_pair(tokenizer, clean: str, corrupted: str, answer: str, wrong: str) -> Pair:
    """A pair from the user's own two prompts and two answers (each answer written as it follows the prompt,
    usually with its leading space). Only the first token of an answer of several tokens is compared, and
    `note` says so. Raises BadInput for an empty field, equal prompts, prompts of different lengths in tokens
    (both tokenisations shown) and answers whose first tokens are the same."""
    _user_texts((("clean prompt", clean), ("corrupted prompt", corrupted), ("answer", answer),
                 ("wrong answer", wrong)))
    a, b = ids_of(tokenizer, clean), ids_of(tokenizer, corrupted)
    _same_length(tokenizer, clean, corrupted, a, b)
    notes, firsts = [], []
    for what, text in (("answer", answer), ("wrong answer", wrong)):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) > 1:
            notes.append(f"The {what} {text.strip()!r} is {count_text(len(ids))} tokens; only its first token, "
                         f"{tokenizer.decode([int(ids[0])])!r}, is compared.")
        firsts.append(int(ids[0]))
    if firsts[0] == firsts[1]:
        raise BadInput("The answer and the wrong answer begin with the same token, so their logit difference is "
                       "always zero. Choose answers that differ in their first token.")
    return _pair(tokenizer, a, b, firsts[0], firsts[1], "your pair", " ".join(notes))


TASKS = {"ioi": ioi, "induction": induction, "greater_than": greater_than, "factual": factual}
ENCODER_TASKS = {"similarity": similarity}  # these also take `embed`


def task_set(tokenizer, name: str, n_pairs: int = 8, embed=None) -> TaskSet:
    """The generated task set `name` (one of TASKS, or of ENCODER_TASKS given `embed`: text -> sentence
    embedding) for this tokenizer; BadInput when it has no pair."""
    if name in ENCODER_TASKS and embed is not None:
        found = ENCODER_TASKS[name](tokenizer, embed, n_pairs=n_pairs)
    elif name in TASKS:
        found = TASKS[name](tokenizer, n_pairs=n_pairs)
    else:
        raise BadInput(f"There is no task called {name!r}; the tasks are {', '.join(TASKS)} for a causal "
                       f"language model and {', '.join(ENCODER_TASKS)} for an encoder.")
    if not found.pairs:
        raise BadInput(f"No pair of the {found.title.lower()} task keeps the same number of tokens in this model's "
                       "tokenizer, so the task cannot be built for it.")
    return found


# ------------------------------------------------------------------ the metric
def logit_diff(logits, pair: Pair):
    """logits (..., vocab) at the last position -> (...) logit of the answer minus logit of the wrong answer."""
    return logits[..., pair.answer] - logits[..., pair.wrong]


def sentence_embedding(out):
    """An encoder's output -> (batch, d) float: the mean of its last hidden states over every position, special
    tokens included (unpadded prompts: the Trust page's mean pooling over the attention mask)."""
    return out.last_hidden_state.float().mean(1)


def score(out, pair: Pair):
    """A model output for a batch of one prompt's runs -> (batch,) float tensor: the logit difference at the last
    position, or for a similarity pair the cosine similarity of the sentence embedding (the mean of the last
    hidden states over every position, special tokens included) to the reference's."""
    import torch

    if pair.similarity:
        pooled = sentence_embedding(out)  # (batch, d)
        reference = torch.tensor(pair.reference, dtype=pooled.dtype)
        return torch.nn.functional.cosine_similarity(pooled, reference[None], dim=-1)
    return logit_diff(out.logits[:, -1].float(), pair)


@dataclass(frozen=True)
class Metric:
    """The score (logit difference or cosine similarity) scaled so the corrupted run scores 0 and the clean run
    1."""

    clean: float  # score of the clean run
    corrupted: float  # of the corrupted run

    def __post_init__(self):
        if self.clean == self.corrupted:
            raise BadInput("The clean and corrupted prompts give the same score, so there is no effect to restore "
                           "and no scale to measure a patch on.")

    def __call__(self, diff):
        """Score(s) -> normalised score(s): (diff - corrupted) / (clean - corrupted)."""
        return (diff - self.corrupted) / (self.clean - self.corrupted)


def clean_accuracy(clean_logits, pairs) -> float:
    """Share of pairs whose clean run puts the answer above the wrong answer; clean_logits: (pairs, vocab) at the
    last position."""
    wins = [float(logit_diff(row, p)) > 0 for row, p in zip(clean_logits, pairs)]
    return float(np.mean(wins)) if wins else float("nan")
