#!/usr/bin/env python3
"""Makes the ONNX policy's test fixtures: tiny causal LMs made and trained by `transformers`,
saved with `save_pretrained`, and exported by Hugging Face Optimum's own exporter
(`optimum-cli export onnx --task text-generation-with-past`), so that the searcher-rl/onnx tests
run offline, without Python, on what a user's export really looks like.

    python3 -m venv .cache/export-env
    .cache/export-env/bin/pip install -r python/export-requirements.txt
    .cache/export-env/bin/python scripts/make-onnx-fixture.py [FIXTURES_DIR]
        (default src/adapters/onnx/__fixtures__; 4 minutes on 2 idle cores, 15 on a loaded machine)

The environment is pinned in python/export-requirements.txt: optimum-onnx 0.1.0 (optimum 2.x moved
the ONNX exporter out of `optimum` into it; its newest release needs optimum~=2.1.0 and
transformers<4.58), optimum 2.1.0, accelerate 1.15.0, transformers 4.57.6, tokenizers 0.22.2,
torch 2.15.0, onnx 1.23.2, onnxruntime 1.32.0. Nothing is downloaded from the Hub: the tokenizer is
learned here. Training is seeded: a second run here wrote the same model.safetensors, byte for byte.

Writes two fixtures, each a folder Optimum exported (model.onnx, config.json,
generation_config.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json) plus
  reference.json   prompts, their token ids, greedy continuations and per-token log-probs computed by
                   transformers (float64, full forward without cache), and the versions that made it
  hf/              the transformers folder the export was made from (save_pretrained: config.json,
                   model.safetensors, generation_config.json and the tokenizer files); python/tests/
                   test_onnx_fixture.py loads it with the tests' transformers and checks reference.json
- tiny-gpt/    a GPT-2 (GPT2LMHeadModel: 2 layers, width 32, 2 heads, 256 positions). Optimum's GPT-2
               export takes position_ids.
- tiny-gemma/  a Gemma (GemmaForCausalLM: 2 layers, 2 query heads sharing 1 key/value head of width
               16). Optimum exports Gemma without position_ids: the graph takes its positions from the
               past length, so the policy may batch only rows with equal past lengths.

Both share one byte-level BPE tokenizer (GPT-2's pre-tokenizer), learned here with `tokenizers`,
with the protocol tags and <|endoftext|> as added special tokens. Both models are trained for a few
hundred steps on protocol-shaped text so that they write tags
(`<think>…</think>\\n<search>…</search>`) and the stop-on-tag paths get exercised.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import time
from importlib.metadata import version

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AutoTokenizer,
    GemmaConfig,
    GemmaForCausalLM,
    GenerationConfig,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', 'adapters', 'onnx', '__fixtures__')
SEED = 17
POSITIONS = 256
VOCAB_BEFORE_ADDED = 384
TAGS = ['think', 'search', 'bbox', 'search_complete', 'answer', 'information']
EOS = '<|endoftext|>'
ADDED = [EOS] + [t for tag in TAGS for t in (f'<{tag}>', f'</{tag}>')]
PACKAGES = ['optimum-onnx', 'optimum', 'accelerate', 'transformers', 'tokenizers', 'torch', 'onnx', 'onnxruntime']

random.seed(SEED)
torch.manual_seed(SEED)

# ---------------------------------------------------------------- corpus
SUBJECTS = ['apple', 'river', 'delta', 'revenue', 'moon', 'cat', 'tower', 'energy', 'market', 'forest', 'planet', 'bridge']
ASPECTS = ['size', 'age', 'price', 'color', 'height', 'growth', 'origin', 'share']


def episode():
    s, a = random.choice(SUBJECTS), random.choice(ASPECTS)
    q = f'what is the {a} of the {s}?'
    first = f'Question: {q}\n<think>find the {a} of the {s}</think>\n<search>{s} {a}</search>'
    obs = f'<information>[page {s}_{random.randint(1, 9)}.png] the {s} {a} is {random.randint(2, 99)}</information>\n'
    second = random.choice([
        '<think>the page answers it</think>\n<search_complete>true</search_complete>',
        f'<think>answer found</think>\n<answer>{random.randint(2, 99)}</answer>',
    ])
    return first + obs + second + EOS


CORPUS = [episode() for _ in range(600)]


# ---------------------------------------------------------------- tokenizer
def split_added(text):
    """The text between added tokens (what BPE learns from: the trainer does not split them out)."""
    pieces = [text]
    for token in sorted(ADDED, key=len, reverse=True):
        pieces = [part for piece in pieces for part in piece.split(token)]
    return [p for p in pieces if p]


def make_tokenizer():
    """GPT-2's byte-level BPE (its pre-tokenizer regex, no prefix space), learned on the corpus;
    the tags and <|endoftext|> are added special tokens after the learned vocabulary."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_BEFORE_ADDED, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator([p for text in CORPUS for p in split_added(text)], trainer=trainer)
    tokenizer.add_special_tokens(ADDED)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=EOS, eos_token=EOS, unk_token=EOS, pad_token=EOS, model_max_length=POSITIONS, clean_up_tokenization_spaces=False)


