"""Answer relevance by an LLM judge with the paper's rubric: 1 (correct and complete), 0.5 (partly), 0."""

from __future__ import annotations

import logging
import re
from typing import Optional

from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import PromptTemplate

logger = logging.getLogger(__name__)

JUDGE_PROMPT = PromptTemplate(
    "You grade answers of a question-answering system over an enterprise wiki against a reference answer.\n"
    "Question: {question}\n"
    "Reference answer: {reference}\n"
    "System answer: {answer}\n\n"
    "Reply with one number only: 1 if the system answer is relevant and gives the information of the reference "
    "answer, 0.5 if it is relevant but only partly correct or incomplete, 0 if it is wrong, irrelevant, or says "
    "the information cannot be found."
)
_SCORE = re.compile(r"(?<![\d.])(1(?:\.0+)?|0?\.5|0(?:\.0+)?)(?!\d|\.\d)")


def parse_grade(text: str) -> Optional[float]:
    """The first 1 / 0.5 / 0 in the judge's reply, or None when there is none."""
    match = _SCORE.search(text or "")
    return float(match.group(1)) if match else None


def judge(llm: LLM, question: str, reference: str, answer: str) -> Optional[float]:
    reply = llm.complete(JUDGE_PROMPT.format(question=question, reference=reference, answer=answer)).text
    grade = parse_grade(reply)
    if grade is None:
        logger.warning("judge reply without a grade: %r", reply[:200])
    return grade
