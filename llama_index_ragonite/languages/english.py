"""English: the offline layer's words (see ``languages/__init__.py`` for what each field is for)."""

from __future__ import annotations

from bm25s import stopwords as _lists

from llama_index_ragonite.languages.table import Language, words

ENGLISH = Language(
    code="en",
    name="English",
    stemmer="english",
    stopwords=tuple(_lists.STOPWORDS_EN),
    content_stopwords=tuple(_lists.STOPWORDS_EN_PLUS),
    question_starts=words(
        """what which who whom whose where when why how is are was were do does did can could should shall will would
        has have had may might must list name tell show explain give describe please"""
    ),
    sentence_openers=words(
        "what which who whom whose when where why how is are was were do does did can could should would will"
    ),
    yes_no_openers=words("is are was were do does did can could should would will has have had"),
    question_words=words("whose many much"),
    conversation_words=words(
        """actually another anything anyway back bit coming could done even get give got guess interested know like lot
        made make may mention mentioned might must need oh ok okay one ones please really seem seemed seems shall show
        something still tell thank thanks thing things think us use used using want wanted way well whether would yes"""
    ),
    leading_prepositions=words("on at for from to by with about of since until in"),
    determiners=words("the a an this"),
    pointing_words=words("it its itself this these those they them their theirs he him his she her such former latter"),
    ellipsis_openers=("and", "or", "also for", "same for", "what about", "how about", "what of"),
    expletive_patterns=(
        r"\bit\s+(?:(?:is|was|be)\s+)?(?:(?:still|also)\s+)?(?:possible|necessary|true|recommended|required|"
        r"mandatory|allowed|safe|enough|important|worth|likely)\b",
        r"\bit\s+(?:take|takes|took)\s+(?:(?:so\s+|too\s+)?long(?:er)?\s+|(?:a\s+)?(?:long\s+)?(?:time|while)\s+"
        r"|(?:ages|minutes|hours|days|weeks|months|years)\s+)?(?:to|for)\b",
    ),
    # "that" points back first or after these ("Is that …", "about that"); after a noun or a verb it is a
    # relative pronoun or a conjunction ("use cases that include", "I know that")
    relative_pointers={
        "that": words(
            "about and at by did do does for from how in is of on or to was what when where which who why with"
        )
    },
    asks_patterns={
        "date": (r"^when\b", r"\b(?:what|which) (?:date|day|year|month|time)\b"),
        "count": (r"\b(?:how many|number)\b",),
        "duration": (r"\b(?:how long|how often)\b",),
        "amount": (r"\b(?:how much|costs?|price)\b",),
        "person": (r"\b(?:who|whom)\b",),
    },
    months=tuple(
        """jan january feb february mar march apr april may jun june jul july aug august sep sept september
        oct october nov november dec december""".split()
    ),
    weekdays=tuple("monday tuesday wednesday thursday friday saturday sunday".split()),
    number_words=tuple("two three four five six seven eight nine ten eleven twelve twenty dozen hundred".split()),
    one_patterns=("one", "a", "an"),
    time_units=tuple(
        "sec secs second seconds min mins minute minutes hour hours hr hrs day days week weeks month months year years".split()
    ),
    periodic=tuple("hourly daily weekly monthly yearly".split()),
    clock_words=("am", "pm", "utc"),
    person_titles=("Dr", "Prof", "Mr", "Mrs", "Ms"),
    negation_patterns=(r"\b(?:not|no|never|none|nothing|without|cannot)\b", r"n't\b"),
    byline_openers=("owned by", "created by", "last updated", "copyright", "(c)", "©"),
    about_page=tuple("owner owned updated created copyright author".split()),
    abbreviations=("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "inc.", "dr.", "mr."),
    clause_connectives=tuple("which who where when while and but so because as since".split()) + ("such as",),
    subordinators=tuple(
        "once if when whenever while because since as after before where although though unless until".split()
    ),
    copulas=("is", "are", "was", "were"),
    copula_modifiers=tuple(
        "not never to being been also still only now currently always usually often very so too then there".split()
    ),
    participle_patterns=(
        r"\w+(?:ed|ing|en|wn)",
        r"(?:found|made|held|kept|left|set|put|run|built|done|sent|meant|read|paid|said|told|sold|bought|brought|"
        r"thought|taught|caught|cut|let|shut|lost|won|led|met|got)",
    ),
    rephrase_labels=("rephrased", "rewritten", "independent", "standalone", "completed"),
    rephrase_nouns=("question", "statement"),
    source_words=("source",),
    follow_up_phrases={
        "cell": "What is the {header} of {key}?",
        "topic": "What does '{title}' say about {topic}?",
        "untitled": "What else is known about {topic}?",
    },
    conflict_phrases={
        "older": "an older page, {title}, says {quote}",
        "newer": "a newer page, {title}, says {quote}",
        "differs": "according to {answer_title}; {title} says {quote}, and neither page is marked as the newer",
    },
)
