"""Tiny randomly initialised models of each architecture, built offline inside the tests."""
from __future__ import annotations

import torch

from attnviz.models.hf import model_facts
from attnviz.types import LoadedModel


def minilm_tokenizer():
    from transformers import AutoTokenizer

    from attnviz.models.registry import PACKAGED, package_dir

    folder, _ = PACKAGED["minilm"].locate(package_dir(PACKAGED["minilm"].package))
    return AutoTokenizer.from_pretrained(folder)


def _configs(vocab: int):
    from transformers import BartConfig, BertConfig, GPT2Config, LlamaConfig, T5Config

    return {
        "bert": BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=64),
        "gpt2": GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=64),
        "llama": LlamaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64),
        "t5": T5Config(vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                       num_heads=4, decoder_start_token_id=0, pad_token_id=0),
        "bart": BartConfig(vocab_size=vocab, d_model=32, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, max_position_embeddings=64, decoder_start_token_id=2,
                           pad_token_id=0, bos_token_id=101, eos_token_id=102),
    }


ARCHES = ("bert", "gpt2", "llama", "t5", "bart")


def build(arch: str, tokenizer=None, seed: int = 0):
    """(model, tokenizer, config) for a tiny random model of `arch`, eager attention."""
    import transformers

    from attnviz.models.hf import AUTO_CLASS, model_kind

    tokenizer = tokenizer or minilm_tokenizer()
    config = _configs(len(tokenizer))[arch]
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    auto = getattr(transformers, AUTO_CLASS[model_kind(config)])
    model = auto.from_config(config, attn_implementation="eager").eval()
    return model, tokenizer, config


def tiny_loaded(arch: str, tokenizer=None, seed: int = 0) -> LoadedModel:
    model, tok, config = build(arch, tokenizer, seed)
    return LoadedModel(key=f"tiny-{arch}", model=model, tokenizer=tok, facts=model_facts(config, f"tiny-{arch}"))


# ------------------------------------------------------------------ long inputs
def _long_configs(vocab: int, window: int):
    from transformers import LlamaConfig, MistralConfig

    return {
        # grouped-query attention (6 query heads over 2 key/value heads) and a long context
        "llama-long": LlamaConfig(vocab_size=vocab, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                                  num_key_value_heads=2, intermediate_size=64, max_position_embeddings=4096),
        # Mistral's sliding window, smaller than the inputs the tests use
        "mistral-window": MistralConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=4096,
                                        sliding_window=window, head_dim=8),
    }


def tiny_long_loaded(arch: str, tokenizer=None, seed: int = 0, window: int = 7) -> LoadedModel:
    """A tiny random "llama-long" (GQA, 4,096-token context) or "mistral-window" (sliding window
    `window`) model, eager attention, as a LoadedModel."""
    import transformers

    tokenizer = tokenizer or minilm_tokenizer()
    config = _long_configs(len(tokenizer), window)[arch]
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    return LoadedModel(key=f"tiny-{arch}", model=model, tokenizer=tokenizer, facts=model_facts(config, f"tiny-{arch}"))


# ------------------------------------------------------------------ image models

def saved_vision(folder, kind: str = "vit"):
    """A tiny random ViT or DeiT (2 layers x 4 heads; 32 x 32 RGB images in 16 patches of 8 x 8), or a BERT for
    a text model's folder (kind "bert"), saved with save_pretrained into `folder`; returns the folder."""
    from transformers import BertConfig, BertModel, DeiTConfig, DeiTModel, ViTConfig, ViTModel

    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    model = {"vit": lambda: ViTModel(ViTConfig(**small, image_size=32, patch_size=8, num_channels=3)),
             "deit": lambda: DeiTModel(DeiTConfig(**small, image_size=32, patch_size=8, num_channels=3)),
             "bert": lambda: BertModel(BertConfig(**small, vocab_size=50))}[kind]()
    model.save_pretrained(folder)
    return folder
