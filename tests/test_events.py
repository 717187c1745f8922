from fakes import collected_events, parse

from llama_index_ragonite import EvidenceContextualizer
from llama_index_ragonite.events import EvidencesContextualizedEvent, EvidencesParsedEvent


def test_parse_and_contextualize_fire_events():
    with collected_events() as events:
        nodes = parse("<p>a</p><table><tr><th>K</th></tr><tr><td>v</td></tr></table><ul><li>x</li></ul>", doc_id="ev")
        nodes.pop(0)  # the passage's neighbour is now missing from the batch
        EvidenceContextualizer.from_setting("BEF")(nodes)
    parsed = [e for e in events if isinstance(e, EvidencesParsedEvent)]
    assert [(e.document_id, e.counts) for e in parsed] == [
        ("ev", {"passage": 1, "table": 1, "table_row": 1, "list": 1})
    ]
    ctx = [e for e in events if isinstance(e, EvidencesContextualizedEvent)]
    assert [(e.setting, e.nodes, e.missing_neighbours) for e in ctx] == [("BEF", 3, 2)]


def test_every_event_is_named_after_its_class():
    from llama_index_ragonite import events

    classes = [c for c in vars(events).values() if isinstance(c, type) and issubclass(c, events.RagoniteEvent)]
    assert (
        len(classes) == 14
    )  # the base and thirteen events, the RAGE explainers' two, conversation retrieval, the offline answer's
    # sources and a long question's cut included
    assert {events.PerturbationStartEvent, events.PerturbationEndEvent} <= set(classes)
    assert {events.AnswerSourcesEvent, events.QueryCutEvent} <= set(classes)
    for cls in classes:
        assert cls.class_name() == cls.__name__
    dumped = events.AnswerEvent(answer="a", cited=[1]).model_dump()
    assert dumped["class_name"] == "AnswerEvent"
