#!/usr/bin/env node
// llamacpp_buffers.mjs: the buffers llama.cpp (node-llama-cpp's prebuilt
// CPU build) allocates to run a GGUF file on the CPU, read from its own
// log lines, for comparing with gpuz's plan of the same file
// (scripts/plan-vs-llamacpp.sh).
//
//	node scripts/llamacpp_buffers.mjs --model FILE [--context N] [--batch B] [--threads T]
//
// It loads the model with no layer offloaded, creates one context of N
// positions (default 2048) and one sequence with a batch of B tokens
// (n_batch and n_ubatch both, default 512: node-llama-cpp's default,
// min(N, 512)) and flash attention as node-llama-cpp leaves it ("auto",
// llama.cpp's own default too, which llama.cpp resolves per backend), and
// disposes of them without evaluating a token. It prints one JSON object:
// the model's size (llama_model_size: the sum of its tensors' bytes,
// exact) and each buffer llama.cpp logs at info and debug level, in MiB
// as llama.cpp prints them (two decimals; the compute buffer's four, from
// the line llama.cpp logs when the context is freed):
//
//	load_tensors:   CPU_Mapped model buffer size =   136.40 MiB
//	llama_context:        CPU  output buffer size =     0.19 MiB
//	llama_kv_cache:        CPU KV buffer size =    45.00 MiB
//	sched_reserve:        CPU compute buffer size =   102.51 MiB
//
// and the context's n_ctx, n_batch, n_ubatch, the KV cache's cells and
// types, and whether flash attention was enabled.
//
// node-llama-cpp is found as llamacpp_peer.mjs says.
import { parseArgs } from "node:util";

import { failer, loadModel, nodeLlamaCpp, peerIdentity, positive } from "./llamacpp_peer.mjs";

const fail = failer("llamacpp_buffers");

const { values: opts } = parseArgs({
  options: {
    model: { type: "string" },
    context: { type: "string", default: "2048" },
    batch: { type: "string", default: "512" },
    threads: { type: "string", default: "1" },
  },
  strict: true,
});

if (!opts.model) fail("--model FILE is required");
const contextSize = positive(opts, "context", fail);
const batchSize = positive(opts, "batch", fail);
const threads = positive(opts, "threads", fail);

const { getLlama, LlamaLogLevel } = await nodeLlamaCpp(fail);

// buffers collects the sizes the log lines name: kind → backend → MiB.
const buffers = { model: {}, output: {}, kv: {}, compute: {} };
const context = { flash_attention: null };
const patterns = [
  [/load_tensors:\s+(\S+) model buffer size =\s+([\d.]+) MiB/, (m) => (buffers.model[m[1]] = Number(m[2]))],
  [/llama_context:\s+(\S+)\s+output buffer size =\s+([\d.]+) MiB/, (m) => (buffers.output[m[1]] = Number(m[2]))],
  [/llama_kv_cache:\s+(\S+) KV buffer size =\s+([\d.]+) MiB/, (m) => (buffers.kv[m[1]] = Number(m[2]))],
  [/sched_reserve:\s+(\S+) compute buffer size =\s+([\d.]+) MiB/, (m) => (buffers.compute[m[1]] ??= Number(m[2]))],
  [/~llama_context:\s+(\S+) compute buffer size is ([\d.]+) MiB/, (m) => (buffers.compute[m[1]] = Number(m[2]))],
  [/llama_context: n_ctx\s+= (\d+)/, (m) => (context.n_ctx = Number(m[1]))],
  [/llama_context: n_batch\s+= (\d+)/, (m) => (context.n_batch = Number(m[1]))],
  [/llama_context: n_ubatch\s+= (\d+)/, (m) => (context.n_ubatch = Number(m[1]))],
  [/llama_kv_cache: size = .*\(\s*(\d+) cells.*K \((\w+)\).*V \((\w+)\)/, (m) => Object.assign(context, { kv_cells: Number(m[1]), kv_k_type: m[2], kv_v_type: m[3] })],
  [/Flash Attention (enabled|disabled)/, (m) => (context.flash_attention = m[1] === "enabled")],
];
const logger = (_level, message) => {
  for (const line of message.split("\n")) {
    for (const [re, take] of patterns) {
      const m = re.exec(line);
      if (m) take(m);
    }
  }
};

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.debug, logger });
const model = await loadModel(llama, opts.model, fail);
const modelSize = model.size;
const ctx = await model.createContext({ contextSize, batchSize, threads, sequences: 1 });
await ctx.dispose();
await model.dispose();
await llama.dispose();

process.stdout.write(
  JSON.stringify({
    ...peerIdentity(llama, opts.model),
    model_size_bytes: modelSize,
    context,
    buffers_mib: buffers,
  }) + "\n",
);
