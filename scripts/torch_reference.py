#!/usr/bin/env python3
"""PyTorch reference for gpuz's three workloads, at gpuz's sizes.

    torch_reference.py MODEL train|eval [--scale full|small] [--device cuda|cpu]
                       [--epochs N] [--seed N] [--json FILE]

MODEL is linear, resnet or attention, built as gpuz builds it (README.md,
docs/usage.md; the sizes of internal/models/*.go):

  linear     blocks of [Linear(dims->dims), LeakyReLU(0.01)] x layers, MSE
             against the input; full: 12 blocks x 10 layers, dims 2000, 60
             samples in batches of 30; small: 3 x 2, dims 128, 8 in 4.
  resnet     levels of two ConvModel blocks a_i, b_i, each
             2 x [Conv2d(C->M, k), Conv2d(M->C, k), LeakyReLU], padded k/2;
             level 1 = x + b1(a1(x)), level i = x + b_i(level i-1(a_i(x))); MSE
             against the input; full: 12 levels, C 10, M 30, 512x512 images,
             k 5, 6 samples in batches of 2; small: 3, 4, 8, 32x32, k 3, 6 in 2.
  attention  Embedding(vocab, d) plus fixed sinusoidal positions, causal
             decoder layers x = LayerNorm(x + out_proj(MHA(in_proj(x)))),
             x = LayerNorm(x + Linear(x)), a head Linear(d->vocab);
             cross-entropy predicting each token's own id; full: vocab 1024,
             d 512, 8 heads, 12 layers, 512 tokens, 60 samples in batches of
             30; small: 64, 32, 4, 2, 32, 8 in 4.

Blocks are gpuz's: each has its own Adam (lr 1e-4, PyTorch's defaults
otherwise) and its gradient norm clipped to 1 before its step. Training
takes a step per batch; evaluation runs the forward pass under no_grad and
accumulates the output's mean. Data: U(0, 1) values (token ids uniform in
[0, vocab) for attention) from --seed, kept in host memory, each batch
copied to the device as it is used (gpuz's cuda mode copies each batch
too). Losses are not gpuz's: the initial weights and data come from
PyTorch's generator, not gpuz's.

Epochs: gpuz's default per workload (5, 10, 5), the first a warm-up left out
of the median, as gpuz's --warmup 1. On cuda every epoch ends with
torch.cuda.synchronize().

It prints one line per epoch and a summary, and with --json writes the run:
sizes, parameters and their bytes (float32), the seconds of every epoch and
their median, and the floating-point work per epoch. The work counts the
matrix products, 2*m*n*k for each (convolutions as the GEMMs of im2col;
attention's Q.K^T and P.V over the full S x S, masked or not), forward and,
in training, backward: the weight gradient always, the input gradient where
the input needs one (not for the data); with them the bias additions
(output elements) and attention probabilities (B*H*S^2 per layer), from
which CI derives gpuz's count (`gpuz plan --json -`, work_per_batch) and
compares (scripts/test-torch-reference.sh).

    torch_reference.py saved MODEL [--scale full|small] [--precision fp32|bf16]
    torch_reference.py saved -

Prints, as JSON, the bytes PyTorch's autograd keeps for the backward pass
of one training step of MODEL on the cpu (one batch; saved_tensors_hooks,
parameters excluded, a storage counted once, the data batch counted as
the first product saves it) and each tensor's op (aten), shape, dtype and
bytes; under --precision bf16 the forward pass and the loss run in
torch.autocast. internal/torchplan's TestSyntheticSavedMatchesTorch
compares it with its rules. "saved -" runs once per line of standard
input, each line its arguments.

Bad arguments: one line on standard error and exit status 2. No torch, or
no CUDA for --device cuda: one line and exit status 1.
"""

import argparse
import json
import math
import platform
import statistics
import sys
import time

SIZES = {
    "linear": {
        "full": dict(blocks=12, layers=10, dims=2000, samples=60, batch=30, epochs=5),
        "small": dict(blocks=3, layers=2, dims=128, samples=8, batch=4, epochs=5),
    },
    "resnet": {
        "full": dict(levels=12, channels=10, mid=30, image=512, kernel=5, samples=6, batch=2, epochs=10),
        "small": dict(levels=3, channels=4, mid=8, image=32, kernel=3, samples=6, batch=2, epochs=10),
    },
    "attention": {
        "full": dict(vocab=1024, d=512, heads=8, layers=12, seq=512, samples=60, batch=30, epochs=5),
        "small": dict(vocab=64, d=32, heads=4, layers=2, seq=32, samples=8, batch=4, epochs=5),
    },
}

