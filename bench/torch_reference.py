"""The tfjs policy's model, training step and sampling written in PyTorch, for `npm run bench:training`.

Same architecture as src/adapters/tfjs/transformer.ts (pre-norm GPT blocks, learned positions,
tied embedding, GELU tanh, layer norm eps 1e-5), the same loss shape (back-propagate
sum_t g_t * logp_t over the scored positions), AdamW with global-norm clipping, and KV-cached
sampling, written as a user of a current PyTorch would run them:

- attention through F.scaled_dot_product_attention (causal over the sequence; over the cache when
  sampling);
- logits only where they are scored (TRL's `logits_to_keep`: the hidden states of the completion
  positions go through the final norm and the tied head, not the prompt's) and the log-probs
  taken as TRL's `selective_log_softmax` takes them in float32 (the picked logit minus the
  logsumexp);
- AdamW with `fused=True` (the CPU kernel torch has since 2.4) and `clip_grad_norm_` (foreach);
- sampling under `torch.inference_mode()`;
- with cfg["compile"], torch.compile (inductor) of the loss's forward (training) and of the
  prefill and one-token decode step over a static key/value cache (rollouts: Hugging Face's
  "static cache + torch.compile" recipe, as `cache_implementation="static"`); the first steps'
  compile time is measured and printed apart from the steady-state figure;
- without it, the eager model: the cache grows by concatenation per step (transformers'
  DynamicCache).

Reads a JSON config from argv[1]; prints one JSON line per figure. Run only by bench/torch-reference.ts (for bench/training.ts);
nothing in the tests depends on it.

Threads: torch's intra-op pool and the BLAS / OpenMP pools are all set to cfg["threads"] before
torch is imported, so a 1-thread figure is one thread and two pools never oversubscribe the cores.
The BLAS is read from torch's build (`torch.__config__`: PyPI's wheels link MKL into libtorch_cpu)
and from the libraries mapped into this process (Debian's torch links the generic libblas.so.3,
which update-alternatives may point at the reference BLAS, several times slower than OpenBLAS; a
comparison against that is refused rather than printed). numpy's wheels map a private OpenBLAS
that torch never calls; it is not counted.
"""
import json
import os
import re
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
COMPILE = bool(cfg.get("compile", False))
SETTING = "compiled" if COMPILE else "eager"
MIN_SECONDS = float(cfg.get("minSeconds", 3))
MIN_REPEATS = int(cfg.get("minRepeats", 5))


def emit(figure, value, **extra):
    print(json.dumps({"figure": figure, "value": value, "threads": int(THREADS), "setting": SETTING,
                      "torch": torch.__version__, **extra}), flush=True)


def classify_blas(paths):
    """(kind, path) of the BLAS among the shared libraries a process has mapped, or (None, None)."""
    own = [p for p in paths if not re.search(r"numpy[./]libs|scipy[./]libs", p)]
    blas = [p for p in own if any(k in os.path.basename(p) for k in ("blas", "mkl_rt", "libmkl", "blis"))]
    blas = [p for p in blas if "cublas" not in os.path.basename(p)]
    for kind in ("openblas", "mkl", "blis"):
        found = [p for p in blas if kind in os.path.basename(p)]
        if found:
            return kind, found[0]
    # Debian's netlib package installs /usr/lib/<triplet>/blas/libblas.so.3.
    reference = [p for p in blas if os.path.basename(p).startswith("libblas.so")]
    if reference:
        return "reference", reference[0]
    return None, None


def blas_in_use():
    """(kind, where) of the BLAS this torch calls, read after a product has gone through it."""
    a = torch.randn(64, 64)
    (a @ a).sum().item()
    with open("/proc/self/maps") as maps:
        kind, path = classify_blas(sorted({line.split()[-1] for line in maps if ".so" in line and "/" in line}))
    if kind is not None:
        return kind, path
    # No BLAS library of its own mapped: the BLAS is linked into libtorch (PyPI's wheels: MKL).
    config = torch.__config__.show()
    built = config.split("BLAS_INFO=")[-1].split(",")[0] if "BLAS_INFO=" in config else "unknown"
    version = re.search(r"Math Kernel Library Version ([\w.\-]+)", config)
    return built, f"linked into libtorch_cpu{f' (MKL {version.group(1)})' if version and built == 'mkl' else ''}"


kind, path = blas_in_use()
emit("torch_blas", 0, blas=kind, library=path, threadsInUse=torch.get_num_threads(),
     cpuCapability=torch.backends.cpu.get_cpu_capability())
if kind == "reference":
    emit("torch_refused", 0, reason=f"torch runs on the reference BLAS ({path}), several times slower than OpenBLAS; "
         "switch with: sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu "
         "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 (Debian: apt-get install libopenblas0-pthread)")
    sys.exit(0)


