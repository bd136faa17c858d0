#!/usr/bin/env python3
"""PyTorch reference for gpuz's llm workload: decoder transformers written
from transformers' formulas (LlamaForCausalLM, Qwen2ForCausalLM,
MistralForCausalLM and GPT2LMHeadModel), with no dependency but torch.

    torch_llm.py check DUMP.json
        Load the config, data and initial weights gpuz dumped
        (internal/models' TestLLMMatchesTorch), train two steps as gpuz
        does (one Adam per block, each block's gradient norm clipped), and
        compare the losses, the first step's gradients and the final
        weights. Exit status 1 on a difference beyond float32 rounding.
        A dump with "lora" (internal/models' TestLoRAMatchesTorch) adds
        PEFT's adapters to its targets (PEFT's default for the model_type
        when the dump names none), y = x·Wᵀ + (α/R)·(x·Aᵀ)·Bᵀ with A and
        B from the dump, freezes every other weight and trains the
        adapters alone; adapters on any other layer fail the check.
    torch_llm.py peak CONFIG.json --seq-len S --batch B [--layers N]
                 [--task train|eval] [--json FILE]
        On a CUDA GPU: torch.cuda.max_memory_allocated() over two steps
        (the second with Adam's state), beside which gpu-check.sh prints
        gpuz's plan and measured peak of the same configuration.
    torch_llm.py saved CONFIG.json --seq-len S --batch B [--layers N]
                 [--precision fp32|bf16] [--recompute none|blocks]
                 [--lora R] [--list]
        Print, as JSON, the bytes PyTorch keeps for the backward pass of one
        training step (torch.autograd.graph.saved_tensors_hooks; parameters
        excluded, tensors sharing storage counted once; with --recompute
        blocks each decoder layer runs under torch.utils.checkpoint, whose
        inputs are counted too; with --lora R PEFT's adapters of rank R on
        the family's default targets, q_proj and v_proj or c_attn, every
        other weight frozen) and each tensor: the block and op of the
        forward pass that saved it, its shape, dtype and bytes (--list: as
        a table). docs/llm.md compares them with gpuz's, and
        internal/torchplan's TestSavedMatchesTorch with its rules.
    torch_llm.py saved -
        saved once per line of standard input, each line its arguments,
        each run's JSON on one line (torch imported once).
    torch_llm.py live CONFIG.json --seq-len S --batch B [--layers N]
                 [--precision fp32|bf16] [--lora R] [--list]
    torch_llm.py live -
        Print, as JSON, the largest set of tensors alive at once during an
        evaluation pass (the forward pass and cross_entropy under
        torch.no_grad(), bf16 autocast with --precision bf16): its bytes
        ("live_bytes", parameters apart, "parameter_bytes" beside) and each
        tensor (bytes, shape, dtype, the block, op and aten op that made
        it; --list: as a table). Every aten op's results are tracked
        through a TorchDispatchMode by weak reference, one entry per
        storage, and summed after each op: the tensors PyTorch holds, not
        what a kernel allocates and frees inside (a BLAS's packing).
        internal/torchplan's TestEvalMatchesTorch compares it with its
        evaluation plan. "live -" runs once per line of standard input.
    torch_llm.py bench CONFIG.json --seq-len S --batch B --samples N
                 --epochs E [--layers L] [--task train|eval] [--threads T] [--json FILE]
        Time E epochs (the first a warm-up, left out of the median) of the
        model on random weights and token ids, as torch_reference.py times
        the other workloads: training takes a step per batch, one Adam per
        gpuz block (lr 1e-4) with the block's gradient norm clipped to 1;
        evaluation runs the forward pass under no_grad and accumulates the
        logits' mean. Prints one line per epoch and a summary; --json writes
        torch_reference.py's fields (epoch_seconds, median_seconds, params,
        threads, torch).
    torch_llm.py generate DUMP.json [--check] [--top K] [--json FILE]
    torch_llm.py generate CONFIG.json --prompt P --tokens N [--batch B]
                 [--layers L] [--seed S] [--threads T] [--repeats R]
                 [--check] [--top K] [--json FILE]
        Greedy generation with a KV cache of its own, written plainly: per
        decoder layer a key and a value tensor [batch, kv_heads, context,
        head_dim] allocated for the whole context (prompt + tokens) up
        front; the prompt in one pass (prefill) writing positions 0 … P−1,
        then one token at a time, each the argmax of the last logits, fed
        back at the next position. A DUMP (a JSON object with "config",
        "init": gpuz-named weights as check's dump has them, "prompt": B
        lists of P token ids, "tokens": N, and optionally "layers";
        internal/models' TestGenerationMatchesTorch writes one) gives
        the weights and the prompt; a CONFIG (a Hugging Face config.json)
        gives the shapes, the weights then drawn N(0, 0.02²) (norms at 1;
        --init-std sets the 0.02) and the prompt uniform below the
        vocabulary, from --seed. Prints
        JSON: "ids", each sequence's N generated ids; "logits", for each
        sequence each generated position's logits [B][N][vocab] (the row
        whose argmax chose that token: the prompt's last position's, then
        each fed token's), or with --top K only "top_ids" and "top_logits",
        each position's K largest (a big vocabulary's rows are large);
        "prefill_seconds" and "decode_seconds" (the median over --repeats
        runs after a warm-up one, default 1 run; decode is the N−1 steps
        that feed a token), "prefill_tokens_per_second" (B·P / prefill)
        and "decode_tokens_per_second" (B·(N−1) / decode), "threads",
        "torch". --check runs the forward pass of check and bench over
        each sequence's prompt and generated tokens (less the last) in one
        pass and compares its logits at the generated positions with the
        decode's (relative error at most 2e-5; the ids must be those
        logits' argmax): exit status 1 when they differ, and "check" in
        the JSON says by how much. Weights of 0.02 make every attention
        nearly uniform, blind to which key sits where: a check of the
        cache's positions wants --init-std 0.3 or so (a key written one
        position off then moves them by 0.1 to 0.7, against 3e-7).

The Llama family (llama, mistral, qwen2): x = embed_tokens(ids); per layer
x = x + o_proj(attn(rope(q, k), v)) on input_layernorm(x) (RMSNorm), then
x = x + down_proj(silu(gate_proj(h)) * up_proj(h)) on
post_attention_layernorm(x); logits = lm_head(norm(x)). RoPE in the
rotate_half convention with transformers' inverse frequencies (llama3
scaling included); grouped-query heads by repeat_kv. GPT-2: x = wte(ids) +
wpe(positions); x = x + c_proj(attn(c_attn(ln_1(x)))),
x = x + mlp.c_proj(gelu_new(c_fc(ln_2(x)))); logits = ln_f(x) wte^T.
The loss is cross-entropy of each position against the next token, as
gpuz's data gives it (ids and targets).

gpuz fuses q_proj, k_proj and v_proj into one qkv_proj (rows q, then k,
then v) and gate_proj with up_proj into gate_up_proj; this script keeps
transformers' separate weights and splits or joins them to compare.
"""

import json
import math
import sys


def fail(message, status=1):
    sys.stderr.write(f"torch_llm: {message}\n")
    sys.exit(status)


