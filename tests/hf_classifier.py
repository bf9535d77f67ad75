"""Small Hugging Face sequence classifiers built here, for the ``transformers`` scorer's tests and benchmark: a
word-piece vocabulary counted from the given texts and a BERT of random weights (or fine-tuned on labels), written with
transformers' own ``save_pretrained``, FineWeb-Edu's layout. Nothing is downloaded. Needs torch and transformers
(``make test-all`` installs them)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def word_piece_tokenizer(texts: list[str], vocab_size: int = 8000) -> Any:
    """BERT's uncased word-piece tokenizer over a vocabulary from ``texts``: every character seen (alone and as a
    ``##`` continuation), then the most frequent words, ties by the word. Counted here, not by tokenizers'
    trainer, whose choice among equally frequent pieces varies from run to run (and so would the model)."""
    from collections import Counter

    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    normalizer, pre = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for t in texts:
        words.update(w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(t)))
    chars = sorted({c for w in words for c in w})
    vocab = SPECIAL + chars + [f"##{c}" for c in chars]
    known = set(vocab)
    for w, _ in sorted(words.items(), key=lambda x: (-x[1], x[0])):
        if len(vocab) >= vocab_size:
            break
        if w not in known:
            vocab.append(w)
    tok = Tokenizer(models.WordPiece({v: i for i, v in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return BertTokenizerFast(tokenizer_object=tok, model_max_length=512)


def bert_classifier(
    folder: Path,
    texts: list[str],
    num_labels: int = 1,
    hidden: int = 32,
    layers: int = 2,
    seed: int = 0,
    head: bool = True,
) -> Any:
    """A BERT sequence classifier of random weights (``num_labels: 1``: a regressor, as FineWeb-Edu's) saved in
    ``folder``; with ``head=False`` the encoder's weights alone under a classifier's config (a broken folder).
    Returns the model (in eval mode)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    tokenizer = word_piece_tokenizer(texts)
    labels = {} if num_labels == 1 else {"id2label": {i: f"class{i}" for i in range(num_labels)}}
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 32),
        intermediate_size=4 * hidden,
        max_position_embeddings=512,
        num_labels=num_labels,
        **labels,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    if head:
        model.save_pretrained(folder)
    else:
        BertModel(config).save_pretrained(folder)
        config.architectures = ["BertForSequenceClassification"]
        config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model


def fine_tune(
    model: Any, folder: Path, texts: list[str], targets: list[float], epochs: int = 2, seed: int = 0
) -> None:
    """Regress the model's one output on ``targets`` (AdamW, batches of 16 at 256 tokens) and save it again."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    torch.manual_seed(seed)
    order = list(range(len(texts)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for epoch in range(epochs):
        random.Random(seed + epoch).shuffle(order)
        for start in range(0, len(order), 16):
            rows = order[start : start + 16]
            batch = tokenizer(
                [texts[i] for i in rows], truncation=True, max_length=256, padding=True, return_tensors="pt"
            )
            out = model(**batch).logits[:, 0]
            loss = torch.nn.functional.mse_loss(out, torch.tensor([targets[i] for i in rows]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    model.save_pretrained(folder)
