"""Profile.replay against the truth it stands for: each node's module timed alone with bench()
on an input of its recorded shape, rounds alternating which goes first, on ResNet-18; and a
node's warm and cold replays beside its in-graph median.

    python benchmarks/bench_replay.py [--rounds 5] [--threads 1] [--budget 0.5]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torchvision

import pyfxprof

NODES = ("layer3_1_conv1", "layer1_0_conv1", "layer4_1_conv2", "bn1", "fc")


def module_alone(model: torch.nn.Module, prof, node: str, budget: float) -> float:
    """bench() median (ns) of the node's module on a fresh input of its recorded shape."""
    row = prof.nodes[prof.nodes["name"] == node].iloc[0]
    shape = [int(v) for v in row["input_shapes"].strip("()").split("]")[0].strip("[").split(",")]
    with torch.no_grad():
        return pyfxprof.bench(model.get_submodule(row["module_path"]), torch.randn(shape),
                              budget=budget, profile=False).median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget", type=float, default=0.5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = torchvision.models.resnet18().eval()
    prof = pyfxprof.profile(model, (torch.randn(1, 3, 96, 96),), runs=50, warmup=10,
                            progress=False)
    ratios: dict[str, list[float]] = {node: [] for node in NODES}
    for round_ in range(args.rounds):
        for node in NODES:
            first_replay = round_ % 2 == 0
            for turn in ((0, 1) if first_replay else (1, 0)):
                if turn == 0:
                    replayed = prof.replay(node, budget=args.budget).warm_ns
                else:
                    alone = module_alone(model, prof, node, args.budget)
            ratios[node].append(replayed / alone)
    print(f"threads {torch.get_num_threads()}, {args.rounds} rounds")
    for node, values in ratios.items():
        print(f"{node:<16} replay warm / module alone: median {np.median(values):.3f} "
              f"(rounds {min(values):.3f} - {max(values):.3f})")
    print(prof.replay("bn1", budget=4 * args.budget, cache="both").table())


if __name__ == "__main__":
    main()