def read_config(c):
    """The fields that shape the computation, as gpuz's hfconfig reads them."""
    mt = c["model_type"]
    if mt == "gpt2":
        d = c["n_embd"]
        return dict(arch="gpt2", hidden=d, inter=c.get("n_inner") or 4 * d, layers=c["n_layer"],
                    heads=c["n_head"], kv=c["n_head"], head_dim=d // c["n_head"], vocab=c["vocab_size"],
                    positions=c["n_positions"], tie=c.get("tie_word_embeddings", True),
                    eps=c.get("layer_norm_epsilon", 1e-5))
    if mt not in ("llama", "mistral", "qwen2"):
        fail(f"unsupported model_type {mt!r}", 2)
    d, h = c["hidden_size"], c["num_attention_heads"]
    attn_bias = c.get("attention_bias", False)
    return dict(arch="llama", hidden=d, inter=c["intermediate_size"], layers=c["num_hidden_layers"],
                heads=h, kv=c.get("num_key_value_heads") or h, head_dim=c.get("head_dim") or d // h,
                vocab=c["vocab_size"], positions=c.get("max_position_embeddings", 2048),
                tie=c.get("tie_word_embeddings", False), eps=c.get("rms_norm_eps", 1e-6),
                theta=c.get("rope_theta", 10000.0), scaling=c.get("rope_scaling"),
                qkv_bias=attn_bias or mt == "qwen2", o_bias=attn_bias and mt != "qwen2",
                mlp_bias=c.get("mlp_bias", False))


