"""Tiny Hugging Face transformers built from configs (random weights, no download), for trying
the profiler on transformer graphs: ``pyfxprof profile tests.tiny_transformers:tiny_bert
--input 1x32:int64``. Each is wrapped so that forward takes only the token ids and returns the
last hidden state (the command line passes positional inputs only)."""

import torch
from torch import nn


class LastHiddenState(nn.Module):
    """``model(input_ids).last_hidden_state``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).last_hidden_state


def tiny_bert() -> nn.Module:
    """A 2-layer BertModel, hidden size 64, 4 heads, vocabulary 100, in eval mode."""
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128,
                        max_position_embeddings=128)
    return LastHiddenState(BertModel(config)).eval()


def tiny_gpt2() -> nn.Module:
    """A 2-layer GPT2Model, embedding size 64, 4 heads, vocabulary 100, in eval mode."""
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=128,
                        bos_token_id=0, eos_token_id=0)
    return LastHiddenState(GPT2Model(config)).eval()


class LossWithLabels(nn.Module):
    """``model(input_ids=ids, labels=ids).loss``: a causal LM's training loss."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, labels=input_ids).loss


def tiny_llama_with_labels() -> nn.Module:
    """A 2-layer LlamaForCausalLM (hidden size 64, 4 heads, vocabulary 100) returning its loss
    on labels = the input ids, in train mode: ``pyfxprof profile
    tests.tiny_transformers:tiny_llama_with_labels --input 1x32:int64 --backward``."""
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
                         max_position_embeddings=128)
    return LossWithLabels(LlamaForCausalLM(config)).train()
