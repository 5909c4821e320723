"""Tiny Hugging Face transformers built from configs (random weights, no download), for trying
the profiler on transformer graphs: ``pyfxprof profile tests.tiny_transformers:tiny_bert
--input 1x32:int64``."""

from torch import nn


def tiny_bert() -> nn.Module:
    """A 2-layer BertModel, hidden size 64, 4 heads, vocabulary 100, in eval mode."""
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128,
                        max_position_embeddings=128)
    return BertModel(config).eval()


def tiny_gpt2() -> nn.Module:
    """A 2-layer GPT2Model, embedding size 64, 4 heads, vocabulary 100, in eval mode."""
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=128)
    return GPT2Model(config).eval()
