"""Stage 1: wiki pages (HTML, ConfQuestions JSON) -> evidences (passages, lists, tables, table rows) -> contextualized nodes."""