def inv_freq(torch, s):
    """transformers' default inverse frequencies, then llama3's scaling."""
    dim = s["head_dim"]
    f = 1.0 / (s["theta"] ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    sc = s.get("scaling")
    if not sc:
        return f
    kind = sc.get("rope_type", sc.get("type"))
    if kind != "llama3":
        fail(f"rope_scaling type {kind!r} is not implemented", 2)
    factor, low, high = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
    old = sc["original_max_position_embeddings"]
    low_wl, high_wl = old / low, old / high
    wl = 2 * math.pi / f
    scaled = torch.where(wl > low_wl, f / factor, f)
    smooth = (old / wl - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wl < high_wl) * ~(wl > low_wl)
    return torch.where(medium, smoothed, scaled)


class Params:
    """The model's parameters by transformers' names, in blocks as gpuz's."""

    def __init__(self, torch):
        self.torch = torch
        self.p = {}

    def add(self, name, value):
        t = self.torch.nn.Parameter(value.clone())
        self.p[name] = t
        return t


def load(torch, s, init, layers):
    """transformers-named parameters from gpuz's initial weights."""
    P = Params(torch)
    T = lambda name: torch.as_tensor(init[name], dtype=torch.float32)
    d, hd, H, KV, I = s["hidden"], s["head_dim"], s["heads"], s["kv"], s["inter"]
    if s["arch"] == "gpt2":
        P.add("wte.weight", T("wte.weight").reshape(s["vocab"], d))
        P.add("wpe.weight", T("wpe.weight").reshape(s["positions"], d))
        for i in range(layers):
            pre = f"h.{i}."
            for name, shape in (("ln_1.weight", [d]), ("ln_1.bias", [d]), ("attn.c_attn.weight", [d, 3 * d]),
                                ("attn.c_attn.bias", [3 * d]), ("attn.c_proj.weight", [d, d]),
                                ("attn.c_proj.bias", [d]), ("ln_2.weight", [d]), ("ln_2.bias", [d]),
                                ("mlp.c_fc.weight", [d, I]), ("mlp.c_fc.bias", [I]),
                                ("mlp.c_proj.weight", [I, d]), ("mlp.c_proj.bias", [d])):
                P.add(pre + name, T(pre + name).reshape(shape))
        P.add("ln_f.weight", T("ln_f.weight"))
        P.add("ln_f.bias", T("ln_f.bias"))
        if not s["tie"]:
            P.add("lm_head.weight", T("lm_head.weight").reshape(s["vocab"], d))
        return P
    P.add("model.embed_tokens.weight", T("model.embed_tokens.weight").reshape(s["vocab"], d))
    rows = [H * hd, KV * hd, KV * hd]
    for i in range(layers):
        pre = f"model.layers.{i}."
        P.add(pre + "input_layernorm.weight", T(pre + "input_layernorm.weight"))
        qkv = T(pre + "self_attn.qkv_proj.weight").reshape(sum(rows), d)
        for name, part in zip(("q_proj", "k_proj", "v_proj"), qkv.split(rows)):
            P.add(pre + f"self_attn.{name}.weight", part)
        if s["qkv_bias"]:
            for name, part in zip(("q_proj", "k_proj", "v_proj"), T(pre + "self_attn.qkv_proj.bias").split(rows)):
                P.add(pre + f"self_attn.{name}.bias", part)
        P.add(pre + "self_attn.o_proj.weight", T(pre + "self_attn.o_proj.weight").reshape(d, H * hd))
        if s["o_bias"]:
            P.add(pre + "self_attn.o_proj.bias", T(pre + "self_attn.o_proj.bias"))
        P.add(pre + "post_attention_layernorm.weight", T(pre + "post_attention_layernorm.weight"))
        gate, up = T(pre + "mlp.gate_up_proj.weight").reshape(2 * I, d).split([I, I])
        P.add(pre + "mlp.gate_proj.weight", gate)
        P.add(pre + "mlp.up_proj.weight", up)
        if s["mlp_bias"]:
            gb, ub = T(pre + "mlp.gate_up_proj.bias").split([I, I])
            P.add(pre + "mlp.gate_proj.bias", gb)
            P.add(pre + "mlp.up_proj.bias", ub)
        P.add(pre + "mlp.down_proj.weight", T(pre + "mlp.down_proj.weight").reshape(d, I))
        if s["mlp_bias"]:
            P.add(pre + "mlp.down_proj.bias", T(pre + "mlp.down_proj.bias"))
    P.add("model.norm.weight", T("model.norm.weight"))
    if not s["tie"]:
        P.add("lm_head.weight", T("lm_head.weight").reshape(s["vocab"], d))
    return P


# PEFT's default target_modules per model_type
# (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, peft/utils/constants.py),
# and the linear layers its "all-linear" takes (every one but the output
# head), by the last part of the module's name as PEFT matches them.
PEFT_DEFAULT_TARGETS = {"llama": ("q_proj", "v_proj"), "mistral": ("q_proj", "v_proj"),
                        "qwen2": ("q_proj", "v_proj"), "gpt2": ("c_attn",)}
ALL_LINEAR = {"llama": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
              "gpt2": ("c_attn", "c_proj", "c_fc")}


def load_lora(torch, dump, s, P):
    """PEFT's adapters from gpuz's initial values (the same names and
    layout: lora_A [R, in], lora_B [out, R]); the model's own weights
    frozen. The targets are the dump's list as the user gave it: none for
    PEFT's default of the model_type, "all-linear" for every linear layer
    but the head; the dump's adapters must be exactly those of the target
    layers. Returns the scale α/R and the target layers, or (None, ())
    for a dump without LoRA."""
    lora = dump.get("lora")
    if not lora:
        return None, ()
    targets = lora.get("targets")
    if not targets:
        targets = PEFT_DEFAULT_TARGETS[dump["config"]["model_type"]]
    elif targets == ["all-linear"]:
        targets = ALL_LINEAR[s["arch"]]
    targets = tuple(targets)
    want = {n[:-len(".weight")] for n in P.p
            if n.endswith(".weight") and n[:-len(".weight")].rsplit(".", 1)[-1] in targets}
    have = {n.split(".lora_")[0] for n in dump["init"] if ".lora_" in n}
    if want != have:
        fail(f"the dump's adapters are not PEFT's for targets {targets}: "
             f"adapters on {sorted(have - want)}, none on {sorted(want - have)}")
    for name, values in dump["init"].items():
        if ".lora_" in name:
            P.add(name, torch.tensor(values, dtype=torch.float32).reshape(dump["shapes"][name]))
    for name, t in P.p.items():
        t.requires_grad_(".lora_" in name)
    return lora["alpha"] / lora["rank"], targets


def gpuz_names(s, P):
    """For each gpuz parameter name, the transformers tensors it joins (rows
    in order); the adapters keep their names."""
    out = {}
    for name in P.p:
        joined = name
        if ".lora_" in name:
            out[name] = [name]
            continue
        for part, fused in (("q_proj", "qkv_proj"), ("k_proj", "qkv_proj"), ("v_proj", "qkv_proj"),
                            ("gate_proj", "gate_up_proj"), ("up_proj", "gate_up_proj")):
            if f".{part}." in name:
                joined = name.replace(part, fused)
        out.setdefault(joined, []).append(name)
    return out


# where is the part of the forward pass running now, as (block, op):
# forward sets it before each op, and saved's hook reads it to say which
# op saved a tensor. The blocks are gpuz's: embed, layer1 … layerN, head.
where = ["embed", ""]


def at(op, block=None):
    """Records that the forward pass is at op (in block, if given)."""
    if block is not None:
        where[0] = block
    where[1] = op


def repeat_kv(x, n):
    """transformers' repeat_kv: each of x's key and value heads [B, KV, S,
    hd] n times in a row (a copy, through expand and reshape), or x itself
    when n is 1."""
    if n == 1:
        return x
    B, KV, S, hd = x.shape
    return x[:, :, None].expand(B, KV, n, S, hd).reshape(B, KV * n, S, hd)


def forward(torch, s, P, ids, layers, seq, checkpoint=False, kept=None, lora=(None, ())):
    """The logits [batch·seq, vocab] of ids [batch, seq]. With checkpoint,
    each decoder layer runs under torch.utils.checkpoint, and kept (a
    function), if given, is called with each layer's input, which the
    checkpoint holds for its re-run. lora is load_lora's (scale, targets):
    each target layer pre (named by its last part) adds
    scale·(x·Aᵀ)·Bᵀ, as PEFT's Linear does."""
    F = torch.nn.functional
    p = P.p
    scale, targets = lora

    def adapted(y, x, pre):
        if pre.rsplit(".", 1)[-1] not in targets:
            return y
        return y + scale * F.linear(F.linear(x, p[pre + ".lora_A.weight"]), p[pre + ".lora_B.weight"])
    B = ids.shape[0]
    d, hd, H, KV = s["hidden"], s["head_dim"], s["heads"], s["kv"]
    mask = torch.full((seq, seq), float("-inf")).triu(1)

    def attention(q, k, v):
        # q [B, H, S, hd], k, v [B, KV, S, hd]: repeat_kv, then eager
        # attention as transformers' eager_attention_forward, which
        # returns the probabilities too (its attn_weights): the caller
        # holds them until the decoder layer returns, as transformers'
        # decoder layers do (live measures what is alive when).
        at("repeat_kv")
        k, v = repeat_kv(k, H // k.shape[1]), repeat_kv(v, H // v.shape[1])
        at("q @ k^T")
        scores = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1]) + mask
        at("softmax")
        scores = F.softmax(scores, dim=-1, dtype=torch.float32)
        at("probs @ v")
        return (scores @ v).transpose(1, 2).reshape(B, seq, H * q.shape[-1]), scores

    def run(i, layer, x):
        at("", f"layer{i + 1}")
        if checkpoint:
            import torch.utils.checkpoint as cp
            if kept:
                kept(x)
            return cp.checkpoint(layer, x, use_reentrant=False)
        return layer(x)

    if s["arch"] == "gpt2":
        at("wte", "embed")
        x = F.embedding(ids, p["wte.weight"])
        at("+ wpe")
        x = x + p["wpe.weight"][:seq]

        def layer_fn(i):
            pre = f"h.{i}."

            def f(x):
                at("ln_1")
                h = F.layer_norm(x, (d,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], s["eps"])
                at("c_attn")
                qkv = adapted(torch.addmm(p[pre + "attn.c_attn.bias"], h.reshape(-1, d), p[pre + "attn.c_attn.weight"]),
                              h.reshape(-1, d), pre + "attn.c_attn")
                q, k, v = qkv.reshape(B, seq, 3 * d).split(d, dim=2)
                split = lambda t: t.reshape(B, seq, H, hd).transpose(1, 2)
                a, probs = attention(split(q), split(k), split(v))
                at("attn.c_proj")
                a = adapted(torch.addmm(p[pre + "attn.c_proj.bias"], a.reshape(-1, d), p[pre + "attn.c_proj.weight"]),
                            a.reshape(-1, d), pre + "attn.c_proj")
                # GPT2Attention returns here: its q, k, v (views of c_attn's
                # result) and GPT2Block's normed input go.
                del h, qkv, q, k, v
                at("residual")
                x = x + a.reshape(B, seq, d)
                del a
                at("ln_2")
                h = F.layer_norm(x, (d,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], s["eps"])
                at("c_fc")
                f_ = adapted(torch.addmm(p[pre + "mlp.c_fc.bias"], h.reshape(-1, d), p[pre + "mlp.c_fc.weight"]),
                             h.reshape(-1, d), pre + "mlp.c_fc")
                at("gelu_new")
                f_ = 0.5 * f_ * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (f_ + 0.044715 * torch.pow(f_, 3.0))))
                at("mlp.c_proj")
                f_ = adapted(torch.addmm(p[pre + "mlp.c_proj.bias"], f_, p[pre + "mlp.c_proj.weight"]), f_, pre + "mlp.c_proj")
                at("residual")
                return x + f_.reshape(B, seq, d)
            return f
        for i in range(layers):
            x = run(i, layer_fn(i), x)
        at("ln_f", "head")
        x = F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], s["eps"])
        head = p["wte.weight"] if s["tie"] else p["lm_head.weight"]
        at("lm_head")
        return F.linear(x, head).reshape(B * seq, -1)

    f = inv_freq(torch, s)
    t = torch.arange(seq, dtype=torch.int64).float()
    freqs = torch.outer(t, f)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def rms(x, w):
        # LlamaRMSNorm: x * rsqrt(...) drops the root once multiplied.
        name = where[1]
        at(f"{name}: x²")
        var = x.pow(2)
        at(f"{name}: mean")
        var = var.mean(-1, keepdim=True)
        at(f"{name}: rsqrt")
        r = torch.rsqrt(var + s["eps"])
        at(f"{name}: x·rsqrt")
        n = x * r
        del r
        at(f"{name}: w·")
        return w * n

    def lin(x, pre):
        return adapted(F.linear(x, p[pre + ".weight"], p.get(pre + ".bias")), x, pre)

    at("embed_tokens", "embed")
    x = F.embedding(ids, p["model.embed_tokens.weight"])

    def layer_fn(i):
        pre = f"model.layers.{i}."

        def f_(x):
            # LlamaDecoderLayer, its locals living as transformers' do:
            # LlamaAttention's q, k, v until o_proj's result returns,
            # apply_rotary_pos_emb's q and k rotated before either goes,
            # the attention's probabilities to the layer's end, LlamaMLP
            # one expression.
            at("input_layernorm")
            h = rms(x, p[pre + "input_layernorm.weight"])
            at("q_proj")
            q = lin(h, pre + "self_attn.q_proj").reshape(B, seq, H, hd).transpose(1, 2)
            at("k_proj")
            k = lin(h, pre + "self_attn.k_proj").reshape(B, seq, KV, hd).transpose(1, 2)
            at("v_proj")
            v = lin(h, pre + "self_attn.v_proj").reshape(B, seq, KV, hd).transpose(1, 2)
            at("rope(q)")
            q2 = q * cos + rotate_half(q) * sin
            at("rope(k)")
            k2 = k * cos + rotate_half(k) * sin
            q, k = q2, k2
            del q2, k2
            a, probs = attention(q, k, v)
            at("o_proj")
            a = lin(a, pre + "self_attn.o_proj")
            del h, q, k, v
            at("residual")
            x = x + a
            del a
            at("post_attention_layernorm")
            h = rms(x, p[pre + "post_attention_layernorm.weight"])
            at("gate_proj")
            g = lin(h, pre + "mlp.gate_proj")
            at("silu")
            g = F.silu(g)
            at("up_proj")
            u = lin(h, pre + "mlp.up_proj")
            at("silu(gate) * up")
            m = g * u
            del g, u
            at("down_proj")
            m = lin(m, pre + "mlp.down_proj")
            del h
            at("residual")
            return x + m
        return f_
    for i in range(layers):
        x = run(i, layer_fn(i), x)
    at("norm", "head")
    x = rms(x, p["model.norm.weight"])
    head = p["model.embed_tokens.weight"] if s["tie"] else p["lm_head.weight"]
    at("lm_head")
    return F.linear(x, head).reshape(B * seq, -1)


