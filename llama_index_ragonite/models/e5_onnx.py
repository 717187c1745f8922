"""E5's transformer layers as an ONNX Runtime graph, built in memory from ``E5Encoder``'s weights.

Why: the numpy pass runs the matrix products at BLAS speed, but each element-wise step
(GELU, softmax, layer norm, residual adds) is a separate single-threaded pass over memory,
about a third of the time. ONNX Runtime fuses them (``SkipLayerNormalization``,
``FastGelu``, scaled ``MatMul``) and threads them. On 2 cores it embeds ConfQuestions
evidences (dense vectors + latent terms) 1.4x faster and a query 1.6x faster
(benchmarks/encoder_speed.py), with the same float32 weights and arithmetic: vectors
equal to the numpy pass to cosine 1 - 1e-7. The matrix products are then nearly all the
time, and they already ran at BLAS speed.

``onnxruntime`` comes with chromadb anyway; the graph is made with the ``onnx`` package
from the weights already in memory: nothing is downloaded or written to disk.
"""

from __future__ import annotations

from typing import Callable, Dict, List

import numpy as np

OPSET = 20  # the first with a Gelu operator (tanh form, as the numpy pass computes it)
IR_VERSION = 9  # that of opset 20: an onnx newer than the installed onnxruntime must not stamp a later one


def onnx_layers(layers: List[Dict[str, np.ndarray]], heads: int, eps: float) -> Callable:
    """A function (hidden [B, L, H], padding [B, 1, 1, L]) -> final hidden states [B, L, H].

    Args:
        layers: ``E5Encoder``'s per-layer weights (``qkv``, ``out``, ``up``, ``down`` as
            [in, out] matrices, their biases, ``ln1``/``ln2`` as (weight, bias)).
        heads: attention heads.
        eps: layer-norm epsilon.

    Raises ImportError without ``onnx``/``onnxruntime``; an ORT too old for opset 20 fails here too.
    """
    from onnx import TensorProto, helper, numpy_helper

    H = layers[0]["out"].shape[0]
    weights: list = []
    nodes: list = []

    def const(name: str, value) -> str:
        weights.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind: str, inputs: list, n_out: int = 1, **attrs):
        outputs = [f"{kind}{len(nodes)}_{i}" for i in range(n_out)]
        nodes.append(helper.make_node(kind, inputs, outputs, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def dense(x: str, w: str, layer: dict, i: int) -> str:
        return op("Add", [op("MatMul", [x, const(f"{i}.{w}", layer[w])]), const(f"{i}.{w}_b", layer[w + "_b"])])

    split_heads = const("split_heads", np.array([0, 0, 3, heads, H // heads], np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, H], np.int64))
    scale = const("scale", np.float32(1.0 / np.sqrt(H // heads)))
    first = const("first", np.array([0], np.int64))
    x = "hidden"
    for i, layer in enumerate(layers):
        qkv = op("Transpose", [op("Reshape", [dense(x, "qkv", layer, i), split_heads])], perm=[2, 0, 3, 1, 4])
        q, k, v = (op("Squeeze", [t, first]) for t in op("Split", [qkv], 3, axis=0, num_outputs=3))
        scores = op("Mul", [op("MatMul", [q, op("Transpose", [k], perm=[0, 1, 3, 2])]), scale])
        probs = op("Softmax", [op("Add", [scores, "padding"])], axis=-1)
        attended = op("Reshape", [op("Transpose", [op("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_heads])
        residual = op("Add", [dense(attended, "out", layer, i), x])
        x = op("LayerNormalization", [residual, const(f"{i}.ln1_w", layer["ln1"][0]), const(f"{i}.ln1_b", layer["ln1"][1])], axis=-1, epsilon=eps)  # fmt: skip
        up = op("Gelu", [dense(x, "up", layer, i)], approximate="tanh")
        residual = op("Add", [dense(up, "down", layer, i), x])
        x = op("LayerNormalization", [residual, const(f"{i}.ln2_w", layer["ln2"][0]), const(f"{i}.ln2_b", layer["ln2"][1])], axis=-1, epsilon=eps)  # fmt: skip
    nodes.append(helper.make_node("Identity", [x], ["states"]))
    graph = helper.make_graph(
        nodes,
        "e5_layers",
        [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", H]),
            helper.make_tensor_value_info("padding", TensorProto.FLOAT, ["B", 1, 1, "L"]),
        ],
        [helper.make_tensor_value_info("states", TensorProto.FLOAT, ["B", "L", H])],
        weights,
    )
    return _runner(graph, ("hidden", "padding"))


def onnx_term_peaks(sae_w: np.ndarray, sae_b: np.ndarray) -> Callable:
    """A function (states [B, L, H], skip [B, L, 1]) -> per-sequence peaks [B, S] of the sparse head.

    ``skip`` is 0 for the tokens to pool and -inf-like for the others (prefix, specials,
    padding); the bias is added to the peaks only, as max_t(a_t + b) = max_t(a_t) + b.
    """
    from onnx import TensorProto, helper, numpy_helper

    H, S = sae_w.shape
    nodes = [
        helper.make_node("MatMul", ["states", "sae_w"], ["act"]),
        helper.make_node("Add", ["act", "skip"], ["masked"]),
        helper.make_node("ReduceMax", ["masked"], ["peak"], axes=[1], keepdims=0),
        helper.make_node("Add", ["peak", "sae_b"], ["peaks"]),
    ]
    graph = helper.make_graph(
        nodes,
        "e5_term_peaks",
        [
            helper.make_tensor_value_info("states", TensorProto.FLOAT, ["B", "L", H]),
            helper.make_tensor_value_info("skip", TensorProto.FLOAT, ["B", "L", 1]),
        ],
        [helper.make_tensor_value_info("peaks", TensorProto.FLOAT, ["B", S])],
        [numpy_helper.from_array(sae_w, "sae_w"), numpy_helper.from_array(sae_b, "sae_b")],
    )
    return _runner(graph, ("states", "skip"), opset=17)


def _runner(graph, inputs, opset: int = OPSET) -> Callable:
    import onnxruntime as ort
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle ORT threads would otherwise spin, taking the cores from the numpy steps in between.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def run(*arrays: np.ndarray) -> np.ndarray:
        return session.run(None, dict(zip(inputs, arrays)))[0]

    return run
