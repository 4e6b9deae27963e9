"""Write a word-level tokenizer for the kit's tiny model into a model folder (run by the Dynamo venv).

    python word_tokenizer.py MODEL_DIR

Dynamo's frontend tokenizes prompts itself (from the model card the worker registers), so the
model folder needs a tokenizer; none is downloaded. Ids match the tiny config's vocabulary of
2,048: ``<pad>`` 0, ``<s>`` 1, ``</s>`` 2, ``<unk>`` 3, then the words ``w4`` .. ``w2047``, one
word one token, so a prompt of N words is N tokens and the load client's counts hold.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")


def write(model_dir: Path, vocab_size: int = 2048) -> None:
    vocab = {token: i for i, token in enumerate(SPECIALS)}
    vocab.update({f"w{i}": i for i in range(len(SPECIALS), vocab_size)})
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # words back with spaces between
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in SPECIALS])
    tokenizer.save(str(model_dir / "tokenizer.json"))
    special = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    config = {**special, "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096,
              "add_bos_token": False, "add_eos_token": False,
              "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}"}
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    (model_dir / "special_tokens_map.json").write_text(json.dumps(special, indent=1))
    (model_dir / "generation_config.json").write_text(
        json.dumps({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}, indent=1))


if __name__ == "__main__":
    write(Path(sys.argv[1]))
