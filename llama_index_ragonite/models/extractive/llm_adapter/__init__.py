"""The extractive answerer's LLM face: the one place that parses prompt text back into sources.

``face.PromptReading`` (the ``complete``/``chat``/``predict`` methods of ``ExtractiveAnswerer``),
``prompt.py`` (our ``### Source i ###`` prompt, the history, the question) and ``templates.py``
(LlamaIndex's stock templates). Everything else answers from nodes (``sources.node_source``).
"""