def write_json(path, doc):
    """Writes doc as indented JSON to path ('-': standard output); a path
    that cannot be written is one line and exit status 1."""
    text = json.dumps(doc, indent=1) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        fail(f"--json {path}: {e.strerror}")


def rel(a, b):
    """‖a − b‖ / ‖b‖ in float64."""
    a, b = a.double().flatten(), b.double().flatten()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def check(path):
    import torch
    torch.set_num_threads(1)
    with open(path) as f:
        dump = json.load(f)
    s = read_config(dump["config"])
    seq, batch = dump["seq_len"], dump["batch"]
    layers = s["layers"]
    P = load(torch, s, dump["init"], layers)
    lora = load_lora(torch, dump, s, P)
    joins = gpuz_names(s, P)
    if lora[0] is not None:  # only the adapters are trained and compared
        joins = {g: names for g, names in joins.items() if ".lora_" in g}
    ids = torch.tensor(dump["ids"], dtype=torch.float32).long().reshape(batch, seq)
    targets = torch.tensor(dump["targets"], dtype=torch.float32).long().reshape(-1)
    # gpuz's blocks, in transformers' names.
    blocks = [[n for g in b["params"] for n in joins[g]] for b in dump["blocks"] if b["params"]]
    opts = [torch.optim.Adam([P.p[n] for n in b], lr=dump["lr"], eps=dump["eps"]) for b in blocks]
    losses, grads = [], []
    for step in range(2):
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(forward(torch, s, P, ids, layers, seq, lora=lora), targets)
        loss.backward()
        losses.append(loss.item())
        grads.append({g: torch.cat([P.p[n].grad.flatten() for n in names]) for g, names in joins.items()})
        for b, o in zip(blocks, opts):
            torch.nn.utils.clip_grad_norm_([P.p[n] for n in b], dump["clip"])
            o.step()
    states = {n: o.state[P.p[n]] for b, o in zip(blocks, opts) for n in b}
    bad = []
    for i, (g, t) in enumerate(zip(dump["losses"], losses)):
        if abs(g - t) > 2e-6 * max(1.0, abs(t)):
            bad.append(f"loss {i + 1}: gpuz {g:.9g}, torch {t:.9g}")
    worst_g, worst_w = (0.0, ""), (0.0, "")
    for g, names in joins.items():
        # Tolerances: the first step's gradients differ by the rounding of
        # two float32 programs that sum in other orders (about 1e-6);
        # Adam's first step divides each gradient by its own size, which
        # amplifies those differences in the weights it moves and in the
        # second step's gradients and weights (up to about 3e-5 here).
        # The bugs these checks are for (a rotation's direction, a head's
        # key and value) change the first loss and gradients by far more.
        for step, key in enumerate(("grads", "grads2")):
            e = rel(torch.tensor(dump[key][g]), grads[step][g])
            worst_g = max(worst_g, (e, g))
            if e > (1e-5, 1e-4)[step]:
                bad.append(f"gradient of {g} at step {step + 1}: relative error {e:.3g}")
        tg = grads[0][g]
        if not tg.any():  # LoRA's A, whose first gradient is 0 (B is): its second
            tg = grads[1][g]
        # Adam's first steps move each weight by about lr·sign(gradient):
        # where a gradient is at the level of float32 rounding (a key's
        # bias, whose exact gradient is 0, as softmax ignores a shift of
        # all scores), its sign, and so the step, is rounding's, in either
        # program. The weights are compared where the first gradient
        # stands clear of that level (above 1e-3 of its tensor's RMS).
        tw = torch.cat([P.p[n].detach().flatten() for n in names])
        gw = torch.tensor(dump["final"][g])
        # The second step moves by lr·m/√v, m Adam's first moment: where m
        # is near 0 (the two gradients of opposite signs cancelling), the
        # step is as ill-conditioned, and is left out too.
        m = torch.cat([states[n]["exp_avg"].flatten() for n in names])
        clear = (tg.abs() > 1e-3 * tg.pow(2).mean().sqrt()) & (m.abs() > 1e-3 * m.pow(2).mean().sqrt())
        e = rel(gw[clear], tw[clear]) if clear.any() else 0.0
        worst_w = max(worst_w, (e, g))
        if e > 1e-4:
            bad.append(f"weights of {g} after two steps: relative error {e:.3g} "
                       f"({int(clear.sum())} of {clear.numel()} compared)")
    print(f"{len(joins)} parameters; losses gpuz {dump['losses']}, torch {losses}; worst gradient error "
          f"{worst_g[0]:.3g} ({worst_g[1]}), worst weight error {worst_w[0]:.3g} ({worst_w[1]})")
    if bad:
        print("\n".join(bad[:20]))
        return 1
    return 0


