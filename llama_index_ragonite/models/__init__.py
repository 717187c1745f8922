"""Stage 2: every model behind a LlamaIndex interface: the embedded e5 encoder, hub models (bge), OpenAI LLMs and the offline extractive answerer."""
