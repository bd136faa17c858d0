#!/usr/bin/env node
// llamacpp_generate.mjs: greedy generation by llama.cpp (node-llama-cpp's
// prebuilt CPU build) from a GGUF file and explicit prompt token ids, for
// comparing with gpuz's generation of the same weights (gpuz llm export
// --gguf FILE writes them).
//
//	node scripts/llamacpp_generate.mjs --model FILE --prompt-ids 1,2,3 [--prompt-ids 4,5 …] --tokens N [--threads T]
//
// It prints one JSON object: for each prompt, in order and each from an
// empty cache, the generated ids (each the argmax of its logits:
// temperature 0, no penalties, not stopping at the end-of-sequence token)
// and the timings as llama-bench names them: the prompt's evaluation (pp:
// the prompt's tokens over the time to the first generated token) and the
// generation (tg: the tokens after the first over their time), each in
// tokens per second; and the machine's load averages (1, 5 and 15 minutes)
// before and after, since llama.cpp's threads meet at a spin barrier after
// every op and other work on the cores slows them by far more than its
// share. The first prompt's timings include warming up: give a prompt
// twice to time it warm.
//
// node-llama-cpp is found in the folder GPUZ_NODE_LLAMA_CPP names, or
// .peer at the repository's root, where it is installed by
//
//	mkdir -p .peer && (cd .peer && npm i -E node-llama-cpp@3.21.1)
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

function fail(msg) {
  process.stderr.write(`llamacpp_generate: ${msg}\n`);
  process.exit(2);
}

const { values: opts } = parseArgs({
  options: {
    model: { type: "string" },
    "prompt-ids": { type: "string", multiple: true },
    tokens: { type: "string", default: "16" },
    threads: { type: "string", default: "1" },
  },
  strict: true,
});

function positive(name) {
  const n = Number(opts[name]);
  if (!Number.isInteger(n) || n <= 0) fail(`--${name} must be a positive integer, got ${opts[name]}`);
  return n;
}

if (!opts.model) fail("--model FILE is required");
if (!opts["prompt-ids"]) fail("--prompt-ids 1,2,3 is required");
const prompts = opts["prompt-ids"].map((list) =>
  list.split(",").map((s) => {
    const id = Number(s);
    if (s.trim() === "" || !Number.isInteger(id) || id < 0) fail(`--prompt-ids: ${JSON.stringify(s)} is not a token id`);
    return id;
  }),
);
const tokens = positive("tokens");
const threads = positive("threads");

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const peer = process.env.GPUZ_NODE_LLAMA_CPP || join(root, ".peer");
let entry;
try {
  entry = createRequire(join(peer, "package.json")).resolve("node-llama-cpp");
} catch {
  fail(`node-llama-cpp is not installed in ${peer}: mkdir -p .peer && (cd .peer && npm i -E node-llama-cpp@3.21.1)`);
}
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
let model;
try {
  model = await llama.loadModel({ modelPath: resolve(opts.model), gpuLayers: 0 });
} catch (e) {
  fail(`--model ${opts.model}: ${e.message}`);
}
for (const id of prompts.flat()) {
  if (id >= model.tokens.size) fail(`--prompt-ids: ${id} is not below the vocabulary's ${model.tokens.size} tokens`);
}
const longest = Math.max(...prompts.map((p) => p.length));
const context = await model.createContext({
  contextSize: longest + tokens,
  batchSize: longest,
  threads,
  sequences: 1,
});
const sequence = context.getSequence();

const seconds = (a, b) => Number(b - a) / 1e9;
const loadBefore = loadavg();
const sequences = [];
for (const prompt of prompts) {
  await sequence.clearHistory();
  const out = [];
  const start = process.hrtime.bigint();
  let first;
  for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
    if (first === undefined) first = process.hrtime.bigint();
    out.push(token);
    if (out.length === tokens) break;
  }
  const end = process.hrtime.bigint();
  const pp = seconds(start, first);
  const tg = seconds(first, end);
  sequences.push({
    prompt_tokens: prompt.length,
    tokens: out,
    prompt_seconds: pp,
    prompt_tokens_per_s: prompt.length / pp,
    generate_seconds: tg,
    generate_tokens_per_s: tokens > 1 ? (tokens - 1) / tg : null,
  });
}
process.stdout.write(
  JSON.stringify({
    tool: "llama.cpp",
    node_llama_cpp: "3.21.1",
    llama_cpp_release: llama.llamaCppRelease?.release ?? null,
    model: opts.model,
    threads: context.currentThreads ?? threads,
    load_average: { before: loadBefore, after: loadavg() },
    sequences,
  }) + "\n",
);
await context.dispose();
await model.dispose();
await llama.dispose();
