#!/usr/bin/env python3
"""Exports a tiny random model of each causal-LM family Optimum exports, for bench/onnx-exports.ts,
which runs each export through the ONNX policy and compares it with transformers.

    .cache/export-env/bin/python scripts/check-optimum-exports.py [OUT_DIR] [FAMILY ...]
        (default .cache/optimum-exports, every family; about 7 minutes on 2 cores)
    npx tsx bench/onnx-exports.ts .cache/optimum-exports

The environment is the fixture's (python/export-requirements.txt: optimum-onnx 0.1.0, optimum
2.1.0, transformers 4.57.6, torch 2.15.0). Each family gets a 2-layer model with seeded random
weights and the committed fixture's tokenizer (src/adapters/onnx/__fixtures__/tiny-gpt/hf), saved
with save_pretrained and exported with `optimum-cli export onnx --task text-generation-with-past`;
reference.json holds transformers' greedy tokens and log-probs (float64, full forward without a
cache; float32 where the model does not run in float64). A family whose export fails gets
export-error.txt instead, which the bench reports.
"""
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version

import torch
import torch.nn.functional as F
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, '.cache', 'optimum-exports')
TOKENIZER = os.path.join(ROOT, 'src', 'adapters', 'onnx', '__fixtures__', 'tiny-gpt', 'hf')
PROMPTS = ['Question: what is the size of the apple?\n', 'Q: river']
STEPS = 20

# (model_type, config fields): position ids, key/value heads and positional schemes vary among them.
FAMILIES = {
    'gpt2': ('gpt2', dict(n_embd=32, n_layer=2, n_head=2, n_positions=128)),
    'gpt_neo': ('gpt_neo', dict(hidden_size=32, num_layers=2, num_heads=2, attention_types=[[['global', 'local'], 1]], max_position_embeddings=128, window_size=64)),
    'gpt_neox': ('gpt_neox', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=128)),
    'gptj': ('gptj', dict(n_embd=32, n_layer=2, n_head=2, n_positions=128, rotary_dim=8)),
    'gpt_bigcode': ('gpt_bigcode', dict(n_embd=32, n_layer=2, n_head=2, n_positions=128, multi_query=True)),
    'opt': ('opt', dict(hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=128, word_embed_proj_dim=32)),
    'bloom': ('bloom', dict(hidden_size=32, n_layer=2, n_head=2)),
    'mpt': ('mpt', dict(d_model=32, n_layers=2, n_heads=2, max_seq_len=128, expansion_ratio=2)),
    'falcon': ('falcon', dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, alibi=True, new_decoder_architecture=False, multi_query=True)),
    'falcon-new-decoder': ('falcon', dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2, new_decoder_architecture=True, alibi=False)),
    'llama': ('llama', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False)),
    'mistral': ('mistral', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)),
    'qwen2': ('qwen2', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)),
    'qwen3': ('qwen3', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128)),
    'gemma': ('gemma', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=128)),
    'gemma2': ('gemma2', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=128, sliding_window=64)),
    'gemma3_text': ('gemma3_text', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=128, sliding_window=64)),
    'phi': ('phi', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=128)),
    'phi3': ('phi3', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)),
    'stablelm': ('stablelm', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)),
    'granite': ('granite', dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)),
}


@torch.no_grad()
def greedy(model, tokenizer, dtype):
    model = model.to(dtype)
    rows = []
    for text in PROMPTS:
        ids = tokenizer(text, add_special_tokens=False)['input_ids']
        sequence, steps = list(ids), []
        for _ in range(STEPS):
            logp = F.log_softmax(model(input_ids=torch.tensor([sequence]), use_cache=False).logits[0, -1].double(), dim=-1)
            token = int(torch.argmax(logp))
            steps.append({'tokenId': token, 'logProb': float(logp[token])})
            sequence.append(token)
        rows.append({'text': text, 'promptIds': ids, 'greedy': steps})
    return rows


def make(family, tokenizer):
    model_type, fields = FAMILIES[family]
    folder = os.path.join(OUT, family)
    hf = os.path.join(folder, 'hf')
    shutil.rmtree(folder, ignore_errors=True)
    eos = tokenizer.eos_token_id
    torch.manual_seed(0)
    config = AutoConfig.for_model(model_type, vocab_size=len(tokenizer), bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, **fields)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.generation_config = GenerationConfig(bos_token_id=eos, eos_token_id=[eos], pad_token_id=eos)
    model.save_pretrained(hf)
    tokenizer.save_pretrained(hf)
    command = [os.path.join(os.path.dirname(sys.executable), 'optimum-cli'), 'export', 'onnx', '--model', hf, '--task', 'text-generation-with-past', folder]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, 'HF_HUB_OFFLINE': '1'})
    if run.returncode != 0:
        last = [line for line in run.stderr.splitlines() if line.strip()][-1:]
        with open(os.path.join(folder, 'export-error.txt'), 'w') as f:
            f.write(f'optimum-cli export onnx failed: {last[0] if last else run.returncode}\n')
        print(f'{family}: export failed ({last[0] if last else run.returncode})')
        return
    try:
        dtype, rows = 'float64', greedy(model, tokenizer, torch.float64)
    except RuntimeError:
        dtype, rows = 'float32', greedy(model, tokenizer, torch.float32)
    reference = {
        'family': family,
        'modelType': model_type,
        'referenceDtype': dtype,
        'versions': {p: version(p) for p in ['optimum-onnx', 'optimum', 'transformers', 'torch']},
        'eosTokenId': eos,
        'prompts': rows,
    }
    with open(os.path.join(folder, 'reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)
    print(f'{family}: exported to {folder}')


def main():
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    for family in sys.argv[2:] or FAMILIES:
        make(family, tokenizer)


if __name__ == '__main__':
    main()