def random_init(torch, s, layers, seed=1, std=0.02):
    """gpuz-named parameters drawn N(0, std²) (norms at 1), for runs
    whose values do not matter (saved, count), each a flat tensor (a
    Python list of a 0.5B model's values would take minutes and tens of
    GB: gpu-check.sh's framework peaks load Qwen2.5-0.5B)."""
    g = torch.Generator().manual_seed(seed)
    d, hd, H, KV, I, V = s["hidden"], s["head_dim"], s["heads"], s["kv"], s["inter"], s["vocab"]
    shapes = {}
    if s["arch"] == "gpt2":
        shapes.update({"wte.weight": [V, d], "wpe.weight": [s["positions"], d], "ln_f.weight": [d], "ln_f.bias": [d]})
        for i in range(layers):
            pre = f"h.{i}."
            shapes.update({pre + "ln_1.weight": [d], pre + "ln_1.bias": [d], pre + "attn.c_attn.weight": [d, 3 * d],
                           pre + "attn.c_attn.bias": [3 * d], pre + "attn.c_proj.weight": [d, d],
                           pre + "attn.c_proj.bias": [d], pre + "ln_2.weight": [d], pre + "ln_2.bias": [d],
                           pre + "mlp.c_fc.weight": [d, I], pre + "mlp.c_fc.bias": [I],
                           pre + "mlp.c_proj.weight": [I, d], pre + "mlp.c_proj.bias": [d]})
    else:
        shapes.update({"model.embed_tokens.weight": [V, d], "model.norm.weight": [d]})
        qkv = (H + 2 * KV) * hd
        for i in range(layers):
            pre = f"model.layers.{i}."
            shapes.update({pre + "input_layernorm.weight": [d], pre + "self_attn.qkv_proj.weight": [qkv, d],
                           pre + "self_attn.o_proj.weight": [d, H * hd],
                           pre + "post_attention_layernorm.weight": [d],
                           pre + "mlp.gate_up_proj.weight": [2 * I, d], pre + "mlp.down_proj.weight": [d, I]})
            if s["qkv_bias"]:
                shapes[pre + "self_attn.qkv_proj.bias"] = [qkv]
            if s["o_bias"]:
                shapes[pre + "self_attn.o_proj.bias"] = [d]
            if s["mlp_bias"]:
                shapes[pre + "mlp.gate_up_proj.bias"] = [2 * I]
                shapes[pre + "mlp.down_proj.bias"] = [d]
    if not s["tie"]:
        shapes["lm_head.weight"] = [V, d]
    return {n: (torch.randn(sh, generator=g) * std).flatten() for n, sh in shapes.items()}


def random_lora(torch, s, P, rank):
    """PEFT's adapters of rank R on the family's default targets, random,
    every other weight frozen (none for rank 0): forward's lora argument.
    The adapters' values do not matter to saved and live; random ones
    keep saved's cast_of from matching zeros."""
    if rank <= 0:
        return None, ()
    # PEFT's defaults (peft/utils/constants.py): q_proj and v_proj for the
    # Llama family, c_attn for GPT-2.
    targets = ("c_attn",) if s["arch"] == "gpt2" else ("q_proj", "v_proj")
    for name, t in list(P.p.items()):
        parts = name.rsplit(".", 2)
        if len(parts) == 3 and parts[1] in targets and parts[2] == "weight":
            out, inp = (t.shape[1], t.shape[0]) if s["arch"] == "gpt2" else tuple(t.shape)
            P.add(f"{parts[0]}.{parts[1]}.lora_A.weight", torch.randn(rank, inp) * 0.02)
            P.add(f"{parts[0]}.{parts[1]}.lora_B.weight", torch.randn(out, rank) * 0.02)
    for name, t in P.p.items():
        t.requires_grad_(".lora_" in name)
    return 1.0, targets


def measured_parser(prog):
    """The arguments of the subcommands that measure one step's memory
    (live, saved): the config, the sizes, the precision and LoRA's rank."""
    import argparse
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("config")
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--layers", type=int)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--lora", type=int, default=0, metavar="R", help="PEFT's adapters of rank R on the default targets")
    return p


def measured_step(torch, a):
    """The step live and saved measure, drawn from seed 1: the config's
    sizes, the layers run, the parameters, LoRA's adapters, and one batch
    of ids and targets."""
    with open(a.config) as f:
        s = read_config(json.load(f))
    layers = a.layers or s["layers"]
    torch.manual_seed(1)
    P = load(torch, s, random_init(torch, s, layers), layers)
    lora = random_lora(torch, s, P, a.lora)
    ids = torch.randint(0, s["vocab"], (a.batch, a.seq_len))
    targets = torch.randint(0, s["vocab"], (a.batch * a.seq_len,))
    return s, layers, P, lora, ids, targets


def live(argv):
    """The largest set of tensors alive at once during an evaluation pass
    (the forward pass and the loss under torch.no_grad()), parameters
    apart: every aten op's results are tracked through a TorchDispatchMode
    (weak references, one entry per storage), and after each op the
    storages still referenced are summed; the largest sum is the peak. It
    counts every tensor an op returns (views share their base's storage)
    and no allocation inside a kernel that no tensor holds (a BLAS's
    packing, cuBLAS's workspace)."""
    import weakref
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    p = measured_parser("torch_llm.py live")
    p.add_argument("--list", action="store_true", help="print a table of the tensors alive at the peak instead of JSON")
    a = p.parse_args(argv)
    s, layers, P, lora, ids, targets = measured_step(torch, a)
    # storages: (data pointer, bytes) -> [weak references to the tensors
    # on it, where it was made, shape, dtype]; peak: the largest sum and
    # its storages. A view of a parameter is the parameter's storage.
    params = {t.storage().data_ptr() for t in P.p.values()}
    storages = {}
    peak = [0, []]

    class Live(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            # Storages gone before this op's results may share their
            # addresses: dropped first, so that a result is not filed
            # under a dead tensor's entry.
            alive = {k: e for k, e in storages.items() if any(r() is not None for r in e[0])}
            storages.clear()
            storages.update(alive)
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    st = t.storage()
                    if st.data_ptr() in params:
                        continue
                    key = (st.data_ptr(), st.size() * t.element_size())
                    entry = storages.setdefault(key, [[], f"{where[0]} {where[1]} {func}", list(t.shape),
                                                      str(t.dtype).replace("torch.", "")])
                    entry[0].append(weakref.ref(t))
            alive = {k: e for k, e in storages.items() if any(r() is not None for r in e[0])}
            storages.clear()
            storages.update(alive)
            total = sum(k[1] for k in alive)
            if total > peak[0]:
                peak[0], peak[1] = total, [(k[1], e[1], e[2], e[3]) for k, e in alive.items()]
            return out
    amp = torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16")
    with torch.no_grad(), amp, Live():
        logits = forward(torch, s, P, ids, layers, a.seq_len, lora=lora)
        at("cross_entropy", "head")
        loss = torch.nn.functional.cross_entropy(logits.float(), targets)
        del logits, loss
    params = sum(t.numel() * t.element_size() for t in P.p.values())
    if a.list:
        print(f"{'bytes':>9}  {'shape':16} {'dtype':9} made by")
        for b, made, shape, dtype in peak[1]:
            print(f"{b:9d}  {' '.join(map(str, shape)):16} {dtype:9} {made}")
        print(f"peak {peak[0]} bytes in {len(peak[1])} tensors beside {params} bytes of parameters (torch {torch.__version__})")
        return 0
    print(json.dumps({"live_bytes": peak[0], "parameter_bytes": params, "layers": layers, "seq_len": a.seq_len,
                      "batch": a.batch, "precision": a.precision, "lora": a.lora, "torch": torch.__version__,
                      "tensors": [dict(bytes=b, made=m, shape=sh, dtype=dt) for b, m, sh, dt in peak[1]]}))
    return 0


def saved(argv):
    """The bytes autograd keeps for the backward pass of one training step,
    and with --list each tensor: the block and op of the forward pass that
    saved it (where), its shape, dtype and storage."""
    import torch
    p = measured_parser("torch_llm.py saved")
    p.add_argument("--recompute", choices=["none", "blocks"], default="none")
    p.add_argument("--list", action="store_true", help="print a table of the saved tensors instead of JSON")
    a = p.parse_args(argv)
    s, layers, P, lora, ids, targets = measured_step(torch, a)
    params = {t.data_ptr() for t in P.p.values()}
    half = torch.bfloat16 if a.precision == "bf16" else None
    seen, tensors = set(), []

    def cast_of(t):
        """The parameter t is autocast's 16-bit copy of (or its
        transpose), if any."""
        if t.dtype != half or t.dim() > 2:
            return None
        for name, q in P.p.items():
            for view in (t, t.t()) if t.dim() == 2 else (t,):
                if view.shape == q.shape and torch.equal(view, q.detach().to(half)):
                    return name
        return None

    def keep(t, op=None):
        # A parameter, or a view of one, is not an activation; a tensor
        # saved twice (one storage) is kept once.
        st = t.storage()
        key = (st.data_ptr(), st.size())
        if st.data_ptr() in params or key in seen:
            return
        seen.add(key)
        c = cast_of(t)
        tensors.append(dict(block=where[0], op=op or where[1], shape=list(t.shape),
                            dtype=str(t.dtype).replace("torch.", ""), bytes=st.size() * t.element_size(),
                            note=f"16-bit copy of {c}" if c else ""))

    def pack(t):
        keep(t)
        return t
    amp = torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=half is not None)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        # torch.utils.checkpoint (use_reentrant=False) keeps each layer's
        # input in its closure, not through the hooks: counted here.
        logits = forward(torch, s, P, ids, layers, a.seq_len, checkpoint=a.recompute == "blocks",
                         kept=lambda x: keep(x, "checkpoint's input"), lora=lora)
        at("cross_entropy", "head")
        loss = torch.nn.functional.cross_entropy(logits.float(), targets)
    loss.backward()
    total = sum(t["bytes"] for t in tensors)
    if a.list:
        print(f"{'block':8} {'op':38} {'shape':16} {'dtype':9} {'bytes':>9}  note")
        for t in tensors:
            shape = " ".join(map(str, t["shape"]))
            print(f"{t['block']:8} {t['op']:38} {shape:16} {t['dtype']:9} {t['bytes']:9d}  {t['note']}")
        print(f"saved {total} bytes in {len(tensors)} tensors (torch {torch.__version__})")
        return 0
    print(json.dumps({"saved_bytes": total, "layers": layers, "seq_len": a.seq_len, "batch": a.batch,
                      "precision": a.precision, "recompute": a.recompute, "lora": a.lora, "torch": torch.__version__,
                      "tensors": tensors}))
    return 0


