#!/usr/bin/python3
"""Builds the ONNX policy's test fixture: a tiny GPT-2-like causal LM in Hugging Face Optimum's
causal-LM export layout, so the searcher-rl/onnx tests run offline without Python.

    /usr/bin/python3 scripts/make-onnx-fixture.py [OUT_DIR]   (default src/adapters/onnx/__fixtures__/tiny-gpt)

Needs torch and onnx (Debian: python3-torch python3-onnx python3-numpy). Writes:
  model.onnx              inputs input_ids, attention_mask, position_ids, past_key_values.{i}.key/value;
                          outputs logits, present.{i}.key/value (Optimum's names and dynamic axes)
  tokenizer.json          a byte-level BPE tokenizer (learned here, use_regex off) with the protocol
                          tags and <|endoftext|> as added special tokens
  config.json, generation_config.json
  reference.json          prompts, their token ids, greedy continuations and per-token log-probs by torch
  no-position-ids/        the same weights exported without the position_ids input (positions from the
                          past length), as some exports are

The model is trained for a few hundred steps on protocol-shaped text so that it writes tags
(`<think>…</think>\\n<search>…</search>`) and the stop-on-tag paths get exercised.
"""
import json
import os
import random
import shutil
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'src', 'adapters', 'onnx', '__fixtures__', 'tiny-gpt')
SEED = 17
LAYERS, WIDTH, HEADS, POSITIONS = 2, 32, 2, 256
MERGES = 28
TAGS = ['think', 'search', 'bbox', 'search_complete', 'answer', 'information']
ADDED = ['<|endoftext|>'] + [t for tag in TAGS for t in (f'<{tag}>', f'</{tag}>')]
EOS = '<|endoftext|>'

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

# ---------------------------------------------------------------- byte-level BPE
BYTE_CHARS = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map (tokenizers' ByteLevel)."""
    bs = BYTE_CHARS[:]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()


def split_added(text):
    """Pieces of text between added tokens, and the added tokens themselves (longest first)."""
    out, i = [], 0
    order = sorted(ADDED, key=len, reverse=True)
    start = 0
    while i < len(text):
        hit = next((t for t in order if text.startswith(t, i)), None)
        if hit:
            if start < i:
                out.append(('text', text[start:i]))
            out.append(('added', hit))
            i += len(hit)
            start = i
        else:
            i += 1
    if start < len(text):
        out.append(('text', text[start:]))
    return out


def symbols(piece):
    return [B2U[b] for b in piece.encode('utf-8')]


def learn_merges(corpus, count):
    words = [symbols(p) for text in corpus for kind, p in split_added(text) if kind == 'text']
    merges = []
    for _ in range(count):
        pairs = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
        best = max(sorted(pairs), key=lambda p: pairs[p])
        merges.append(best)
        words = [apply_merge(w, best) for w in words]
    return merges


def apply_merge(w, pair):
    out, i = [], 0
    while i < len(w):
        if i + 1 < len(w) and (w[i], w[i + 1]) == pair:
            out.append(w[i] + w[i + 1])
            i += 2
        else:
            out.append(w[i])
            i += 1
    return out


MERGE_LIST = learn_merges(CORPUS, MERGES)
RANKS = {m: r for r, m in enumerate(MERGE_LIST)}
VOCAB = {}
for b in range(256):
    VOCAB.setdefault(B2U[b], len(VOCAB))
for a, b in MERGE_LIST:
    VOCAB.setdefault(a + b, len(VOCAB))
ADDED_IDS = {t: len(VOCAB) + k for k, t in enumerate(ADDED)}
VOCAB_SIZE = len(VOCAB) + len(ADDED)
EOS_ID = ADDED_IDS[EOS]


def bpe(word):
    while len(word) > 1:
        ranked = [(RANKS.get(p, 1 << 30), k) for k, p in enumerate(zip(word, word[1:]))]
        rank, k = min(ranked)
        if rank == 1 << 30:
            break
        pair = (word[k], word[k + 1])
        word = apply_merge(word, pair)
    return word


def encode(text):
    ids = []
    for kind, piece in split_added(text):
        if kind == 'added':
            ids.append(ADDED_IDS[piece])
        else:
            ids.extend(VOCAB[s] for s in bpe(symbols(piece)))
    return ids


def tokenizer_json():
    return {
        'version': '1.0',
        'truncation': None,
        'padding': None,
        'added_tokens': [{'id': ADDED_IDS[t], 'content': t, 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True} for t in ADDED],
        'normalizer': None,
        'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False},
        'post_processor': None,
        'decoder': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None, 'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False, 'vocab': VOCAB, 'merges': [f'{a} {b}' for a, b in MERGE_LIST]},
    }


# ---------------------------------------------------------------- model
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.proj = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x, allowed, past_k, past_v):
        b, t, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(WIDTH, dim=2)
        heads = lambda z: z.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        scores = (q @ k.transpose(-1, -2)) / (WIDTH // HEADS) ** 0.5
        # A large finite value, not -inf: a row whose keys are all masked stays finite.
        scores = scores.masked_fill(~allowed, -1e9)
        y = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, WIDTH)
        x = x + self.c_proj(y)
        x = x + self.proj(F.gelu(self.fc(self.ln_2(x))))
        return x, k, v


class TinyGpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB_SIZE, WIDTH)
        self.wpe = nn.Embedding(POSITIONS, WIDTH)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(WIDTH)

    def forward(self, input_ids, attention_mask, position_ids, past):
        t = input_ids.shape[1]
        total = attention_mask.shape[1]
        # Key j is visible to query i when j <= past + i (causal) and attention_mask[j] is 1.
        key_index = torch.arange(total)
        query_index = torch.arange(t) + (total - t)
        allowed = (key_index[None, :] <= query_index[:, None])[None, None] & (attention_mask[:, None, None, :] > 0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for layer, block in enumerate(self.blocks):
            x, k, v = block(x, allowed, past[2 * layer], past[2 * layer + 1])
            presents += [k, v]
        logits = self.ln_f(x) @ self.wte.weight.t()
        return logits, presents


class Exported(nn.Module):
    """Optimum's signature: positional tensors in (input_ids, attention_mask, position_ids?, past...) order."""

    def __init__(self, model, with_position_ids):
        super().__init__()
        self.model, self.with_position_ids = model, with_position_ids

    def forward(self, input_ids, attention_mask, *rest):
        if self.with_position_ids:
            position_ids, past = rest[0], list(rest[1:])
        else:
            past = list(rest)
            t = input_ids.shape[1]
            position_ids = (torch.arange(t) + (attention_mask.shape[1] - t))[None, :].expand(input_ids.shape[0], t)
        logits, presents = self.model(input_ids, attention_mask, position_ids, past)
        return (logits, *presents)


def train(model):
    data = [encode(text) for text in CORPUS]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    for step in range(500):
        batch = random.sample(data, 32)
        length = max(len(s) for s in batch)
        ids = torch.tensor([s + [EOS_ID] * (length - len(s)) for s in batch])
        mask = torch.tensor([[1] * len(s) + [0] * (length - len(s)) for s in batch])
        positions = torch.arange(length)[None, :].expand(len(batch), length)
        empty = [torch.zeros(len(batch), HEADS, 0, WIDTH // HEADS) for _ in range(2 * LAYERS)]
        logits, _ = model(ids, mask, positions, empty)
        target = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB_SIZE), target.reshape(-1), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0 or step == 499:
            print(f'step {step} loss {loss.item():.3f}')


def export(model, folder, with_position_ids):
    os.makedirs(folder, exist_ok=True)
    head = WIDTH // HEADS
    batch, t, past_len = 2, 3, 4
    inputs = [torch.randint(0, VOCAB_SIZE, (batch, t)), torch.ones(batch, past_len + t, dtype=torch.int64)]
    names = ['input_ids', 'attention_mask']
    axes = {'input_ids': {0: 'batch_size', 1: 'sequence_length'}, 'attention_mask': {0: 'batch_size', 1: 'total_sequence_length'}}
    if with_position_ids:
        inputs.append(torch.arange(past_len, past_len + t)[None, :].expand(batch, t).contiguous())
        names.append('position_ids')
        axes['position_ids'] = {0: 'batch_size', 1: 'sequence_length'}
    outputs = ['logits']
    axes['logits'] = {0: 'batch_size', 1: 'sequence_length'}
    for layer in range(LAYERS):
        for kind in ('key', 'value'):
            inputs.append(torch.randn(batch, HEADS, past_len, head))
            names.append(f'past_key_values.{layer}.{kind}')
            axes[names[-1]] = {0: 'batch_size', 2: 'past_sequence_length'}
            outputs.append(f'present.{layer}.{kind}')
            axes[outputs[-1]] = {0: 'batch_size', 2: 'total_sequence_length'}
    torch.onnx.export(Exported(model, with_position_ids), tuple(inputs), os.path.join(folder, 'model.onnx'), input_names=names, output_names=outputs, dynamic_axes=axes, opset_version=14, do_constant_folding=True)
    json.dump(tokenizer_json(), open(os.path.join(folder, 'tokenizer.json'), 'w'), ensure_ascii=False)
    json.dump({'architectures': ['GPT2LMHeadModel'], 'model_type': 'gpt2', 'vocab_size': VOCAB_SIZE, 'n_positions': POSITIONS, 'n_embd': WIDTH, 'n_layer': LAYERS, 'n_head': HEADS, 'bos_token_id': EOS_ID, 'eos_token_id': EOS_ID, 'torch_dtype': 'float32'}, open(os.path.join(folder, 'config.json'), 'w'), indent=2)
    json.dump({'bos_token_id': EOS_ID, 'eos_token_id': [EOS_ID], 'pad_token_id': EOS_ID}, open(os.path.join(folder, 'generation_config.json'), 'w'), indent=2)


@torch.no_grad()
def reference(model):
    prompts = ['Question: what is the size of the apple?\n', 'Question: what is the price of the moon?\n<think>', 'Question: river growth\n']
    rows = []
    for text in prompts:
        ids = encode(text)
        sequence = list(ids)
        steps = []
        for _ in range(40):
            n = len(sequence)
            empty = [torch.zeros(1, HEADS, 0, WIDTH // HEADS) for _ in range(2 * LAYERS)]
            # Full recomputation in float64, no cache: the ONNX policy's cached float32 decode must match it.
            logits, _ = model.double()(torch.tensor([sequence]), torch.ones(1, n, dtype=torch.int64), torch.arange(n)[None, :], [e.double() for e in empty])
            logp = F.log_softmax(logits[0, -1], dim=-1)
            token = int(torch.argmax(logp))
            steps.append({'tokenId': token, 'logProb': float(logp[token])})
            sequence.append(token)
        model.float()
        rows.append({'text': text, 'promptIds': ids, 'greedy': steps})
    return {'vocabSize': VOCAB_SIZE, 'eosTokenId': EOS_ID, 'addedTokens': ADDED_IDS, 'encodings': {t: encode(t) for t in ['<search>cats and dogs</search>', 'héllo <answer>4.5 billion</answer>\n', '<information>[page a.png] x</information>']}, 'prompts': rows}


def main():
    model = TinyGpt()
    train(model)
    model.eval()
    shutil.rmtree(OUT, ignore_errors=True)
    export(model, OUT, True)
    export(model, os.path.join(OUT, 'no-position-ids'), False)
    json.dump(reference(model), open(os.path.join(OUT, 'reference.json'), 'w'), ensure_ascii=False, indent=1)
    print(f'vocabulary {VOCAB_SIZE}, eos {EOS_ID}, wrote {OUT}')


if __name__ == '__main__':
    main()