# ---------------------------------------------------------------- models
def gpt2(vocab_size, eos_id):
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size, n_positions=POSITIONS, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id))


def gemma(vocab_size, eos_id):
    return GemmaForCausalLM(GemmaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=POSITIONS, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id))


def train(model, tokenizer, name):
    eos_id = tokenizer.convert_tokens_to_ids(EOS)
    data = [tokenizer(text, add_special_tokens=False)['input_ids'] for text in CORPUS]
    assert max(len(s) for s in data) <= POSITIONS, 'an episode is longer than the context'
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    model.train()
    for step in range(500):
        batch = random.sample(data, 32)
        length = max(len(s) for s in batch)
        ids = torch.tensor([s + [eos_id] * (length - len(s)) for s in batch])
        mask = torch.tensor([[1] * len(s) + [0] * (length - len(s)) for s in batch])
        loss = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100), use_cache=False).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0 or step == 499:
            print(f'{name}: step {step} loss {loss.item():.3f}')
    model.eval()


PROMPTS = ['Question: what is the size of the apple?\n', 'Question: what is the price of the moon?\n<think>', 'Question: river growth\n']
ENCODINGS = ['<search>cats and dogs</search>', 'héllo <answer>4.5 billion</answer>\n', '<information>[page a.png] x</information>']


@torch.no_grad()
def reference(model, tokenizer, steps=40):
    """Greedy continuations by full recomputation in float64 without a cache: the ONNX policy's
    cached float32 decode must match them."""
    model = model.double()
    rows = []
    for text in PROMPTS:
        ids = tokenizer(text, add_special_tokens=False)['input_ids']
        sequence = list(ids)
        greedy = []
        for _ in range(steps):
            logits = model(input_ids=torch.tensor([sequence]), use_cache=False).logits
            logp = F.log_softmax(logits[0, -1], dim=-1)
            token = int(torch.argmax(logp))
            greedy.append({'tokenId': token, 'logProb': float(logp[token])})
            sequence.append(token)
        rows.append({'text': text, 'promptIds': ids, 'greedy': greedy})
    model.float()
    return {
        'madeBy': 'scripts/make-onnx-fixture.py',
        'versions': {p: version(p) for p in PACKAGES},
        'vocabSize': model.config.vocab_size,
        'eosTokenId': tokenizer.convert_tokens_to_ids(EOS),
        'addedTokens': {t: tokenizer.convert_tokens_to_ids(t) for t in ADDED},
        'encodings': {t: tokenizer(t, add_special_tokens=False)['input_ids'] for t in ENCODINGS},
        'prompts': rows,
    }


def make(name, build, tokenizer):
    folder = os.path.join(OUT, name)
    hf = os.path.join(folder, 'hf')
    shutil.rmtree(folder, ignore_errors=True)
    eos_id = tokenizer.convert_tokens_to_ids(EOS)
    model = build(len(tokenizer), eos_id)
    start = time.time()
    train(model, tokenizer, name)
    print(f'{name}: trained in {time.time() - start:.0f} s')
    model.generation_config = GenerationConfig(bos_token_id=eos_id, eos_token_id=[eos_id], pad_token_id=eos_id)
    model.save_pretrained(hf)
    tokenizer.save_pretrained(hf)
    # Optimum's exporter as a user runs it, with its defaults (opset 18; tied weights deduplicated,
    # as accelerate is installed): one model.onnx that takes past_key_values, empty at the start.
    command = ['optimum-cli', 'export', 'onnx', '--model', hf, '--task', 'text-generation-with-past', folder]
    print(' '.join(command))
    subprocess.run([os.path.join(os.path.dirname(sys.executable), command[0]), *command[1:]], check=True, env={**os.environ, 'HF_HUB_OFFLINE': '1'})
    data = reference(model, tokenizer)
    with open(os.path.join(folder, 'reference.json'), 'w') as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
    print(f'{name}: vocabulary {data["vocabSize"]}, eos {data["eosTokenId"]}, wrote {folder}')


def main():
    tokenizer = make_tokenizer()
    # The tokenizer as a user's AutoTokenizer reads it back (the fixture's ids are these).
    scratch = os.path.join(OUT, '.tokenizer')
    tokenizer.save_pretrained(scratch)
    tokenizer = AutoTokenizer.from_pretrained(scratch)
    shutil.rmtree(scratch)
    make('tiny-gpt', gpt2, tokenizer)
    make('tiny-gemma', gemma, tokenizer)


if __name__ == '__main__':
    main()