def peak(argv):
    """PyTorch's peak device memory over training steps of the model on
    CUDA: torch.cuda.max_memory_allocated() after two steps (the second
    with Adam's state in place), as gpuz's cuda mode's peak counts the
    weights, their gradients, Adam's moments and the activations."""
    import argparse
    import torch
    p = argparse.ArgumentParser(prog="torch_llm.py peak")
    p.add_argument("config")
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--layers", type=int)
    p.add_argument("--task", choices=["train", "eval"], default="train")
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        fail(f"peak: torch {torch.__version__} sees no usable CUDA GPU")
    with open(a.config) as f:
        s = read_config(json.load(f))
    layers = a.layers or s["layers"]
    dev = torch.device("cuda")
    P = load(torch, s, random_init(torch, s, layers), layers)
    for t in P.p.values():
        t.data = t.data.to(dev)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    ids = torch.randint(0, s["vocab"], (a.batch, a.seq_len), device=dev)
    targets = torch.randint(0, s["vocab"], (a.batch * a.seq_len,), device=dev)
    opt = torch.optim.Adam(list(P.p.values()), lr=1e-4)
    for _ in range(2):
        if a.task == "train":
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(forward(torch, s, P, ids, layers, a.seq_len), targets)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad():
                forward(torch, s, P, ids, layers, a.seq_len).mean().item()
    torch.cuda.synchronize()
    doc = {"peak_device_bytes": torch.cuda.max_memory_allocated(), "task": a.task, "layers": layers,
           "seq_len": a.seq_len, "batch": a.batch, "params": sum(t.numel() for t in P.p.values()),
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    print(json.dumps(doc))
    if a.json:
        write_json(a.json, doc)
    return 0


def bench(argv):
    """Epoch times of training or evaluating the model, as
    torch_reference.py measures the other workloads."""
    import argparse
    import platform
    import statistics
    import time
    p = argparse.ArgumentParser(prog="torch_llm.py bench")
    p.add_argument("config")
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--layers", type=int)
    p.add_argument("--task", choices=["train", "eval"], default="train")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2, as the peer)")
    p.add_argument("--json", metavar="FILE", help="write the run as JSON to FILE ('-': standard output)")
    a = p.parse_args(argv)
    if min(a.seq_len, a.batch, a.samples) < 1 or a.samples % a.batch:
        p.error(f"--seq-len, --batch and --samples must be positive and --batch must divide --samples, got "
                f"{a.seq_len}, {a.batch}, {a.samples}")
    if a.epochs <= BENCH_WARMUP:
        p.error(f"--epochs must be more than the {BENCH_WARMUP} warm-up epoch, got {a.epochs}")
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch is not installed for {sys.executable} ({e}): apt-get install python3-torch")
    try:
        with open(a.config) as f:
            s = read_config(json.load(f))
    except (OSError, ValueError, KeyError) as e:
        fail(f"{a.config}: {e}", 2)
    layers = a.layers or s["layers"]
    if not 1 <= layers <= s["layers"]:
        p.error(f"--layers must be in [1, {s['layers']}], got {layers}")
    if a.threads < 1:
        p.error(f"--threads must be positive, got {a.threads}")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    P = load(torch, s, random_init(torch, s, layers, a.seed), layers)
    # gpuz's blocks: embed (the tied head's weight with it), layer1…N, head
    # (the final norm, and lm_head when untied).
    names = list(P.p)
    layer_of = lambda n: int(n.split(".")[2]) if n.startswith("model.layers.") else \
        int(n.split(".")[1]) if n.startswith("h.") else None
    blocks = [[n for n in names if n in ("model.embed_tokens.weight", "wte.weight", "wpe.weight")]]
    blocks += [[n for n in names if layer_of(n) == i] for i in range(layers)]
    blocks.append([n for n in names if n in ("model.norm.weight", "ln_f.weight", "ln_f.bias", "lm_head.weight")])
    assert sum(len(b) for b in blocks) == len(names), "a parameter is in no block"
    params = [P.p[n] for b in blocks for n in b]
    n_params = sum(t.numel() for t in params)
    train = a.task == "train"
    opts = [torch.optim.Adam([P.p[n] for n in b], lr=BENCH_LR) for b in blocks] if train else []
    g = torch.Generator().manual_seed(a.seed)
    tokens = torch.randint(0, s["vocab"], (a.samples, a.seq_len + 1), generator=g)
    batches = a.samples // a.batch
    seconds, values = [], []
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        total = torch.zeros(())
        for i in range(batches):
            chunk = tokens[i * a.batch:(i + 1) * a.batch]
            ids, targets = chunk[:, :-1], chunk[:, 1:].reshape(-1)
            if train:
                for o in opts:
                    o.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(forward(torch, s, P, ids, layers, a.seq_len), targets)
                loss.backward()
                for b, o in zip(blocks, opts):
                    torch.nn.utils.clip_grad_norm_([P.p[n] for n in b], BENCH_CLIP)
                    o.step()
                total += loss.detach()
            else:
                with torch.no_grad():
                    total += forward(torch, s, P, ids, layers, a.seq_len).mean()
        value = total.item() / batches
        seconds.append(time.perf_counter() - t0)
        values.append(value)
        what = "mean loss" if train else "mean output"
        print(f"{a.task}: {epoch + 1}  {what}: {value:.4f}  time: {seconds[-1]:.3f} s  on cpu"
              + ("  (warm-up)" if epoch < BENCH_WARMUP else ""), flush=True)
    timed = seconds[BENCH_WARMUP:]
    median = statistics.median(timed)
    doc = {
        "tool": "torch_llm.py bench", "model": a.config, "task": a.task, "device": "cpu",
        "seq_len": a.seq_len, "batch": a.batch, "samples": a.samples, "batches": batches, "layers": layers,
        "epochs": a.epochs, "warmup": BENCH_WARMUP, "seed": a.seed,
        "params": n_params, "param_bytes": 4 * n_params, "blocks": len(blocks),
        "epoch_seconds": seconds, "median_seconds": median,
        "values": values, "value": "mean loss" if train else "mean output",
        "torch": torch.__version__, "python": platform.python_version(), "threads": torch.get_num_threads(),
    }
    print(f"{a.config} {a.task} on cpu (torch {torch.__version__}, {torch.get_num_threads()} threads): median "
          f"{median:.6g} s per epoch over {len(timed)} timed epochs; {n_params} parameters")
    if a.json:
        write_json(a.json, doc)
    return 0


