"""What sampling does to a next-token distribution: temperature, top-k and top-p, and the draw."""
from __future__ import annotations

from dataclasses import dataclass

from attnviz.errors import BadInput


@dataclass(frozen=True)
class Sampling:
    """How each next token is chosen."""

    greedy: bool = True  # the most likely token every step (temperature, top-k and top-p are not used)
    temperature: float = 1.0  # logits are divided by it before the softmax; below 1 sharpens, above 1 flattens
    top_k: int = 0  # keep only the k most likely tokens (0: keep all)
    top_p: float = 1.0  # keep the fewest most likely tokens whose probabilities reach p (1: keep all)
    seed: int = 0  # the random generator's seed: the same seed draws the same tokens
    max_new_tokens: int = 32  # tokens to write at most
    stop_at_eos: bool = True  # stop when the model writes its end-of-sequence token

    def checked(self) -> "Sampling":
        """The settings, or BadInput with a sentence for a value that cannot be used. Temperature 0 and
        top-p 0 mean greedy decoding (the limit of both), said in `notes`."""
        if self.max_new_tokens < 1:
            raise BadInput(f"Max new tokens must be at least 1, got {self.max_new_tokens}.")
        if self.temperature < 0:
            raise BadInput(f"The temperature must be 0 or more, got {self.temperature:g}.")
        if not 0 <= self.top_p <= 1:
            raise BadInput(f"Top-p must be between 0 and 1, got {self.top_p:g}.")
        if self.top_k < 0:
            raise BadInput(f"Top-k must be 0 (keep all) or more, got {self.top_k}.")
        return self

    @property
    def is_greedy(self) -> bool:
        return self.greedy or self.temperature == 0 or self.top_p == 0 or self.top_k == 1

    def notes(self) -> list[str]:
        """Plain sentences about settings that turn sampling into greedy decoding."""
        if self.greedy:
            return []
        said = []
        if self.temperature == 0:
            said.append("Temperature 0 is greedy decoding: the most likely token every step.")
        if self.top_p == 0:
            said.append("Top-p 0 keeps only the most likely token: greedy decoding.")
        if self.top_k == 1:
            said.append("Top-k 1 keeps only the most likely token: greedy decoding.")
        return said


def warp(logits, s: Sampling):
    """Next-token probabilities after sampling's changes, in transformers' order: temperature, then top-k,
    then top-p. logits: float tensor (vocab,). Returns probabilities (vocab,) summing to 1 (float32);
    a greedy setting gives all the probability to the most likely token."""
    import torch

    logits = logits.float()
    if s.is_greedy:
        out = torch.zeros_like(logits)
        out[int(torch.argmax(logits))] = 1.0
        return out
    z = logits / s.temperature
    if 0 < s.top_k < z.numel():
        kth = torch.topk(z, s.top_k).values[-1]
        z = z.masked_fill(z < kth, float("-inf"))
    if s.top_p < 1:
        order = torch.argsort(z, descending=True)
        p = torch.softmax(z[order], dim=-1)
        before = torch.cumsum(p, dim=-1) - p  # probability of the tokens more likely than each one
        drop = before >= s.top_p  # the most likely token always stays (before = 0 < top_p)
        z = z.clone()
        z[order[drop]] = float("-inf")
    return torch.softmax(z, dim=-1)


def draw(probs, generator) -> int:
    """One token id drawn from `probs` (vocab,) with a torch.Generator (the argmax when one token has it all)."""
    import torch

    top = int(torch.argmax(probs))
    if float(probs[top]) >= 1.0:
        return top
    return int(torch.multinomial(probs, 1, generator=generator))
