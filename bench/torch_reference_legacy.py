"""The tfjs policy's model and training step in PyTorch 1.x (Debian's python3-torch 1.13), for
`npm run bench:training` to print beside the current PyTorch's figures (bench/torch_reference.py)
while both are present: eager mode, attention written out (1.13 has no scaled_dot_product_attention),
logits at every position, plain AdamW. Unchanged from the bench's earlier anchor, so its figures
compare with the ones recorded before.

Same architecture as src/adapters/tfjs/transformer.ts (pre-norm GPT blocks, learned positions,
tied embedding, GELU tanh, layer norm eps 1e-5), the same loss shape (back-propagate
sum_t g_t * logp_t over scored positions), AdamW with global-norm clipping, and KV-cached sampling.
Reads a JSON config from argv[1]; prints one JSON line per figure. Run only by bench/torch-reference.ts (for bench/training.ts)
when python3 with torch is present; nothing in the tests depends on it.

Threads: torch's intra-op pool and the BLAS / OpenMP pools are all set to cfg["threads"] before
torch is imported, so a 1-thread figure is one thread and two pools never oversubscribe the cores.
The BLAS torch calls is read from the libraries mapped into this process: Debian's torch links the
generic libblas.so.3, which update-alternatives may point at the reference (netlib) BLAS, several
times slower than OpenBLAS; a comparison against that is refused rather than printed.
"""
import json
import math
import os
import sys
import time

cfg = json.loads(sys.argv[1])
THREADS = str(int(cfg["threads"]))
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[name] = THREADS

import torch  # noqa: E402 (after the thread variables, which the BLAS reads when it loads)
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(int(THREADS))
torch.manual_seed(0)
MIN_SECONDS = float(cfg.get("minSeconds", 3))
MIN_REPEATS = int(cfg.get("minRepeats", 5))


def emit(figure, value, **extra):
    print(json.dumps({"figure": figure, "value": value, "threads": int(THREADS), "torch": torch.__version__, **extra}), flush=True)


def classify_blas(paths):
    """(kind, path) of the BLAS among the shared libraries a process has mapped."""
    blas = [p for p in paths if any(k in os.path.basename(p) for k in ("blas", "mkl_rt", "libmkl", "blis"))]
    for kind in ("openblas", "mkl", "blis"):
        found = [p for p in blas if kind in p]
        if found:
            return kind, found[0]
    # Debian's netlib package installs /usr/lib/<triplet>/blas/libblas.so.3.
    reference = [p for p in blas if os.path.basename(p).startswith("libblas.so")]
    if reference:
        return "reference", reference[0]
    # No BLAS library mapped: this torch carries its own (e.g. a pip wheel with MKL linked in).
    return "builtin", torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]


def blas_in_use():
    """Which BLAS this torch calls, read after a product has gone through it."""
    a = torch.randn(64, 64)
    (a @ a).sum().item()
    with open("/proc/self/maps") as maps:
        return classify_blas(sorted({line.split()[-1] for line in maps if ".so" in line and "/" in line}))


kind, path = blas_in_use()
emit("torch_blas", 0, blas=kind, library=path, threadsInUse=torch.get_num_threads())
if kind == "reference":
    emit("torch_refused", 0, reason=f"torch runs on the reference BLAS ({path}), several times slower than OpenBLAS; "
         "switch with: sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu "
         "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 (Debian: apt-get install libopenblas0-pthread)")
    sys.exit(0)


def timed(step):
    """Median seconds of `step` over at least MIN_REPEATS calls and MIN_SECONDS, after two warm-ups."""
    for _ in range(2):
        step()
    times = []
    started = time.perf_counter()
    while len(times) < MIN_REPEATS or time.perf_counter() - started < MIN_SECONDS:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], len(times)


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


dt, repeats = timed(train_step)
emit("torch_train_tokens_per_second", B * T / dt, repeats=repeats)

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


dt, repeats = timed(rollout)
emit("torch_rollout_tokens_per_second", R * G / dt, repeats=repeats)