LR = 1e-4
CLIP = 1.0
LEAKY = 0.01
LN_EPS = 1e-5
WARMUP = 1


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit status 2."""

    def error(self, message):
        sys.stderr.write(f"torch_reference: {message} (see --help)\n")
        sys.exit(2)


def parse_args(argv):
    p = OneLineParser(prog="torch_reference.py", description=__doc__.split("\n\n")[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=sorted(SIZES))
    p.add_argument("task", choices=["train", "eval"])
    p.add_argument("--scale", choices=["full", "small"], default="full")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--epochs", type=int, help="epochs, the warm-up included (default: the workload's)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="automatic mixed precision, as gpuz's --precision: the forward pass and the loss under "
                        "torch.autocast in that type; fp16 training scales the loss with GradScaler's defaults "
                        "(on CUDA only: CPU autocast is bf16 only in torch 1.13)")
    p.add_argument("--json", metavar="FILE", help="write the run as JSON to FILE ('-': standard output)")
    a = p.parse_args(argv)
    if a.epochs is not None and a.epochs <= WARMUP:
        p.error(f"--epochs must be more than the {WARMUP} warm-up epoch, got {a.epochs}")
    return a


def fail(message):
    sys.stderr.write(f"torch_reference: {message}\n")
    sys.exit(1)


class Work:
    """Floating-point work of one batch, by kind, while counting is on."""

    KINDS = ("linear_forward", "linear_input_grad", "linear_weight_grad",
             "conv_forward", "conv_input_grad", "conv_weight_grad",
             "attention_scores", "attention_scores_grad", "attention_mix", "attention_mix_grad")

    def __init__(self):
        self.on = False
        self.train = False
        self.flops = dict.fromkeys(self.KINDS, 0)
        self.bias = {"linear": 0, "conv": 0}
        self.probs = 0

    def product(self, kind, flops, input_needs_grad):
        """A matrix product of flops operations in the forward pass, and its
        gradients when training."""
        if not self.on:
            return
        self.flops[kind + "_forward"] += flops
        if self.train:
            self.flops[kind + "_weight_grad"] += flops
            if input_needs_grad:
                self.flops[kind + "_input_grad"] += flops


def build(torch, model, s, work):
    """The model as a list of blocks (each an nn.Module with parameters) and
    its forward function (batch -> output)."""
    nn, F = torch.nn, torch.nn.functional

    class Dense(nn.Linear):
        def forward(self, x):
            if work.on:
                m = x.numel() // x.shape[-1]
                work.product("linear", 2 * m * self.in_features * self.out_features, x.requires_grad)
                work.bias["linear"] += m * self.out_features
            return F.linear(x, self.weight, self.bias)

    class Conv(nn.Conv2d):
        def forward(self, x):
            y = super().forward(x)
            if work.on:
                k = self.kernel_size[0] * self.kernel_size[1]
                work.product("conv", 2 * self.out_channels * self.in_channels * k * y.shape[0] * y.shape[2] * y.shape[3],
                             x.requires_grad)
                work.bias["conv"] += y.numel()
            return y

    if model == "linear":
        blocks = nn.ModuleList(
            nn.Sequential(*[m for _ in range(s["layers"]) for m in (Dense(s["dims"], s["dims"]), nn.LeakyReLU(LEAKY))])
            for _ in range(s["blocks"]))

        def forward(x):
            for b in blocks:
                x = b(x)
            return x
        return list(blocks), forward

    if model == "resnet":
        c, mid, k = s["channels"], s["mid"], s["kernel"]

        def conv_model():
            return nn.Sequential(Conv(c, mid, k, padding=k // 2), Conv(mid, c, k, padding=k // 2), nn.LeakyReLU(LEAKY),
                                 Conv(c, mid, k, padding=k // 2), Conv(mid, c, k, padding=k // 2), nn.LeakyReLU(LEAKY))
        pairs = [(conv_model(), conv_model()) for _ in range(s["levels"])]

        def level(i, x):
            a, b = pairs[i]
            h = a(x)
            if i > 0:
                h = level(i - 1, h)
            return x + b(h)
        return [m for pair in pairs for m in pair], lambda x: level(s["levels"] - 1, x)

    d, heads, seq, vocab = s["d"], s["heads"], s["seq"], s["vocab"]
    hd = d // heads

    class DecoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            # nn.MultiheadAttention's parameters and initialisation.
            self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
            nn.init.xavier_uniform_(self.in_proj_weight)
            self.out_proj = Dense(d, d)
            nn.init.zeros_(self.out_proj.bias)
            self.norm1 = nn.LayerNorm(d, eps=LN_EPS)
            self.ff = Dense(d, d)
            self.norm2 = nn.LayerNorm(d, eps=LN_EPS)

        def forward(self, x):
            b = x.shape[0]
            if work.on:
                work.product("linear", 2 * b * seq * d * 3 * d, x.requires_grad)
                work.bias["linear"] += b * seq * 3 * d
            qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
            q, k, v = qkv.view(b, seq, 3, heads, hd).permute(2, 0, 3, 1, 4)
            scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            scores = scores.masked_fill(consts["causal"], float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            mixed = torch.matmul(probs, v).transpose(1, 2).reshape(b, seq, d)
            if work.on:
                # The causal products counted as the model needs them, the
                # lower triangle with its diagonal (torch computes the whole
                # square; gpuz's kernels skip the masked half).
                products = 2 * b * heads * hd * seq * (seq + 1) // 2
                work.flops["attention_scores"] += products
                work.flops["attention_mix"] += products
                if work.train:
                    work.flops["attention_scores_grad"] += 2 * products  # dQ = dS.K, dK = dS^T.Q
                    work.flops["attention_mix_grad"] += 2 * products  # dP = dO.V^T, dV = P^T.dO
                work.probs += b * heads * seq * seq
            x = self.norm1(x + self.out_proj(mixed))
            return self.norm2(x + self.ff(x))

    # gpuz's SinusoidalPositions: (p, i) = sin(p*f), (p, i+1) = cos(p*f),
    # f = exp(-ln(10000) * i / d), in float32. The table and the causal
    # mask move to the device with the first batch.
    pos = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    positions = torch.zeros(seq, d)
    positions[:, 0::2] = torch.sin(pos * freq)
    positions[:, 1::2] = torch.cos(pos * freq)
    consts = {"positions": positions, "causal": torch.ones(seq, seq, dtype=torch.bool).triu(1)}
    head = Dense(d, vocab)
    embed = nn.Embedding(vocab, d)
    layers = [DecoderLayer() for _ in range(s["layers"])]

    def forward(ids):
        if consts["causal"].device != ids.device:
            for k in consts:
                consts[k] = consts[k].to(ids.device)
        x = embed(ids) + consts["positions"]
        for layer in layers:
            x = layer(x)
        return head(x)
    return [head, embed] + layers, forward


def saved(argv):
    """One training step's saved tensors (see the module's doc)."""
    p = OneLineParser(prog="torch_reference.py saved")
    p.add_argument("model", choices=sorted(SIZES))
    p.add_argument("--scale", choices=["full", "small"], default="small")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args(argv)
    import torch
    s = dict(SIZES[a.model][a.scale])
    torch.manual_seed(1)
    blocks, forward = build(torch, a.model, s, Work())
    params = {q.data_ptr() for b in blocks for q in b.parameters()}
    g = torch.Generator().manual_seed(1)
    if a.model == "attention":
        x = torch.randint(0, s["vocab"], (s["batch"], s["seq"]), generator=g)
    elif a.model == "linear":
        x = torch.rand(s["batch"], s["dims"], generator=g)
    else:
        x = torch.rand(s["batch"], s["channels"], s["image"], s["image"], generator=g)
    seen, tensors = set(), []

    def pack(t):
        st = t.storage()
        key = (st.data_ptr(), st.size())
        if st.data_ptr() not in params and key not in seen:
            seen.add(key)
            tensors.append(dict(shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""),
                                bytes=st.size() * t.element_size()))
        return t
    amp = torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        out = forward(x)
        if a.model == "attention":
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, s["vocab"]), x.reshape(-1))
        else:
            loss = torch.nn.functional.mse_loss(out, x)
    loss.backward()
    print(json.dumps({"saved_bytes": sum(t["bytes"] for t in tensors), "model": a.model, "scale": a.scale,
                      "precision": a.precision, "batch": s["batch"], "torch": torch.__version__, "tensors": tensors}))
    return 0


def main(argv):
    if argv == ["saved", "-"]:
        for line in sys.stdin:
            if line.strip():
                saved(line.split())
                sys.stdout.flush()
        return 0
    if argv and argv[0] == "saved":
        return saved(argv[1:])
    a = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch is not installed for {sys.executable} ({e}): pip install torch, or apt-get install python3-torch")
    if a.device == "cuda" and not torch.cuda.is_available():
        fail(f"--device cuda: torch {torch.__version__} sees no usable CUDA GPU (torch.cuda.is_available() is False)")
    if a.precision == "fp16" and a.device == "cpu":
        fail("--precision fp16 needs --device cuda: CPU autocast is bf16 only (torch 1.13), and GradScaler is CUDA's")
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[a.precision]

    def autocast():
        return torch.autocast(device_type=a.device, dtype=amp_dtype, enabled=amp_dtype is not None)
    s = dict(SIZES[a.model][a.scale])
    epochs = a.epochs if a.epochs is not None else s["epochs"]
    batches = s["samples"] // s["batch"]
    train = a.task == "train"
    dev = torch.device(a.device)

    torch.manual_seed(a.seed)
    work = Work()
    blocks, forward = build(torch, a.model, s, work)
    for b in blocks:
        b.to(dev)
    params = [p for b in blocks for p in b.parameters()]
    n_params = sum(p.numel() for p in params)
    opts = [torch.optim.Adam(b.parameters(), lr=LR) for b in blocks] if train else []
    # One scaler for every block's optimizer: unscale_ and step each, update
    # once a step, as GradScaler's documentation does it for several.
    scaler = torch.cuda.amp.GradScaler(enabled=train and a.precision == "fp16")
    skipped = 0

    g = torch.Generator().manual_seed(a.seed)
    if a.model == "attention":
        data = torch.randint(0, s["vocab"], (s["samples"], s["seq"]), generator=g)
    elif a.model == "linear":
        data = torch.rand(s["samples"], s["dims"], generator=g)
    else:
        data = torch.rand(s["samples"], s["channels"], s["image"], s["image"], generator=g)

    def loss_of(out, target):
        if a.model == "attention":
            return torch.nn.functional.cross_entropy(out.reshape(-1, s["vocab"]), target.reshape(-1))
        return torch.nn.functional.mse_loss(out, target)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    for b in blocks:
        b.train(train)
    seconds, values = [], []
    for epoch in range(epochs):
        work.on, work.train = epoch == 0, train
        sync()
        t0 = time.perf_counter()
        total = torch.zeros((), device=dev)
        for i in range(batches):
            x = data[i * s["batch"]:(i + 1) * s["batch"]].to(dev)
            if train:
                for o in opts:
                    o.zero_grad(set_to_none=True)
                with autocast():
                    loss = loss_of(forward(x), x)
                scaler.scale(loss).backward()
                for b, o in zip(blocks, opts):
                    scaler.unscale_(o)
                    torch.nn.utils.clip_grad_norm_(b.parameters(), CLIP)
                    scaler.step(o)
                if scaler.is_enabled():
                    before = scaler.get_scale()
                    scaler.update()
                    skipped += scaler.get_scale() < before
                total += loss.detach().float()
            else:
                with torch.no_grad(), autocast():
                    total += forward(x).float().mean()
            work.on = False
        value = total.item() / batches
        sync()
        seconds.append(time.perf_counter() - t0)
        values.append(value)
        what = "mean loss" if train else "mean output"
        print(f"{a.task}: {epoch + 1}  {what}: {value:.4f}  time: {seconds[-1]:.3f} s  on {a.device}"
              + ("  (warm-up)" if epoch < WARMUP else ""), flush=True)

    timed = seconds[WARMUP:]
    median = statistics.median(timed)
    flops = {k: v * batches for k, v in work.flops.items()}
    doc = {
        "tool": "torch_reference.py",
        "model": a.model, "task": a.task, "scale": a.scale, "device": a.device,
        "sizes": s, "batch": s["batch"], "samples": s["samples"], "batches": batches,
        "epochs": epochs, "warmup": WARMUP, "seed": a.seed,
        "params": n_params, "param_bytes": 4 * n_params, "blocks": len(blocks),
        "epoch_seconds": seconds, "median_seconds": median,
        "values": values, "value": "mean loss" if train else "mean output",
        "flops_per_epoch": {
            "matmul": sum(flops.values()),
            "by_kind": flops,
            "bias_elements": {k: v * batches for k, v in work.bias.items()},
            "attention_probs": work.probs * batches,
        },
        "torch": torch.__version__, "python": platform.python_version(), "threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if a.device == "cuda" else "",
        "precision": a.precision, "skipped_steps": skipped,
        "peak_device_bytes": torch.cuda.max_memory_allocated() if a.device == "cuda" else 0,
    }
    print(f"{a.model} {a.task} {a.scale} on {a.device} (torch {torch.__version__}): median {median:.6g} s per epoch "
          f"over {len(timed)} timed epochs; {n_params} parameters ({4 * n_params} bytes), "
          f"{doc['flops_per_epoch']['matmul']} matmul FLOPs per epoch")
    if a.json:
        text = json.dumps(doc, indent=1) + "\n"
        if a.json == "-":
            sys.stdout.write(text)
        else:
            try:
                with open(a.json, "w") as f:
                    f.write(text)
            except OSError as e:
                fail(f"--json {a.json}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
