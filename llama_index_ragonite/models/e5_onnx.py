"""E5's transformer layers as an ONNX Runtime graph, built in memory from ``E5Encoder``'s weights.

Why: the numpy pass runs the matrix products at BLAS speed, but each element-wise step
(GELU, softmax, layer norm, residual adds) is a separate single-threaded pass over memory,
about a third of the time. ONNX Runtime fuses them (``SkipLayerNormalization``,
``FastGelu``; attention is its ``MultiHeadAttention``). On 2 cores it embeds ConfQuestions
evidences (dense vectors + latent terms) 1.3x faster and a query 1.7x faster
(``python benchmarks/run.py encoder_speed``), with the same float32 weights and arithmetic: vectors
equal to the numpy pass to cosine 1 - 1e-7. The matrix products are then nearly all the
time, and they already ran at BLAS speed.

``onnxruntime`` comes with chromadb anyway; the graph is made with the ``onnx`` package
from the weights already in memory: nothing is downloaded or written to disk.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

OPSET = 21  # Gelu (tanh form, as the numpy pass computes it) since 20; QuantizeLinear per block of a row since 21
IR_VERSION = 10  # that of opset 21: an onnx newer than the installed onnxruntime must not stamp a later one
WEIGHT_LEVELS = 63  # int8 weights in [-63, 63] (see int8_weights)
MS = "com.microsoft"  # ONNX Runtime's own operators (MatMulIntegerToFloat, MultiHeadAttention)


def onnx_layers(layers: Iterable[Dict[str, Any]], heads: int, eps: float, int8: bool = False) -> Callable:
    """A function (hidden [B, L, H], mask [B, L] int32, 1 for a token, 0 for padding) -> final hidden states [B, L, H].

    Args:
        layers: ``E5Encoder``'s per-layer weights (``qkv``, ``out``, ``up``, ``down`` as
            [in, out] matrices, their biases, ``ln1``/``ln2`` as (weight, bias)).
        heads: attention heads.
        eps: layer-norm epsilon.
        int8: the weight matrix products in int8 (see ``_GraphBuilder.matmul``).

    Raises ImportError without ``onnx``/``onnxruntime``; an ORT too old for opset 21 fails here too.
    """
    from onnx import TensorProto, helper

    g = _GraphBuilder(int8)
    x, H = "hidden", 0
    for i, layer in enumerate(layers):  # each layer's float32 weights are dropped once they are constants
        H = layer["out"].shape[0]
        x = g.layer_norm(g.op("Add", [_self_attention(g, x, layer, i, heads), x]), f"{i}.ln1", layer["ln1"], eps)
        x = g.layer_norm(g.op("Add", [_feed_forward(g, x, layer, i), x]), f"{i}.ln2", layer["ln2"], eps)
    g.nodes.append(helper.make_node("Identity", [x], ["states"]))
    graph = helper.make_graph(
        g.nodes,
        "e5_layers",
        [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", H]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"]),
        ],
        [helper.make_tensor_value_info("states", TensorProto.FLOAT, ["B", "L", H])],
        g.weights,
    )
    return _runner(graph, ("hidden", "mask"))


def int8_weights(w: np.ndarray) -> tuple:
    """(int8 matrix in [-63, 63], per-column float32 scale): symmetric, so that ``q * scale`` approximates ``w``.

    The inputs are quantized to uint8 on the fly and the products run in integers: a quarter of
    the weight bytes to read (what a short query waits for) and faster products. Seven bits, not
    eight: CPUs without VNNI (AVX2) multiply uint8 by int8 in int16 pairs that saturate past 32,767;
    with |q| <= 63 no pair can (255 * 64 * 2 = 32,640), so every CPU computes the same exact sums.
    Eight saturating bits were no closer to float32 (ConfQuestions evidences: cosine 0.99894 against
    0.99891 mean, 0.99834 against 0.99848 at the worst).
    """
    scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / WEIGHT_LEVELS
    return np.clip(np.rint(w / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8), scale.astype(np.float32)


class _GraphBuilder:
    """Collects an ONNX graph's nodes and constant weights; each node output gets a unique name."""

    def __init__(self, int8: bool = False) -> None:
        self.weights: list = []
        self.nodes: list = []
        self.int8 = int8
        self.named: Dict[str, str] = {}

    def const(self, name: str, value) -> str:
        from onnx import numpy_helper

        self.weights.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, inputs: list, n_out: int = 1, **attrs):
        from onnx import helper

        outputs = [f"{kind}{len(self.nodes)}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(kind, inputs, outputs, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def dense(self, x: str, w: str, layer: dict, i: int) -> str:
        """``x @ layer[w] + layer[w + "_b"]``, the weights stored as layer ``i``'s constants."""
        return self.matmul(x, f"{i}.{w}", layer[w], self.const(f"{i}.{w}_b", layer[w + "_b"]))

    def matmul(self, x: str, name: str, w: np.ndarray, bias: Optional[str] = None) -> str:
        """``x @ w (+ bias)``: float32, or int8 weights with per-column scales (``int8_weights``) times
        ``x`` quantized per token (``per_token_uint8``).

        Per token, not per tensor as ONNX Runtime's fused ``DynamicQuantizeMatMul`` does: a text's
        vector must not depend on the other texts of its batch, and one scale per token keeps it
        closer to float32's (ConfQuestions: cosine 0.999 against 0.995; hybrid P@1 0.865 against
        0.857 for int8 queries on a float32 store); a query takes 15% longer than with it.
        """
        if self.int8:
            q, scale = int8_weights(w)
            x_q, x_scale = self.per_token_uint8(x, w.shape[0])
            # int32 sums times the weights' column scales (a_scale 1: x's scale is per token, applied after)
            one, zero = self.named_const("one", np.float32(1)), self.named_const("zero_128", np.uint8(128))
            inputs = [x_q, self.const(name, q), one, self.const(f"{name}_scale", scale), zero]
            matmul = self.op("Mul", [self.op("MatMulIntegerToFloat", inputs, domain=MS), x_scale])
        else:
            matmul = self.op("MatMul", [x, self.const(name, w)])
        return matmul if bias is None else self.op("Add", [matmul, bias])

    def per_token_uint8(self, x: str, width: int) -> tuple:
        """``x`` [B, L, width] as uint8 around 128 with one scale per token (its largest magnitude / 127), and that scale.

        One ``QuantizeLinear`` over blocks of a whole row (round half to even, + 128, saturate) in place of
        five element-wise steps: a short query's time is mostly such small steps.
        """
        c = self.named_const
        peak = self.op("ReduceMax", [self.op("Abs", [x]), c("last_axis", np.array([-1], np.int64))], keepdims=1)
        # no guard for an all-zero token: scale 0 makes its uint8 values arbitrary (0/0), its products 0 as they should be
        scale = self.op("Div", [peak, c("f127", np.float32(127))])
        if "zero_points" not in self.named:  # every token's zero point, 128 (all scales are [B, L, 1])
            self.named["zero_points"] = self.op("Expand", [c("zero_128", np.uint8(128)), self.op("Shape", [scale])])
        quantized = self.op("QuantizeLinear", [x, scale, self.named["zero_points"]], axis=-1, block_size=width)
        return quantized, scale

    def named_const(self, name: str, value) -> str:
        """A constant shared by the whole graph (added once)."""
        if name not in self.named:
            self.named[name] = self.const(name, value)
        return self.named[name]

    def layer_norm(self, x: str, name: str, weight_bias: tuple, eps: float) -> str:
        weight, bias = self.const(f"{name}_w", weight_bias[0]), self.const(f"{name}_b", weight_bias[1])
        return self.op("LayerNormalization", [x, weight, bias], axis=-1, epsilon=eps)


def _self_attention(g: _GraphBuilder, x: str, layer: dict, i: int, heads: int) -> str:
    """Multi-head self-attention over ``x`` (``mask`` hides the pad tokens), output-projected.

    ONNX Runtime's fused ``MultiHeadAttention`` (scores scaled by 1/sqrt(head size), softmax, values)
    in one step instead of thirteen reshapes, transposes and products: the same sums, 8-17% faster.
    """
    q, k, v = g.op("Split", [g.dense(x, "qkv", layer, i)], 3, axis=-1, num_outputs=3)  # q/k/v, each heads x size
    attended = g.op("MultiHeadAttention", [q, k, v, "", "mask"], domain=MS, num_heads=heads)
    return g.dense(attended, "out", layer, i)


def _feed_forward(g: _GraphBuilder, x: str, layer: dict, i: int) -> str:
    """The GELU (tanh form, as the numpy pass) feed-forward block."""
    up = g.op("Gelu", [g.dense(x, "up", layer, i)], approximate="tanh")
    return g.dense(up, "down", layer, i)


def onnx_products(w: np.ndarray) -> Callable:
    """A function x [N, in] -> x @ w [N, out]: ``MatMul`` for float32 ``w``; for int8 ``w``
    (``int8_weights``), ``MatMulInteger`` of uint8 ``x`` around 128, returning the int32 sums.

    The sparse head's product: its caller pools each text's maximum over these raw products and
    scales only the pooled [out] vector, instead of three float passes over all [N, 16384].
    """
    from onnx import TensorProto, helper

    g = _GraphBuilder()
    if w.dtype == np.int8:
        kind, x_type, out_type = "MatMulInteger", TensorProto.UINT8, TensorProto.INT32
        inputs = ["x", g.const("w", w), g.const("zero_128", np.uint8(128))]
    else:
        kind, x_type, out_type, inputs = "MatMul", TensorProto.FLOAT, TensorProto.FLOAT, ["x", g.const("w", w)]
    g.nodes.append(helper.make_node(kind, inputs, ["products"]))
    graph = helper.make_graph(
        g.nodes,
        "e5_products",
        [helper.make_tensor_value_info("x", x_type, ["N", w.shape[0]])],
        [helper.make_tensor_value_info("products", out_type, ["N", w.shape[1]])],
        g.weights,
    )
    return _runner(graph, ("x",))


def uint8_spans(spans: List[np.ndarray]) -> Tuple[np.ndarray, List[float]]:
    """The spans stacked as uint8 around 128, each with one scale (its largest magnitude / 127), and
    those scales: the input ``onnx_products`` takes for int8 weights, quantized as ``per_token_uint8``
    quantizes a token, but per span (one text's tokens), so a span's integer products can be pooled
    before scaling."""
    units = [max(float(np.abs(h).max()), 1e-12) / 127.0 for h in spans]
    states = np.concatenate([np.rint(h / unit) for h, unit in zip(spans, units)])
    states += 128.0
    return states.astype(np.uint8), units


def _runner(graph, inputs) -> Callable:
    import onnxruntime as ort
    from onnx import helper

    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)], ir_version=IR_VERSION
    )
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 1  # the encoder runs batches side by side instead (e5_batches)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def run(*arrays: np.ndarray) -> np.ndarray:
        return session.run(None, dict(zip(inputs, arrays)))[0]

    return run
