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
// node-llama-cpp is found as llamacpp_peer.mjs says.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

import { failer, loadModel, nodeLlamaCpp, peerIdentity, positive } from "./llamacpp_peer.mjs";

const fail = failer("llamacpp_generate");

const { values: opts } = parseArgs({
  options: {
    model: { type: "string" },
    "prompt-ids": { type: "string", multiple: true },
    tokens: { type: "string", default: "16" },
    threads: { type: "string", default: "1" },
  },
  strict: true,
});

if (!opts.model) fail("--model FILE is required");
if (!opts["prompt-ids"]) fail("--prompt-ids 1,2,3 is required");
const prompts = opts["prompt-ids"].map((list) =>
  list.split(",").map((s) => {
    const id = Number(s);
    if (s.trim() === "" || !Number.isInteger(id) || id < 0) fail(`--prompt-ids: ${JSON.stringify(s)} is not a token id`);
    return id;
  }),
);
const tokens = positive(opts, "tokens", fail);
const threads = positive(opts, "threads", fail);

const { getLlama, LlamaLogLevel } = await nodeLlamaCpp(fail);

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await loadModel(llama, opts.model, fail);
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
    ...peerIdentity(llama, opts.model),
    threads: context.currentThreads ?? threads,
    load_average: { before: loadBefore, after: loadavg() },
    sequences,
  }) + "\n",
);
await context.dispose();
await model.dispose();
await llama.dispose();
