"""Relevance from attention on a tiny Transformers causal LM the test builds and saves (no hub)."""

from __future__ import annotations

import string

import numpy as np
import pytest
from test_combinations import CAPITALS, QUESTION, make_nodes, paris_llm

from llama_index_ragonite.explain.attention import AttentionRelevance, attention_mass, source_spans
from llama_index_ragonite.explain.combinations import CombinationExplainer
from llama_index_ragonite.explain.regeneration import AnswerRegenerator

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

ANSWER = "It is Paris. [Source 1]"


def build_tiny_model(folder, uniform: bool = False):
    """A 2-layer Llama (hidden 32) with a character-level fast tokenizer, saved to ``folder``.

    ``uniform``: the query and key projections are zero, so every token attends uniformly to
    itself and everything before it (the attention then measures how many tokens a source has).
    """
    chars = sorted(set(string.printable) | set("–—…’“”"))
    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(chars)}}
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    fast.save_pretrained(folder)
    config = transformers.LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    if uniform:
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.q_proj.weight.zero_()
                layer.self_attn.k_proj.weight.zero_()
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return AttentionRelevance.from_pretrained(str(build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))))


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    folder = build_tiny_model(tmp_path_factory.mktemp("uniform-llama"), uniform=True)
    return AttentionRelevance.from_pretrained(str(folder))


def prompt_of(nodes):
    return AnswerRegenerator(paris_llm()).prompt_for(QUESTION, nodes)


def test_spans_cover_each_source_block():
    prompt = prompt_of(CAPITALS)
    spans = source_spans(prompt, CAPITALS)
    for i, (start, end) in enumerate(spans, 1):
        assert prompt[start:end].startswith(f"### Source {i} ###\n") and prompt[start:end].endswith(
            CAPITALS[i - 1].node.text
        )
    with pytest.raises(ValueError, match="not in the prompt"):
        source_spans("nothing here", CAPITALS)


def test_attention_mass_by_hand():
    att = np.zeros((2, 1, 3, 3))
    att[0, 0, 2] = [0.2, 0.3, 0.5]
    att[1, 0, 2] = [0.4, 0.1, 0.5]  # mean row 2: [0.3, 0.2, 0.5]
    assert attention_mass(att, [2], [[0], [1]]) == pytest.approx([0.6, 0.4])
    assert attention_mass(np.zeros((1, 1, 2, 2)), [1], [[0], [1]]) == pytest.approx([0.5, 0.5])


def test_relevance_is_the_real_attention_of_the_answer_tokens(tiny):
    prompt = prompt_of(CAPITALS)
    scores = tiny.relevance(prompt, CAPITALS, ANSWER)
    assert sum(scores) == pytest.approx(1.0) and all(s > 0 for s in scores)
    # by hand: the model's attentions, averaged over layers and heads, rows of the answer's characters
    text = prompt + " " + ANSWER
    ids = torch.tensor([tiny.tokenizer(text)["input_ids"]])
    assert ids.shape[1] == len(text)  # one token per character
    with torch.no_grad():
        attentions = tiny.model(input_ids=ids, output_attentions=True).attentions
    mean = torch.stack([a[0] for a in attentions]).mean(dim=(0, 1))
    rows = mean[len(prompt) + 1 :].mean(dim=0)  # the answer's characters, after the space
    masses = [float(rows[start:end].sum()) for start, end in source_spans(prompt, CAPITALS)]
    assert scores == pytest.approx([m / sum(masses) for m in masses], rel=1e-5)
    # without the answer, the last prompt token attends
    last = tiny.relevance(prompt, CAPITALS, None)
    masses = [float(mean[len(prompt) - 1, start:end].sum()) for start, end in source_spans(prompt, CAPITALS)]
    assert last == pytest.approx([m / sum(masses) for m in masses], rel=1e-5) and last != pytest.approx(scores)


def test_uniform_attention_is_proportional_to_the_source_length(uniform):
    nodes = make_nodes([("Paris.", 0.9), ("Paris is the capital of France, on the Seine, since long ago.", 0.1)])
    prompt = prompt_of(nodes)
    scores = uniform.relevance(prompt, nodes, ANSWER)
    lengths = [end - start for start, end in source_spans(prompt, nodes)]
    assert scores == pytest.approx([n / sum(lengths) for n in lengths], rel=1e-4)
    assert scores[1] > scores[0]  # the model attends more to the second source


def test_combination_search_ordered_by_attention(uniform):
    nodes = make_nodes([("Paris.", 0.9), ("Berlin has many museums and a very long description here.", 0.1)])
    explainer = CombinationExplainer(
        llm=paris_llm(), relevance="attention", attention=uniform, max_concurrency=1, distribution_size=0
    )
    report = explainer.explain(QUESTION, nodes, "Paris. [Source 1]")
    assert report.relevance == "attention" and sum(report.scores) == pytest.approx(1.0)
    assert report.scores[1] > report.scores[0]
    assert report.perturbations[0].removed == (1,)  # the evidence with more attention is tried first
    assert "Relevance: attention" in report.to_text()
    by_retrieval = CombinationExplainer(llm=paris_llm(), max_concurrency=1, distribution_size=0)
    assert by_retrieval.explain(QUESTION, nodes, "Paris. [Source 1]").perturbations[0].removed == (0,)


def test_attention_without_a_local_model_is_a_clear_error():
    with pytest.raises(ValueError, match="local open-weight Transformers model"):
        CombinationExplainer(llm=paris_llm(), relevance="attention").explain(QUESTION, CAPITALS, ANSWER)
