"""Small synthetic Profiles (seeded numpy) for the advisor's tests: node specs with a median."""

import numpy as np
import pandas as pd

from pyfxprof.data.profile import Profile

US = 1_000  # ns


def node(name, median_ns, op="call_function", target=None, module_type="Net", inputs=(),
         **extra):
    """One node spec: a dict of nodes-table columns plus its median time."""
    target = name if target is None else target
    path = target if op == "call_module" else ""
    return dict(name=name, op=op, target=target, module_path=path, module_type=module_type,
                module_stack=(path,) if path else (), inputs=tuple(inputs),
                median=median_ns, **extra)


def module(name, median_ns, module_type, inputs=(), target=None, **extra):
    return node(name, median_ns, "call_module", target or name, module_type, inputs, **extra)


def make_profile(specs, runs=21, noise=0.0, noisy=(), seed=0, meta=None, device=None,
                 drop=()):
    """A Profile whose node i takes about specs[i]["median"] ns per run.

    ``noise`` is the relative std of every node, ``noisy`` names nodes with 30% noise;
    ``device`` gives device medians (ns) per node; ``drop`` removes nodes-table columns.
    """
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(specs)
    medians = frame.pop("median").to_numpy(dtype=np.float64)
    rel = np.where(frame["name"].isin(noisy), 0.3, noise)
    samples = np.rint(medians * (1 + rel * rng.standard_normal((runs, len(frame)))))
    samples = np.clip(samples, 0, None).astype(np.int64)
    device_samples = None
    if device is not None:
        device_samples = np.tile(np.asarray(device, dtype=np.int64), (runs, 1))
    frame.insert(0, "index", np.arange(len(frame)))
    meta = {"model": "toy", "device": "cuda:0" if device is not None else "cpu",
            "threads": 2, **(meta or {})}
    return Profile(frame.drop(columns=list(drop)), samples, samples.sum(axis=1), meta,
                   device_samples)


def conv_bn_specs():
    """conv1 -> bn1 -> relu -> conv2 -> bn2 -> add(bn2, conv2): only conv1/bn1 is fusible."""
    return [
        module("conv1", 400 * US, "Conv2d", ["x"]),
        module("bn1", 100 * US, "BatchNorm2d", ["conv1"]),
        node("relu", 50 * US, target="torch.relu", inputs=["bn1"]),
        module("conv2", 300 * US, "Conv2d", ["relu"]),
        module("bn2", 80 * US, "BatchNorm2d", ["conv2"]),
        node("add", 70 * US, target="operator.add", inputs=["bn2", "conv2"]),
    ]


def only(advice, rule):
    found = [s for s in advice if s.rule == rule]
    assert len(found) <= 1
    return found[0] if found else None
