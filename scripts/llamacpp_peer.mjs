// llamacpp_peer.mjs: what the llama.cpp peer scripts (llamacpp_buffers.mjs,
// llamacpp_generate.mjs) share: refusing bad input in one line with status
// 2, reading a positive integer flag, finding node-llama-cpp and loading a
// GGUF file with no layer offloaded.
//
// node-llama-cpp is found in the folder GPUZ_NODE_LLAMA_CPP names, or
// .peer at the repository's root, where it is installed by
//
//	mkdir -p .peer && (cd .peer && npm i -E node-llama-cpp@3.21.1)
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// failer returns the function that writes "script: msg" to standard error
// and exits with status 2.
export function failer(script) {
  return (msg) => {
    process.stderr.write(`${script}: ${msg}\n`);
    process.exit(2);
  };
}

// positive reads opts[name] as a positive integer, or fails naming --name.
export function positive(opts, name, fail) {
  const n = Number(opts[name]);
  if (!Number.isInteger(n) || n <= 0) fail(`--${name} must be a positive integer, got ${opts[name]}`);
  return n;
}

// nodeLlamaCpp imports node-llama-cpp from the peer's folder, or fails
// saying how to install it.
export async function nodeLlamaCpp(fail) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const peer = process.env.GPUZ_NODE_LLAMA_CPP || join(root, ".peer");
  let entry;
  try {
    entry = createRequire(join(peer, "package.json")).resolve("node-llama-cpp");
  } catch {
    fail(`node-llama-cpp is not installed in ${peer}: mkdir -p .peer && (cd .peer && npm i -E node-llama-cpp@3.21.1)`);
  }
  return import(pathToFileURL(entry).href);
}

// loadModel loads the GGUF file at path on the CPU alone (no layer
// offloaded), or fails naming --model.
export async function loadModel(llama, path, fail) {
  try {
    return await llama.loadModel({ modelPath: resolve(path), gpuLayers: 0 });
  } catch (e) {
    fail(`--model ${path}: ${e.message}`);
  }
}

// peerIdentity is the fields that begin each peer script's JSON
// document: the tool, node-llama-cpp's version, the llama.cpp release
// it bundles and the model file.
export function peerIdentity(llama, model) {
  return {
    tool: "llama.cpp",
    node_llama_cpp: "3.21.1",
    llama_cpp_release: llama.llamaCppRelease?.release ?? null,
    model,
  };
}
