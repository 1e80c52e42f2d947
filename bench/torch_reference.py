"""The tfjs policy's model and training step written in PyTorch, for `npm run bench` to compare.

Same architecture as src/adapters/tfjs/transformer.ts (pre-norm GPT blocks, learned positions,
tied embedding, GELU tanh, layer norm eps 1e-5), the same loss shape (back-propagate
sum_t g_t * logp_t over scored positions), AdamW with global-norm clipping, and KV-cached sampling.
Reads a JSON config from argv[1]; prints one JSON line per figure. Run only by bench/training.ts
when python3 with torch is present; nothing in the tests depends on it.
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
torch.set_num_threads(int(cfg["threads"]))
torch.manual_seed(0)
V, C, L, D, H = cfg["vocab"], cfg["context"], cfg["layers"], cfg["width"], cfg["heads"]
M = 4 * D
DH = D // H


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1 = torch.nn.LayerNorm(D, eps=1e-5)
        self.qkv = torch.nn.Linear(D, 3 * D)
        self.out = torch.nn.Linear(D, D)
        self.n2 = torch.nn.LayerNorm(D, eps=1e-5)
        self.up = torch.nn.Linear(D, M)
        self.down = torch.nn.Linear(M, D)

    def forward(self, x, past=None):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, H, DH).transpose(1, 2) for t in (q, k, v))
        if past is not None:
            k = torch.cat([past[0], k], 2)
            v = torch.cat([past[1], v], 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(DH)
        P = k.shape[2] - T
        mask = torch.ones(T, P + T, dtype=torch.bool).tril(P)
        scores = scores.masked_fill(~mask, -1e9)
        att = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.out(att)
        x = x + self.down(F.gelu(self.up(self.n2(x)), approximate="tanh"))
        return x, (k, v)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(V, D)
        self.pos = torch.nn.Embedding(C, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.nf = torch.nn.LayerNorm(D, eps=1e-5)

    def forward(self, ids, start=0, cache=None):
        T = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(start, start + T))
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if cache is None else cache[i])
            new_cache.append(kv)
        return self.nf(x) @ self.tok.weight.t(), new_cache


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
B, T = cfg["trainBatch"], cfg["trainLength"]
g = torch.Generator().manual_seed(1)
ids = torch.randint(0, 256, (B, T), generator=g)
weights = torch.zeros(B, T - 1)
weights[:, cfg["scoredFrom"] - 1:] = 0.01


def train_step():
    logits, _ = model(ids)
    logp = logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    objective = (logp * weights).sum()
    opt.zero_grad(set_to_none=True)
    objective.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


for _ in range(2):
    train_step()
times = []
for _ in range(cfg["trainSteps"]):
    t0 = time.perf_counter()
    train_step()
    times.append(time.perf_counter() - t0)
dt = sorted(times)[len(times) // 2]
print(json.dumps({"figure": "torch_train_tokens_per_second", "value": B * T / dt, "threads": cfg["threads"], "torch": torch.__version__}))

R, P, G = cfg["rollouts"], cfg["promptLength"], cfg["generate"]
prompt = torch.randint(0, 256, (R, P), generator=g)


@torch.no_grad()
def rollout():
    logits, cache = model(prompt)
    nxt = torch.multinomial(logits[:, -1].softmax(-1), 1, generator=g)
    for step in range(G - 1):
        logits, cache = model(nxt, P + step, cache)
        logp = logits[:, -1].log_softmax(-1)
        nxt = torch.multinomial(logp.exp(), 1, generator=g)


rollout()
times = []
for _ in range(3):
    t0 = time.perf_counter()
    rollout()
    times.append(time.perf_counter() - t0)
dt = sorted(times)[1]
print(json.dumps({"figure": "torch_rollout_tokens_per_second", "value": R * G / dt, "threads": cfg["threads"], "torch": torch.__version__}))
