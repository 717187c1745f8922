"""German: the offline layer's words (see ``languages/__init__.py`` for what each field is for)."""

from __future__ import annotations

from bm25s import stopwords as _lists

from llama_index_ragonite.languages.table import Language, words

GERMAN = Language(
    code="de",
    name="German",
    stemmer="german",
    stopwords=tuple(_lists.STOPWORDS_GERMAN),
    content_stopwords=tuple(_lists.STOPWORDS_GERMAN),
    question_starts=words(
        """was welche welcher welches welchen welchem wer wen wem wessen wo wohin woher wann warum wieso weshalb wie
        wozu wofür womit woran worauf ist sind war waren hat haben hatte hatten kann können konnte konnten
        soll sollte sollten wird werden wurde wurden gibt gab muss müssen darf nenne nenn nennen zeige zeig
        erkläre erklär beschreibe gib bitte"""
    ),
    sentence_openers=words("welche welcher welches welchen wer wen wem wie wann wo warum gibt hat haben ist sind"),
    yes_no_openers=words(
        "ist sind war waren wird werden wurde wurden hat haben hatte hatten gibt gab kann können konnte muss soll"
    ),
    question_words=words(
        "wer wen wem wessen wann warum wieso weshalb viele wieviel wieviele gibt gab wurde wurden worden"
    ),
    conversation_words=words(
        """benutzt bitte dabei dafür daran darauf darf darüber davon denke dürfen eigentlich eingesetzt erfahren erzähl
        erzähle genutzt gern gerne glaube interessiert ja konnte mag mal mehr möchte müssen neben nein nenne nennen sag
        sage sagen scheint schon seid seit sollen tun verwendet weiß wissen wodurch wofür woher wohin womit worauf
        worüber wozu zurück übrigens"""
    ),
    leading_prepositions=words(
        "von vom für mit bei aus nach über unter gegen ohne durch zwischen auf an in seit bis zu ab"
    ),
    determiners=words("der die das den dem des ein eine einen einem einer"),
    pointing_words=words(
        """er ihn ihm sie ihr ihre ihren ihrem ihrer sein seine seinen seinem seiner dessen deren dies diese dieser
        dieses diesen diesem jene jener jenes jenen jenem dort dorthin dafür davon dazu damit darin darauf daran
        darüber dabei dagegen daher derselbe dieselbe dasselbe"""
    ),
    ellipsis_openers=(
        "und",
        "oder",
        "auch für",
        "was ist mit",
        "wie ist es mit",
        "wie steht es mit",
        "wie sieht es mit",
        "und was ist mit",
        "und wie",
    ),  # fmt: skip
    expletive_patterns=(
        r"\bes\s+(?:(?:ist|war|wäre)\s+)?(?:(?:auch|noch)\s+)?(?:möglich|nötig|notwendig|sinnvoll|empfohlen|"
        r"erlaubt|wichtig)\b",
        r"\b(?:gibt|gab|geht|ging)\s+es\b|\bes\s+(?:gibt|gab)\b",
    ),
    article_pointers=words("das dem"),  # "Ist das vorgeschrieben?" points back, "das Host-Szenario" does not
    polite_pronouns=frozenset({"Sie"}),
    verb_pronouns=words("sein"),  # "Wie heiß muss der Ofen sein?": the verb; the possessive has its noun next
    clause_ends=words(
        "und oder aber denn damit wenn weil dass ob als wird würde kann könnte muss müsste soll sollte darf wollen"
    ),
    asks_patterns={
        "date": (r"^(?:wann|seit wann|bis wann)\b", r"\b(?:an )?welche[mnrs]? (?:datum|tag|jahr|monat)\b"),
        "count": (r"\b(?:wie viele?|nummer|telefonnummer)\b",),
        "duration": (r"\b(?:wie lange?|wie oft)\b",),
        "amount": (r"\b(?:wie viel|wieviel|kostet|kosten|preis)\b",),
        "person": (r"\b(?:wer|wen|wem)\b",),
    },
    months=tuple("jan januar feb februar märz mai juni juli okt dez dezember oktober".split()),
    weekdays=tuple("montag dienstag mittwoch donnerstag freitag samstag sonntag".split()),
    number_words=tuple("zwei drei vier fünf sechs sieben acht neun zehn elf zwölf zwanzig hundert".split()),
    one_patterns=(r"ein\w*",),
    time_units=tuple(
        "sekunde sekunden minute minuten stunde stunden tage tagen woche wochen monate monaten jahre jahren".split()
    ),
    periodic=tuple("stündlich täglich wöchentlich monatlich jährlich".split()),
    clock_words=("uhr",),
    person_titles=("Dr", "Prof", "Frau", "Herr"),
    negation_patterns=(r"\b(?:nicht|kein\w*|nie|niemals|ohne)\b",),
    about_page=tuple("autor erstellt aktualisiert besitzer".split()),
    abbreviations=("z.b.", "bzw.", "ca.", "nr."),
    # German words spelled alike with their English cognates once these are folded ("Plattform"/"Platform")
    cognate_spelling=(("ph", "f"), ("k", "c"), ("z", "c"), ("ä", "a"), ("ö", "o"), ("ü", "u"), ("ß", "ss")),
    clause_connectives=tuple("da weil wobei die der das und aber".split()),
    rephrase_labels=("umformulierte", "eigenständige"),
    rephrase_nouns=("frage", "aussage"),
    source_words=("quelle",),
    follow_up_phrases={
        "cell": "Was ist {header} bei {key}?",
        "topic": "Was sagt '{title}' zu {topic}?",
        "untitled": "Was ist sonst über {topic} bekannt?",
    },
    conflict_phrases={
        "older": "eine ältere Seite, {title}, nennt {quote}",
        "newer": "eine neuere Seite, {title}, nennt {quote}",
        "differs": "laut {answer_title}; {title} nennt {quote}, und keine der beiden Seiten ist als die neuere ausgewiesen",
    },
)