def timed(step, warmups=2):
    """Median seconds of `step` over at least MIN_REPEATS calls and MIN_SECONDS after `warmups`
    calls, and the seconds the warm-up calls took (a compiled step compiles in them)."""
    t0 = time.perf_counter()
    for _ in range(warmups):
        step()
    warmup_seconds = time.perf_counter() - t0
    times, cpu_times = [], []
    started = time.perf_counter()
    while len(times) < MIN_REPEATS or time.perf_counter() - started < MIN_SECONDS:
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    global CPU_SECONDS
    CPU_SECONDS = sorted(cpu_times)[len(cpu_times) // 2]
    return sorted(times)[len(times) // 2], len(times), warmup_seconds


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

    def heads(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).split(D, dim=2)
        return (t.view(B, T, H, DH).transpose(1, 2) for t in (q, k, v))

    def finish(self, x, attended):
        B, T, _ = x.shape
        x = x + self.out(attended.transpose(1, 2).reshape(B, T, D))
        return x + self.down(F.gelu(self.up(self.n2(x)), approximate="tanh"))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(V, D)
        self.pos = torch.nn.Embedding(C, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.nf = torch.nn.LayerNorm(D, eps=1e-5)

    def head(self, h):
        return self.nf(h) @ self.tok.weight.t()

    def forward(self, ids, logits_to_keep=0):
        """Causal forward of whole sequences; the logits of the last `logits_to_keep` positions (0: all)."""
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            q, k, v = block.heads(x)
            x = block.finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return self.head(x[:, -logits_to_keep:])

    def prefill(self, ids):
        """The prompt's forward: the last position's logits and each layer's keys and values."""
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        cache = []
        for block in self.blocks:
            q, k, v = block.heads(x)
            cache.append((k, v))
            x = block.finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return self.head(x[:, -1]), cache

    def decode_growing(self, token, position, cache):
        """One new token per row over a cache that grows by concatenation (transformers' DynamicCache)."""
        x = self.tok(token) + self.pos.weight[position]
        grown = []
        for block, (past_k, past_v) in zip(self.blocks, cache):
            q, k, v = block.heads(x)
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            grown.append((k, v))
            x = block.finish(x, F.scaled_dot_product_attention(q, k, v))
        return self.head(x[:, -1]), grown

    def decode_static(self, token, position, keys, values):
        """One new token per row into a preallocated cache at `position` (a 1-element tensor, so that a
        compiled step serves every position), attending to the slots up to it."""
        x = self.tok(token) + self.pos(position)
        visible = (torch.arange(keys[0].shape[2]) <= position).view(1, 1, 1, -1)
        for block, k_cache, v_cache in zip(self.blocks, keys, values):
            q, k, v = block.heads(x)
            k_cache.index_copy_(2, position, k)
            v_cache.index_copy_(2, position, v)
            x = block.finish(x, F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=visible))
        return self.head(x[:, -1])


def selective_log_softmax(logits, index):
    """TRL's float32 path: the picked logit minus the logsumexp."""
    return logits.gather(-1, index.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)


def attention_path(q, k, v, **kwargs):
    """The kernel torch's dispatcher picks for these inputs (math, flash or efficient)."""
    from torch.nn.attention import SDPBackend

    try:
        return SDPBackend(torch._fused_sdp_choice(q, k, v, **kwargs)).name.lower()
    except Exception as error:  # a private API: say so rather than fail the bench
        return f"unknown ({type(error).__name__})"


model = Model()
B, T = cfg["trainBatch"], cfg["trainLength"]
R, P, G = cfg["rollouts"], cfg["promptLength"], cfg["generate"]
q = torch.randn(B, H, T, DH)
one = torch.randn(R, H, 1, DH)
past = torch.randn(R, H, P + G, DH)
emit("torch_attention", 0, train=attention_path(q, q, q, is_causal=True),
     decodeGrowing=attention_path(one, past, past),
     decodeStatic=attention_path(one, past, past, attn_mask=torch.ones(1, 1, 1, P + G, dtype=torch.bool)),
     note="scaled_dot_product_attention's CPU kernel as the dispatcher picks it for the training step "
          "(causal), a decode step over a growing cache (no mask) and over the static cache (a mask); "
          "inductor keeps the aten SDPA call")

opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
g = torch.Generator().manual_seed(1)
ids = torch.randint(0, 256, (B, T), generator=g)
scored_from = cfg["scoredFrom"]
# Positions scored_from..T-1 are scored, predicted from the hidden states at scored_from-1..T-2:
# TRL asks for logits_to_keep + 1 positions and drops the last.
logits_to_keep = T - scored_from
targets = ids[:, scored_from:]


def scored_log_probs(ids, targets):
    return selective_log_softmax(model(ids, logits_to_keep + 1)[:, :-1], targets)


log_probs_of = torch.compile(scored_log_probs, fullgraph=True) if COMPILE else scored_log_probs


def train_step():
    logp = log_probs_of(ids, targets)
    objective = (logp * 0.01).sum()
    opt.zero_grad(set_to_none=True)
    objective.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


dt, repeats, warmup = timed(train_step)
emit("torch_train_tokens_per_second", B * T / dt, repeats=repeats, tokensPerCpuSecond=round(B * T / CPU_SECONDS),
     **({"compileSeconds": round(warmup - 2 * dt, 2)} if COMPILE else {}))

prompt = torch.randint(0, 256, (R, P), generator=g)


def sample(logits):
    return torch.multinomial(logits.softmax(-1), 1, generator=g)


if COMPILE:
    prefill = torch.compile(model.prefill, fullgraph=True)
    decode = torch.compile(model.decode_static, fullgraph=True)

    def rollout():
        with torch.inference_mode():
            keys = [torch.zeros(R, H, P + G, DH) for _ in range(L)]
            values = [torch.zeros(R, H, P + G, DH) for _ in range(L)]
            logits, cache = prefill(prompt)
            for layer, (k, v) in enumerate(cache):
                keys[layer][:, :, :P] = k
                values[layer][:, :, :P] = v
            token = sample(logits)
            for step in range(G - 1):
                token = sample(decode(token, torch.tensor([P + step]), keys, values))
else:

    def rollout():
        with torch.inference_mode():
            logits, cache = model.prefill(prompt)
            token = sample(logits)
            for step in range(G - 1):
                logits, cache = model.decode_growing(token, P + step, cache)
                token = sample(logits)


dt, repeats, warmup = timed(rollout)
emit("torch_rollout_tokens_per_second", R * G / dt, repeats=repeats, tokensPerCpuSecond=round(R * G / CPU_SECONDS),
     **({"compileSeconds": round(warmup - 2 * dt, 2)} if COMPILE else {}))