class KVCacheModel:
    """The model run a chunk of new tokens at a time against a KV cache of
    its own: per decoder layer a key and a value tensor [batch, kv_heads,
    context, head_dim], allocated up front and written in place at the new
    tokens' positions, the new tokens' queries attending to the cache's
    positions up to their own. Written plainly from forward's formulas,
    so that --check compares two ways of computing the same logits."""

    def __init__(self, torch, s, P, layers, batch, context, device="cpu", dtype=None):
        self.torch, self.s, self.P, self.layers = torch, s, P, layers
        dtype = dtype or torch.float32
        shape = (batch, s["kv"], context, s["head_dim"])
        self.keys = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.values = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.context = context
        if s["arch"] != "gpt2":
            # transformers' cos and sin of every position of the context,
            # as forward computes them for its positions.
            freqs = torch.outer(torch.arange(context, dtype=torch.int64).float(), inv_freq(torch, s))
            emb = torch.cat((freqs, freqs), dim=-1)
            self.cos, self.sin = emb.cos().to(device, dtype), emb.sin().to(device, dtype)

    def attend(self, i, q, k, v, start):
        """Writes the new tokens' keys and values k, v [B, KV, n, hd] into
        layer i's cache at positions start … start+n−1 and returns the
        attention output [B, n, H·hd] of their queries q [B, H, n, hd]
        against positions 0 … start+j for new token j."""
        torch, F = self.torch, self.torch.nn.functional
        B, H, n, hd = q.shape
        end = start + n
        self.keys[i][:, :, start:end] = k
        self.values[i][:, :, start:end] = v
        K, V = self.keys[i][:, :, :end], self.values[i][:, :, :end]
        K, V = repeat_kv(K, H // K.shape[1]), repeat_kv(V, H // V.shape[1])
        pos = torch.arange(end, device=q.device)[None, :]
        mask = torch.zeros(n, end, device=q.device, dtype=q.dtype).masked_fill(
            pos > torch.arange(start, end, device=q.device)[:, None], float("-inf"))
        scores = q @ K.transpose(2, 3) / math.sqrt(hd) + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(V.dtype)
        return (probs @ V).transpose(1, 2).reshape(B, n, H * hd)

    def step(self, ids, start):
        """The logits [B, n, vocab] of the new tokens ids [B, n] at
        positions start … start+n−1, their keys and values written into
        the cache."""
        torch, F, s, p = self.torch, self.torch.nn.functional, self.s, self.P.p
        B, n = ids.shape
        d, hd, H, KV = s["hidden"], s["head_dim"], s["heads"], s["kv"]
        if start + n > self.context:
            fail(f"generate: positions up to {start + n} do not fit a cache of {self.context}")
        if s["arch"] == "gpt2":
            x = F.embedding(ids, p["wte.weight"]) + p["wpe.weight"][start:start + n]
            for i in range(self.layers):
                pre = f"h.{i}."
                h = F.layer_norm(x, (d,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], s["eps"])
                qkv = torch.addmm(p[pre + "attn.c_attn.bias"], h.reshape(-1, d), p[pre + "attn.c_attn.weight"])
                q, k, v = (t.reshape(B, n, H, hd).transpose(1, 2) for t in qkv.reshape(B, n, 3 * d).split(d, dim=2))
                a = self.attend(i, q, k, v, start)
                a = torch.addmm(p[pre + "attn.c_proj.bias"], a.reshape(-1, d), p[pre + "attn.c_proj.weight"])
                x = x + a.reshape(B, n, d)
                h = F.layer_norm(x, (d,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], s["eps"])
                f = torch.addmm(p[pre + "mlp.c_fc.bias"], h.reshape(-1, d), p[pre + "mlp.c_fc.weight"])
                f = 0.5 * f * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (f + 0.044715 * torch.pow(f, 3.0))))
                f = torch.addmm(p[pre + "mlp.c_proj.bias"], f, p[pre + "mlp.c_proj.weight"])
                x = x + f.reshape(B, n, d)
            x = F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], s["eps"])
            return F.linear(x, p["wte.weight"] if s["tie"] else p["lm_head.weight"])

        def rms(x, w):
            return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s["eps"]))

        def lin(x, name):
            return F.linear(x, p[name + ".weight"], p.get(name + ".bias"))

        def rotate_half(x):
            x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
            return torch.cat((-x2, x1), dim=-1)
        cos, sin = self.cos[start:start + n], self.sin[start:start + n]
        x = F.embedding(ids, p["model.embed_tokens.weight"])
        for i in range(self.layers):
            pre = f"model.layers.{i}."
            h = rms(x, p[pre + "input_layernorm.weight"])
            q = lin(h, pre + "self_attn.q_proj").reshape(B, n, H, hd).transpose(1, 2)
            k = lin(h, pre + "self_attn.k_proj").reshape(B, n, KV, hd).transpose(1, 2)
            v = lin(h, pre + "self_attn.v_proj").reshape(B, n, KV, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            x = x + lin(self.attend(i, q, k, v, start), pre + "self_attn.o_proj")
            h = rms(x, p[pre + "post_attention_layernorm.weight"])
            m = F.silu(lin(h, pre + "mlp.gate_proj")) * lin(h, pre + "mlp.up_proj")
            x = x + lin(m, pre + "mlp.down_proj")
        x = rms(x, p["model.norm.weight"])
        return F.linear(x, p["model.embed_tokens.weight"] if s["tie"] else p["lm_head.weight"])


def greedy(torch, model, prompt, tokens, sync=lambda: None):
    """Prefills prompt [B, P] into model's cache and generates tokens ids
    one at a time, greedily. Returns the ids [B, N], the logits that chose
    them [B, N, vocab], and the seconds of the prefill and of the N−1
    decode steps; sync waits for a GPU's queued work before each clock
    read."""
    import time
    B, P = prompt.shape
    sync()
    t0 = time.perf_counter()
    last = model.step(prompt, 0)[:, -1]
    ids, logits = [last.argmax(-1)], [last]
    sync()
    t1 = time.perf_counter()
    for i in range(1, tokens):
        last = model.step(ids[-1][:, None], P + i - 1)[:, -1]
        ids.append(last.argmax(-1))
        logits.append(last)
    sync()
    t2 = time.perf_counter()
    return torch.stack(ids, 1), torch.stack(logits, 1).float(), t1 - t0, t2 - t1


def generate(argv):
    """Greedy generation with a KV cache (see the module's doc)."""
    import argparse
    import statistics
    p = argparse.ArgumentParser(prog="torch_llm.py generate")
    p.add_argument("file", metavar="DUMP.json|CONFIG.json")
    p.add_argument("--prompt", type=int, help="prompt tokens per sequence (a CONFIG's)")
    p.add_argument("--tokens", type=int, help="tokens to generate (a CONFIG's)")
    p.add_argument("--batch", type=int, default=1, help="sequences (a CONFIG's; default 1)")
    p.add_argument("--layers", type=int, help="decoder layers (a CONFIG's; default all)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--init-std", type=float, default=0.02, help="a CONFIG's weights' standard deviation")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--repeats", type=int, default=1, help="timed runs after a warm-up one (default 1: no warm-up)")
    p.add_argument("--check", action="store_true", help="compare with the forward pass over the same tokens")
    p.add_argument("--top", type=int, metavar="K", help="print each position's K largest logits, not all")
    p.add_argument("--json", metavar="FILE", default="-", help="write the JSON to FILE (default: standard output)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the model and its caches live (cuda: the JSON adds max_memory_allocated)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="the weights' and caches' type (a model loaded in 16 bits)")
    a = p.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch is not installed for {sys.executable} ({e}): apt-get install python3-torch")
    if a.check and a.dtype != "float32":
        p.error("--check compares with the float32 forward pass: use it with --dtype float32")
    if a.device == "cuda" and not torch.cuda.is_available():
        fail("generate --device cuda: torch.cuda.is_available() is false", 2)
    try:
        with open(a.file) as f:
            doc = json.load(f)
        dump = "init" in doc
        s = read_config(doc["config"] if dump else doc)
    except (OSError, ValueError, KeyError) as e:
        fail(f"{a.file}: {e}", 2)
    if a.threads < 1 or a.repeats < 1 or (a.top is not None and a.top < 1):
        p.error("--threads, --repeats and --top must be positive")
    torch.set_num_threads(a.threads)
    if dump:
        layers = doc.get("layers") or s["layers"]
        P = load(torch, s, doc["init"], layers)
        prompt = torch.tensor(doc["prompt"], dtype=torch.float64).long()
        tokens = doc["tokens"]
    else:
        if a.prompt is None or a.tokens is None:
            p.error("a CONFIG needs --prompt and --tokens")
        layers = a.layers or s["layers"]
        if not 1 <= layers <= s["layers"]:
            p.error(f"--layers must be in [1, {s['layers']}], got {layers}")
        torch.manual_seed(a.seed)
        P = load(torch, s, random_init(torch, s, layers, a.seed, a.init_std), layers)
        g = torch.Generator().manual_seed(a.seed)
        prompt = torch.randint(0, s["vocab"], (a.batch, a.prompt), generator=g)
        tokens = a.tokens
    if prompt.dim() != 2 or prompt.shape[1] < 1 or tokens < 1:
        fail(f"{a.file}: need a prompt of at least one id per sequence and at least one token, got "
             f"{list(prompt.shape)} and {tokens}", 2)
    B, Pn = prompt.shape
    context = Pn + tokens
    if s["arch"] == "gpt2" and context > s["positions"]:
        fail(f"generate: a context of {context} is beyond GPT-2's {s['positions']} positions", 2)
    dtype = getattr(torch, a.dtype)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    if a.device != "cpu" or dtype != torch.float32:
        for name in list(P.p):
            P.p[name] = P.p[name].to(a.device, dtype)
        prompt = prompt.to(a.device)
    if a.device == "cuda":
        sync()
        torch.cuda.reset_peak_memory_stats()
    runs = []
    with torch.no_grad():
        for _ in range(a.repeats + (a.repeats > 1)):
            runs.append(greedy(torch, KVCacheModel(torch, s, P, layers, B, context, a.device, dtype), prompt, tokens, sync))
        ids, logits = runs[-1][0], runs[-1][1]
        timed = runs[1:] if len(runs) > 1 else runs
        prefill, decode = statistics.median(r[2] for r in timed), statistics.median(r[3] for r in timed)
        out = {"ids": ids.tolist()}
        if a.top:
            top = logits.topk(min(a.top, logits.shape[-1]), dim=-1)
            out["top_ids"], out["top_logits"] = top.indices.tolist(), top.values.tolist()
        else:
            out["logits"] = logits.tolist()
        status = 0
        if a.check:
            # The forward pass over prompt + generated tokens (the last
            # one is never fed) gives, at positions P−1 … P+N−2, the
            # logits that chose the generated ids.
            seq = torch.cat((prompt, ids[:, :-1]), 1)
            full = forward(torch, s, P, seq, layers, seq.shape[1]).reshape(B, seq.shape[1], -1)[:, Pn - 1:]
            err = rel(logits, full)
            same = bool((full.argmax(-1) == ids).all())
            out["check"] = {"relative_error": err, "ids_are_argmax": same}
            if err > 2e-5 or not same:
                sys.stderr.write(f"torch_llm: generate --check: decode's logits off the forward pass's by {err:.3g}"
                                 f" (relative), ids {'' if same else 'not '}the forward pass's argmax\n")
                status = 1
    steps = tokens - 1
    out.update({"batch": B, "prompt": Pn, "tokens": tokens, "layers": layers, "context": context,
                "prefill_seconds": prefill, "decode_seconds": decode, "decode_steps": steps,
                "prefill_tokens_per_second": B * Pn / prefill,
                "decode_tokens_per_second": B * steps / decode if steps else None,
                "repeats": a.repeats, "threads": torch.get_num_threads(), "torch": torch.__version__,
                "device": a.device, "dtype": a.dtype})
    if a.device == "cuda":
        out["max_memory_allocated"] = torch.cuda.max_memory_allocated()
        out["gpu"] = torch.cuda.get_device_name()
    write_json(a.json, out)
    return status


# bench's optimiser and epochs, torch_reference.py's (and gpuz's defaults).
BENCH_LR = 1e-4
BENCH_CLIP = 1.0
BENCH_WARMUP = 1


def main(argv):
    if len(argv) == 2 and argv[0] == "check":
        return check(argv[1])
    if argv in (["saved", "-"], ["live", "-"]):
        # One run per line of standard input (its arguments), one JSON
        # line each: a test's cases in one process, torch imported once.
        run = saved if argv[0] == "saved" else live
        for line in sys.stdin:
            if line.strip():
                run(line.split())
                sys.stdout.flush()
        return 0
    if argv and argv[0] == "saved":
        return saved(argv[1:])
    if argv and argv[0] == "live":
        return live(argv[1:])
    if argv and argv[0] == "peak":
        return peak(argv[1:])
    if argv and argv[0] == "bench":
        return bench(argv[1:])
    if argv and argv[0] == "generate":
        return generate(argv[1:])
    fail("usage: torch_llm.py check DUMP.json | saved CONFIG.json --seq-len S --batch B [--layers N] "
         "[--precision fp32|bf16] [--recompute none|blocks] [--lora R] [--list] | saved - | live CONFIG.json "
         "--seq-len S --batch B [--layers N] [--precision fp32|bf16] [--lora R] [--list] | live - | peak CONFIG.json --seq-len S --batch B "
         "[--layers N] [--task train|eval] [--json FILE] | bench CONFIG.json --seq-len S --batch B "
         "--samples N --epochs E [--layers L] [--task train|eval] [--json FILE] | generate DUMP.json|CONFIG.json "
         "[--prompt P --tokens N --batch B --layers L] [--check] [--top K] [--json FILE]", 2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
