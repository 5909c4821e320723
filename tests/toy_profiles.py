"""The four-node nodes table (a conv, a nested conv and relu, a root add) several tests share."""

import pandas as pd


def toy_nodes(names=("conv1", "layer1_0_conv1", "layer1_0_relu", "add")) -> pd.DataFrame:
    """Identity columns of a small ResNet-like graph: conv1, layer1.0.{conv1,relu}, add."""
    return pd.DataFrame({
        "index": [0, 1, 2, 3], "name": list(names),
        "op": ["call_module", "call_module", "call_module", "call_function"],
        "target": ["conv1", "layer1.0.conv1", "layer1.0.relu", "operator.add"],
        "module_path": ["conv1", "layer1.0.conv1", "layer1.0.relu", ""],
        "module_type": ["Conv2d", "Conv2d", "ReLU", "Net"],
        "module_stack": [("conv1",), ("layer1", "layer1.0", "layer1.0.conv1"),
                         ("layer1", "layer1.0", "layer1.0.relu"), ()],
    })
