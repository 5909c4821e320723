"""The op kinds of the roofline's fixed costs: which kind a node is (from its target and
module type), and the kinds whose minimal call run.machine_peaks times once per machine."""

from __future__ import annotations

import re

#: Op kinds in matching order: (kind, words). The first kind with a word in the node's
#: target or module type (lowercased, split at every non-alphanumeric character) is the
#: node's: a word of 4 letters or more matches inside a token ("pool" in "pool2d"), a
#: shorter one only a whole token ("to", "mm"). A node matching none is "elementwise".
KIND_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("conv", ("conv",)),
    ("pool", ("pool",)),
    ("norm", ("norm",)),
    ("softmax", ("softmax",)),
    ("embedding", ("embedding",)),
    ("matmul", ("linear", "matmul", "addmm", "bmm", "einsum", "attention", "mm")),
    ("reduction", ("sum", "mean", "amax", "amin", "argmax", "prod", "var", "std")),
    ("copy", ("cat", "stack", "view", "reshape", "permute", "transpose", "contiguous",
              "flatten", "getitem", "expand", "split", "chunk", "clone", "squeeze", "to",
              "size", "getattr", "dropout", "identity")),
)
#: Every kind, in the order above, then the default.
KINDS = tuple(kind for kind, _ in KIND_WORDS) + ("elementwise",)


def op_kind(target: str, module_type: str = "") -> str:
    """The kind of a node for its fixed cost (KIND_WORDS), from its target and module type.

    Example:
        >>> op_kind("layer1.0.conv1", "Conv2d"), op_kind("torch.nn.functional.linear")
        ('conv', 'matmul')
        >>> op_kind("<built-in function add>"), op_kind("flatten")
        ('elementwise', 'copy')
    """
    tokens = [t for t in re.split(r"[^a-z0-9]+", f"{target} {module_type}".lower()) if t]
    for kind, keys in KIND_WORDS:
        if any(key in token if len(key) >= 4 else key == token
               for key in keys for token in tokens):
            return kind
    return "elementwise"
