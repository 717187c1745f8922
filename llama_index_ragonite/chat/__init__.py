"""Stage 5: conversational QA: question completion, the cited-answer chat engine, conversations and traces."""
