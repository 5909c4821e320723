"""Tiny Hugging Face transformers models built from configs (random weights, no hub access),
with the dict inputs users call them with. Shared by the transformers tests."""

import torch

transformers = __import__("pytest").importorskip("transformers")

VOCAB = 128
#: Small enough to build and capture in a second or two, large enough that a node's work is
#: not dwarfed by the Python between nodes (coverage is measured on these).
_SIZES = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
              vocab_size=VOCAB, max_position_embeddings=128)
_TOKENS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)


def token_ids(length: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randint(3, VOCAB, (1, length), generator=torch.Generator().manual_seed(seed))


def bert(layers: int = 2):
    config = transformers.BertConfig(**{**_SIZES, "num_hidden_layers": layers}, pad_token_id=0)
    ids = token_ids()
    return transformers.BertModel(config), {"input_ids": ids,
                                            "attention_mask": torch.ones_like(ids)}


def gpt2():
    config = transformers.GPT2Config(n_embd=256, n_layer=2, n_head=4, vocab_size=VOCAB,
                                     n_positions=128, bos_token_id=1, eos_token_id=2)
    return transformers.GPT2LMHeadModel(config), {"input_ids": token_ids()}


def llama():
    config = transformers.LlamaConfig(**_SIZES, **_TOKENS, num_key_value_heads=2)
    return transformers.LlamaForCausalLM(config), {"input_ids": token_ids()}


def t5():
    config = transformers.T5Config(d_model=256, d_kv=64, d_ff=512, num_layers=2, num_heads=4,
                                   vocab_size=VOCAB, decoder_start_token_id=0, **_TOKENS)
    return transformers.T5Model(config), {"input_ids": token_ids(),
                                          "decoder_input_ids": token_ids(16, seed=1)}


def vit():
    config = transformers.ViTConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=512, image_size=64, patch_size=8)
    return transformers.ViTModel(config), {"pixel_values": torch.randn(1, 3, 64, 64)}


def distilbert():
    config = transformers.DistilBertConfig(dim=256, n_layers=2, n_heads=4, hidden_dim=512,
                                           vocab_size=VOCAB, pad_token_id=0)
    return transformers.DistilBertModel(config), {"input_ids": token_ids()}


def whisper():
    config = transformers.WhisperConfig(
        d_model=256, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=512, decoder_ffn_dim=512, num_mel_bins=16,
        max_source_positions=32, vocab_size=VOCAB, max_target_positions=64,
        decoder_start_token_id=1, **_TOKENS)
    return transformers.WhisperModel(config), {"input_features": torch.randn(1, 16, 64),
                                               "decoder_input_ids": token_ids(16)}


def mixtral():
    config = transformers.MixtralConfig(**_SIZES, **_TOKENS, num_key_value_heads=2,
                                        num_local_experts=4, num_experts_per_tok=2)
    return transformers.MixtralForCausalLM(config), {"input_ids": token_ids()}


def qwen2_moe():
    config = transformers.Qwen2MoeConfig(**_SIZES, **_TOKENS, num_key_value_heads=2,
                                         num_experts=4, num_experts_per_tok=2,
                                         moe_intermediate_size=64,
                                         shared_expert_intermediate_size=64)
    return transformers.Qwen2MoeForCausalLM(config), {"input_ids": token_ids()}


class WrappedBert(torch.nn.Module):
    """A user's module around a BERT backbone (the shape of most fine-tuning code)."""

    def __init__(self, layers: int = 12):
        super().__init__()
        self.bert = bert(layers)[0]
        self.head = torch.nn.Linear(256, 2)

    def forward(self, input_ids):
        return self.head(self.bert(input_ids=input_ids).last_hidden_state[:, 0])


class WrappedGPT2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt2 = gpt2()[0]

    def forward(self, input_ids):
        return self.gpt2(input_ids=input_ids).logits


def tiny_llama():
    """The model alone, for the CLI: `pyfxprof profile tests.hf_models:tiny_llama
    --input input_ids=1x16:int64`."""
    return llama()[0]
