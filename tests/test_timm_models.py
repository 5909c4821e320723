"""A timm model with a dynamic image size profiles node by node at two sizes, each profile with
its own shapes and FLOPs (behaviour, never speed)."""

import pytest
import torch

import pyfxprof

timm = pytest.importorskip("timm")


def tiny_vit():
    return timm.models.VisionTransformer(img_size=64, patch_size=8, embed_dim=128, depth=2,
                                         num_heads=4, mlp_ratio=2.0, num_classes=10,
                                         dynamic_img_size=True).eval()


def test_vit_with_dynamic_image_size_at_two_sizes():
    # Coverage is a timing figure (nodes' share of the run): 96-99% here on a quiet machine, and
    # preemptions land between nodes too, so the bound leaves room for a loaded CI machine.
    model = tiny_vit()
    small, large = (pyfxprof.profile(model, (torch.randn(1, 3, size, size),), runs=15, warmup=2,
                                     progress=False) for size in (64, 128))
    for prof in (small, large):
        # the nodes' share of the graph's run (coverage is of the user's call)
        coverage = prof.meta.get("graph_coverage", prof.meta["coverage"])
        assert prof.meta["capture_mode"] in ("fx", "dynamo") and coverage >= 0.90
        assert {"blocks.0", "blocks.1"} <= {".".join(p.split(".")[:2])
                                            for p in prof.nodes["module_path"]}
        assert prof.meta["flops"] == int(prof.nodes["flops"].sum()) > 0
    patches = [p.nodes.loc[p.nodes["module_path"] == "patch_embed.proj", "output_shapes"].iloc[0]
               for p in (small, large)]
    assert patches == ["[1, 128, 8, 8] float32", "[1, 128, 16, 16] float32"]
    assert large.meta["flops"] > 3 * small.meta["flops"]  # 4x the tokens
