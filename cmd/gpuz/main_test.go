package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuz/internal/device"
	"gpuz/internal/report/reporttest"
)

// gpuzBinary is the command built once for the tests that run it as a
// process.
var gpuzBinary string

func TestMain(m *testing.M) {
	if os.Getenv(signalChildEnv) != "" {
		signalChild()
	}
	dir, err := os.MkdirTemp("", "gpuz-test")
	if err != nil {
		panic(err)
	}
	gpuzBinary = filepath.Join(dir, "gpuz")
	build := exec.Command("go", "build", "-o", gpuzBinary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building gpuz: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestBadInput runs the built binary on bad command lines, sizes whose
// products overflow int64 among them: each must exit with status 2 and one
// line on stderr naming the problem, before anything is made: no panic, no
// goroutine dump, nothing on stdout.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string // the command line, split at spaces, '' an empty argument
		want string // in the error line
	}{
		{"unknown model", "lineer train", "unknown command \"lineer\""},
		{"negative lora", "linear train cpu --lora -1", "--lora must be 0 (off) or a rank from 1 to 65536, got -1"},
		{"lora target the model lacks", "llm train cpu --lora 16 --lora-targets c_attn", "--lora-targets: the model has no linear layer \"c_attn\""},
		{"lora on resnet", "resnet train cpu --lora 16", "unknown flag: --lora"},
		{"lora alpha without a rank", "linear train cpu --lora-alpha 8", "--lora-alpha and --lora-targets need --lora R"},
		{"lora empty target", "plan linear train --lora 16 --lora-targets layer,,x", "--lora-targets \"layer,,x\" has an empty name"},
		{"fit lora target the model lacks", "fit llm train --lora 0,16 --lora-targets c_attn", "--lora-targets: the model has no linear layer \"c_attn\""},
		{"unknown task", "linear fit", "unknown task \"fit\""},
		// --place applies to the hybrid mode only: without it the flag was
		// ignored in silence (issue 44 item 26).
		{"place without hybrid", "attention train cpu --place host:0", "--place places the hybrid mode's blocks; add hybrid to the modes"},
		{"place without hybrid in plan", "plan attention train cpu --place host:0", "--place places the hybrid mode's blocks; add hybrid to the modes"},
		{"hybrid without place", "attention train hybrid", "the hybrid mode needs --place"},
		{"unknown weight kind", "llm eval cpu --layers 1 --weights q5_0", "--weights: unknown weight kind \"q5_0\""},
		{"quantized weights trained", "llm train cpu --layers 1 --weights q4_0", "--weights q4_0 stores frozen weights, and training changes every weight"},
		{"quantized gpt2", "llm eval cpu --model gpt2 --layers 1 --weights q8_0", "--weights q8_0: only a Llama-family decoder's projections are stored quantized, not gpt2's"},
		{"load weights of a preset", "llm generate cpu --model smollm2-135m --layers 1 --load-weights", "--load-weights reads a GGUF file's weights; --model smollm2-135m is not one"},
		{"weights against precision", "llm eval cpu --layers 1 --weights bf16 --precision fp16", "--weights bf16 stores the weights in bf16, and --precision is fp16"},
		{"generate zero prompt", "llm generate cpu --layers 1 --prompt 0", "--prompt must be positive, got 0"},
		{"generate negative tokens", "llm generate cpu --layers 1 --tokens -1", "--tokens must be positive, got -1"},
		{"generate short context", "llm generate cpu --layers 1 --prompt 10 --tokens 5 --context 12", "--context 12 cannot hold a prompt of 10 and 5 generated tokens: it needs 14 positions"},
		{"generate context beyond learned positions", "llm generate cpu --model gpt2 --layers 1 --context 2000", "a context of 2000 positions is beyond the model's n_positions, 1024"},
		{"generate context beyond rotary positions", "llm generate cpu --layers 1 --context 9000", "a context of 9000 positions is beyond the model's max_position_embeddings, 8192"},
		{"generate prompt id not a number", "llm generate cpu --layers 1 --prompt-ids 1,x", "--prompt-ids: \"x\" (at 1) is not a token id"},
		{"generate prompt id beyond the vocabulary", "llm generate cpu --layers 1 --prompt-ids 1,49152", "prompt id 49152 (at 1) is not below the vocabulary of 49152"},
		{"generate prompt and ids disagree", "llm generate cpu --layers 1 --prompt 3 --prompt-ids 1,2", "--prompt 3 and --prompt-ids of 2 ids disagree"},
		{"generate sized by seq-len", "llm generate cpu --layers 1 --seq-len 5", "--seq-len does not size a generation"},
		{"generate flag on train", "llm train cpu --layers 1 --tokens 5", "--tokens is the generate task's"},
		{"generate on linear", "linear generate cpu", "the generate task is the llm workload's"},
		{"missing task", "linear", "missing task"},
		{"unknown mode", "linear train cuda,tpu", "unknown mode \"tpu\""},
		{"empty mode list", "linear train ''", "empty mode"},
		{"empty mode in list", "linear train cpu,,cuda", "empty mode"},
		{"repeated mode", "linear train cpu,cpu", "mode cpu given twice"},
		{"alias repeats mode", "linear train gpu,cuda", "mode cuda given twice"},
		{"unknown flag", "linear train cpu --speed 9", "unknown flag: --speed"},
		{"unknown scale", "linear train cpu --scale huge", "unknown scale \"huge\""},
		{"zero batch", "linear train cpu --batch 0", "--batch must be positive, got 0"},
		{"negative dims", "linear train cpu --dims -5", "--dims must be positive, got -5"},
		{"zero blocks", "linear eval cpu --blocks 0", "--blocks must be positive"},
		{"zero epochs", "linear train cpu --epochs 0", "--epochs must be positive"},
		{"zero threads", "linear train cpu --threads 0", "--threads must be positive"},
		{"huge threads", "linear train cpu --threads 100000", "--threads must be at most"},
		{"negative lr", "linear train cpu --lr -1", "--lr must be positive"},
		{"infinite lr", "linear train cpu --lr Inf", "--lr must be a finite number, got +Inf"},
		{"negative infinite lr", "linear train cpu --lr -Inf", "--lr must be a finite number, got -Inf"},
		{"spelled-out infinite lr", "linear train cpu --lr=+infinity", "--lr must be a finite number, got +Inf"},
		{"NaN lr", "linear train cpu --lr NaN", "--lr must be a finite number, got NaN"},
		{"NaN lr on eval", "resnet eval cpu --lr nan", "--lr must be a finite number, got NaN"},
		{"NaN lr in plan", "plan attention train cpu --lr NaN", "--lr must be a finite number, got NaN"},
		{"lr beyond float64", "linear train cpu --lr 1e400", "invalid argument \"1e400\""},
		// The models compute in float32: an --lr that float32 holds as
		// +Inf or 0 ran (and diverged, or learnt nothing).
		{"lr beyond float32", "linear train cpu --lr 1e39", "--lr 1e+39 is infinite in float32, which the models compute in (the largest float32 is 3.4028235e+38)"},
		{"lr below float32", "linear train cpu --lr 1e-50", "--lr 1e-50 is 0 in float32, which the models compute in (the smallest float32 above 0 is 1e-45)"},
		{"lr beyond float32 in plan", "plan linear train --lr 1e39", "--lr 1e+39 is infinite in float32"},
		{"empty format", "linear train cpu --format ''", "--format: unknown format \"\" (want text, markdown, csv, json)"},
		{"empty format in plan", "plan linear train --format=", "--format: unknown format \"\""},
		{"managed page not a power of two", "linear train managed --managed-page 3KiB", "--managed-page \"3KiB\": a page of 3072 bytes: want a power of two of at least 4KiB"},
		{"managed page below 4KiB", "linear train managed --managed-page 2KiB", "want a power of two of at least 4KiB"},
		{"managed page not a size", "linear train managed --managed-page big", "--managed-page \"big\""},
		{"unknown managed advice", "linear train managed --managed-advise gpu", "unknown --managed-advise \"gpu\" (want none or host)"},
		// A zero or empty lever value is not the default (issue 44 item 3):
		// α 0 ran with α = R and --lora-targets '' with the default targets.
		{"lora alpha zero", "linear train cpu --lora 4 --lora-alpha 0", "--lora-alpha must be a positive number, got 0 (leave the flag out for the default α = R)"},
		{"lora alpha minus zero", "linear train cpu --lora 4 --lora-alpha -0", "--lora-alpha must be a positive number, got -0"},
		{"lora alpha zero in fit", "fit linear train --scale small --lora 4 --lora-alpha 0.0", "--lora-alpha must be a positive number, got 0"},
		{"lora targets empty", "linear train cpu --lora 4 --lora-targets ''", "--lora-targets: empty (want a comma list of layers"},
		{"llm model a device", "llm train cpu --model /dev/null", "--model: /dev/null is a device, not a regular file"},
		{"seq-len max without a model's positions", "fit attention train --seq-len max --device sim:1GiB", "--seq-len max is the llm workload's, whose model's maximum positions bound it; give attention a number"},
		{"seq-len max outside fit", "plan llm train cuda --model smollm2-135m --seq-len max", `--seq-len: invalid argument "max" (want a whole number in decimal digits)`},
		{"llm empty model", "llm train cpu --model ''", "--model: empty (want a preset, a config.json, a directory holding one or a GGUF file"},
		{"llm unknown preset", "llm train cpu --model nosuch", "--model: nosuch: neither a file, a directory nor a preset (presets: gpt2, smollm2-135m"},
		{"llm malformed config", "llm train cpu --model testdata/llm/malformed.json", "testdata/llm/malformed.json: malformed JSON"},
		{"llm unknown model_type", "plan llm train cpu --model testdata/llm/unknown-type.json", "model_type \"mamba\" is not supported (supported: gpt2, llama, mistral, qwen2)"},
		{"llm heads do not divide", "llm eval cpu --model testdata/llm/heads-do-not-divide.json", "num_attention_heads 3 does not divide hidden_size 8"},
		{"llm rope scaling not implemented", "fit llm train --model testdata/llm/rope-yarn.json", "rope_scaling of rope_type \"yarn\" is not supported (supported: llama3)"},
		{"llm safetensors shape differs", "llm train cpu --model testdata/llm/snapshot-bad", "model.safetensors: model.layers.0.self_attn.k_proj.weight has shape [8 8], the config builds [4 8]"},
		{"llm gguf truncated header", "llm train cpu --model testdata/llm/truncated.gguf", "testdata/llm/truncated.gguf: malformed GGUF file: tensor count too large for remaining bytes"},
		{"llm gguf unknown architecture", "plan llm train cpu --model testdata/llm/unknown-arch.gguf", `general.architecture "mamba" is not supported (supported: llama, qwen2)`},
		{"llm gguf type not implemented", "llm eval cpu --model testdata/llm/q5k.gguf", "blk.0.ffn_down.weight is Q5_K, which gpuz does not implement (it implements F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)"},
		{"llm gguf shapes differ from the metadata", "fit llm train --model testdata/llm/ffn-mismatch.gguf", "blk.0.ffn_gate.weight has dimensions [8 16], the metadata's model has [8 12]"},
		{"llm gguf offset beyond the file", "llm generate cpu --model testdata/llm/offset-beyond.gguf", "blk.0.ffn_up.weight: its 256 bytes at offset 1099511627776 of the data"},
		{"llm sequence beyond GPT-2's positions", "plan llm train cpu --model gpt2 --seq-len 2048", "the sequence length 2048 is beyond n_positions 1024"},
		{"llm more layers than the model", "plan llm train cpu --model smollm2-135m --layers 31", "--layers (31) must be at most the model's 30 layers"},
		{"llm zero layers", "plan llm train cpu --model smollm2-135m --layers 0", "--layers must be positive, got 0"},
		{"llm model on another workload", "linear train cpu --model gpt2", "unknown flag: --model"},
		{"attention on a workload without attention", "resnet train cpu --attention fused", "unknown flag: --attention"},
		{"unknown attention", "attention train cpu --attention flash", "--attention: unknown attention \"flash\" (want eager or fused)"},
		{"unknown attention in a sweep", "plan llm train cpu --attention fused,sdpa", "--attention: unknown attention \"sdpa\" (want eager or fused)"},
		{"attention in fit", "fit attention train --attention fused", "fit searches --attention itself"},
		{"empty managed page", "linear train managed --managed-page ''", "--managed-page \"\": invalid byte size \"\""},
		{"empty managed advice", "plan linear train managed --managed-advise=", "unknown --managed-advise \"\" (want none or host)"},
		{"unknown recompute", "linear train cpu --recompute all", "--recompute: unknown recompute \"all\" (want none or blocks)"},
		{"empty recompute", "resnet train --recompute=", "--recompute: empty value in \"\" (want one value or a comma list)"},
		{"unknown recompute in a sweep", "plan attention train --recompute none,some", "--recompute: unknown recompute \"some\" (want none or blocks)"},
		{"unknown precision", "linear train cpu --precision fp8", "--precision: unknown precision \"fp8\" (want fp32, bf16 or fp16)"},
		{"empty precision", "linear eval cpu --precision ''", "--precision: empty value in \"\" (want one value or a comma list)"},
		{"unknown precision in a sweep", "resnet train --precision fp32,half", "--precision: unknown precision \"half\" (want fp32, bf16 or fp16)"},
		{"plan takes one precision", "plan linear train --precision fp32,bf16", "plan takes one value per flag but --recompute; --precision has 2"},
		{"unknown precision in plan", "plan linear eval cuda --precision fp8", "--precision: unknown precision \"fp8\""},
		{"warm-up covers every epoch", "linear train cpu --epochs 2 --warmup 2", "--warmup (2) must be less than"},
		{"batch does not divide samples", "linear train cpu --scale small --batch 3", "must be a multiple of --batch"},
		{"not a number", "linear train cpu --batch many", "invalid argument \"many\""},
		{"too many arguments", "linear train cpu cuda", "too many arguments"},
		{"version takes no arguments", "version now", "unknown command"},
		{"attention heads do not divide d-model", "attention train cpu --d-model 30 --heads 4", "--d-model (30) must be divisible by --heads (4)"},
		{"attention odd d-model", "attention train cpu --d-model 9 --heads 3", "--d-model (9) must be even"},
		{"attention zero heads", "attention eval cpu --heads 0", "--heads must be positive, got 0"},
		{"attention negative seq-len", "attention train cpu --seq-len -3", "--seq-len must be positive, got -3"},
		{"attention zero layers", "attention train cpu --layers 0", "--layers must be positive"},
		{"attention zero vocab", "attention train cpu --vocab 0", "--vocab must be positive"},
		{"attention vocab beyond float32 ids", "attention train cpu --vocab 16777217", "--vocab (16777217) must be at most 2²⁴"},
		{"attention unknown scale", "attention eval cpu --scale tiny", "unknown scale \"tiny\""},
		{"attention batch does not divide samples", "attention train cpu --scale small --batch 3", "must be a multiple of --batch"},
		{"resnet even kernel", "resnet train cpu --kernel 4", "--kernel must be odd, got 4"},
		{"resnet kernel beyond the image", "resnet train cpu --scale small --kernel 99", "--kernel (99) must be at most 2 × --image-size − 1 (63)"},
		{"resnet zero kernel", "resnet train cpu --kernel 0", "--kernel must be positive, got 0"},
		{"resnet negative kernel", "resnet eval cpu --kernel -3", "--kernel must be positive, got -3"},
		{"resnet zero levels", "resnet train cpu --levels 0", "--levels must be positive"},
		{"resnet zero channels", "resnet train cpu --channels 0", "--channels must be positive"},
		{"resnet negative mid-channels", "resnet eval cpu --mid-channels -1", "--mid-channels must be positive, got -1"},
		{"resnet zero image size", "resnet train cpu --image-size 0", "--image-size must be positive"},
		{"resnet images too large", "resnet train cpu --image-size 1000000", "too large"},
		{"resnet unknown scale", "resnet eval cpu --scale tiny", "unknown scale \"tiny\""},
		{"resnet batch does not divide samples", "resnet train cpu --scale small --batch 4", "must be a multiple of --batch"},
		{"resnet missing task", "resnet", "missing task"},
		{"take-mem without amount", "take-mem", "missing amount"},
		{"take-mem zero blocks", "take-mem 0", "number of blocks must be positive"},
		{"take-mem fractional blocks", "take-mem 1.5", "invalid amount \"1.5\""},
		{"take-mem bad size", "take-mem 4G", "unknown unit \"G\""},
		{"take-mem not a size", "take-mem lots", "invalid byte size \"lots\""},
		{"take-mem zero size", "take-mem 0GiB", "amount must be positive"},
		{"take-mem too many blocks", "take-mem 99999999999999999999", "too many blocks"},
		{"take-mem two amounts", "take-mem 1 2", "too many arguments"},
		{"take-mem zero duration", "take-mem 2 --for 0s", "--for must be positive"},
		{"take-mem bad duration", "take-mem 2 --for soon", "invalid argument \"soon\" for \"--for\""},
		{"take-mem unknown device", "take-mem 2 --device gpu", "unknown device \"gpu\""},
		{"take-mem bad sim size", "take-mem 2 --device sim:-2MiB", "device \"sim:-2MiB\""},
		{"take-mem unknown profile", "take-mem 2 --device sim:big", "device \"sim:big\": unknown GPU profile \"big\" (want one of rtx4060-laptop,"},
		{"take-mem no cuda", "take-mem 2 --device cuda:0", "this build has no CUDA support"},
		{"take-mem busy on too little", "take-mem 1MiB --busy", "--busy needs at least"},
		{"selftest no cuda", "selftest --device cuda", "this build has no CUDA support"},
		{"selftest unknown device", "selftest --device gpu", "unknown device \"gpu\""},
		{"selftest argument", "selftest now", "unknown command"},
		{"devices argument", "devices all", "unknown command"},
		// Sizes whose products overflow int64 or would build a graph for
		// minutes: refused before anything is made. plan checks the same sizes.
		{"linear dims max int", "linear train cpu --dims 9223372036854775807", "the model is too large: over 2⁴⁰ parameters"},
		{"linear dims squared wraps to 0", "linear train cpu --dims 4611686018427387904", "the model is too large: over 2⁴⁰ parameters"},
		{"linear batch × dims", "linear train cpu --scale small --batch 4611686018427387904 --samples 4611686018427387904", "the model is too large: a batch's activations"},
		{"linear data set", "linear train cpu --scale small --samples 9223372036854775804", "the model is too large: the data set"},
		{"linear layers", "linear train cpu --blocks 1000 --dims 1", "at most 4096 layers"},
		{"linear blocks × layers wraps", "linear train cpu --blocks 4294967296 --layers-per-block 4294967296", "at most 4096 layers"},
		{"attention seq-len", "attention train cpu --seq-len 4294967296", "the model is too large"},
		{"attention seq-len squared wraps", "attention train cpu --seq-len 4611686018427387904", "the model is too large"},
		{"attention layers", "attention train cpu --layers 100000", "100000 layers, at most 512"},
		{"attention logits", "attention train cpu --scale small --vocab 16777216 --seq-len 65536 --batch 4", "the logits"},
		{"resnet channels", "resnet train cpu --channels 4611686018427387904", "too large"},
		{"resnet kernel", "resnet train cpu --kernel 4294967297", "--kernel (4294967297) must be at most 2 × --image-size − 1"},
		{"resnet kernel within huge images", "resnet train cpu --mid-channels 10000 --kernel 1023", "the model is too large: over 2³⁶ weights"},
		{"resnet image size squared wraps", "resnet train cpu --image-size 4294967296", "the images are too large"},
		{"resnet levels", "resnet train cpu --levels 10000", "10000 levels, at most 256"},
		{"plan resnet image size", "plan resnet train --image-size 4294967296", "the images are too large"},
		{"plan linear dims", "plan linear train --dims 4294967296", "the model is too large: over 2⁴⁰ parameters"},
		{"plan attention seq-len", "plan attention train --seq-len 4611686018427387904", "the model is too large"},
		{"plan resnet levels", "plan resnet train --levels 10000", "at most 256"},
		{"fit unknown model", "fit lineer train", "unknown model \"lineer\""},
		{"fit missing model", "fit", "missing model"},
		{"fit margin over 100", "fit linear train --margin 150", "--margin must be a percentage from 0 up to (not including) 100, got 150"},
		{"fit margin of 100", "fit linear train --margin 100", "--margin must be a percentage from 0 up to (not including) 100, got 100"},
		{"fit negative margin", "fit linear train --margin -1", "--margin must be a percentage"},
		{"fit NaN margin", "fit linear train --margin NaN", "--margin must be a finite number, got NaN"},
		{"fit negative verify", "fit linear train --verify -1", "--verify must not be negative, got -1"},
		{"fit takes no modes", "fit linear train cuda", "fit takes no MODES"},
		{"fit searches the policy", "fit linear train --policy auto", "fit searches --policy itself"},
		{"fit searches recompute", "fit linear train --recompute blocks", "fit searches --recompute itself"},
		{"fit searches the precision", "fit linear eval --precision bf16", "fit searches --precision itself"},
		{"fit one value per flag", "fit linear train --dims 8,16", "fit takes one value per flag; --dims has 2"},
		{"fit searches grad-accum", "fit linear train --grad-accum 2", "fit searches --grad-accum itself"},
		{"fit batch list does not divide samples", "fit linear train --scale small --batch 4,3", "--samples (8) must be a multiple of --batch (3)"},
		{"fit batch list twice", "fit linear train --scale small --batch 4,4", "--batch: 4 given twice in 4,4"},
		{"fit batch list for a generation", "fit llm generate --model smollm2-135m --batch 1,2", "fit ranks a list of batches in training and evaluation; a generation takes one --batch, got 2"},
		{"grad-accum does not divide the batch", "linear train cpu --scale small --grad-accum 3", "--grad-accum 3: the batch (4) is not a multiple of it"},
		{"grad-accum in evaluation", "linear eval cpu --scale small --grad-accum 2", "--grad-accum 2: only training accumulates gradients, not eval"},
		{"grad-accum zero", "linear train cpu --grad-accum 0", "--grad-accum: grad-accum \"0\" is not a whole number of micro-batches from 1 to 1048576"},
		{"grad-accum in plan", "plan linear train --scale small --grad-accum 8", "--grad-accum 8: the batch (4) is not a multiple of it"},
		{"fit bad take", "fit linear train --take 4G", "unknown unit \"G\""},
		{"host profile file missing", "plan linear train cpu --host-profile testdata/profiles/missing.json", "--host-profile: reading the profile: stat testdata/profiles/missing.json: no such file or directory"},
		{"host profile file bad field", "linear train cpu --host-profile testdata/profiles/bad-fp32.json", "--host-profile: profile testdata/profiles/bad-fp32.json: field FP32: want a positive rate in FLOP/s, not -1"},
		{"host profile file not JSON", "plan linear train cpu --host-profile ./testdata/profiles/truncated.json", "profile ./testdata/profiles/truncated.json: decoding: unexpected EOF"},
		{"unknown host profile", "plan linear train cpu --host-profile i9", "--host-profile: unknown host profile \"i9\" (want one of cpu-i7-13700h)"},
		{"sim profile file missing", "plan linear train cuda --device sim:nowhere.json", "--device: device \"sim:nowhere.json\": reading the profile: stat nowhere.json: no such file or directory"},
		{"sim profile file bad field", "linear train cuda --device sim:testdata/profiles/bad-fp32.json", "profile testdata/profiles/bad-fp32.json: field FP32: want a positive rate"},
		{"host profile file implausible", "linear train cpu --host-profile testdata/profiles/implausible.json", "--host-profile: profile testdata/profiles/implausible.json: field FP32: 1e-300 FLOP/s is not a plausible rate"},
		{"sim profile file implausible", "plan linear train cuda --device sim:testdata/profiles/implausible.json", "profile testdata/profiles/implausible.json: field FP32: 1e-300 FLOP/s is not a plausible rate"},
		{"calibrate a simulated device", "calibrate --device sim:1GiB", "--device sim:1GiB: a simulated device runs the host's kernels"},
		{"calibrate zero threads", "calibrate --threads 0", "--threads must be from 1 to"},
		{"calibrate zero rounds", "calibrate --rounds 0", "--rounds must be from 1 to 20, got 0"},
		{"calibrate argument", "calibrate now", "unknown command"},
		{"calibrate empty output", "calibrate -o ''", "-o: empty file name (leave -o out to write the default file)"},
		{"calibrate output a directory", "calibrate -o testdata", "/cmd/gpuz/testdata: is a directory"},
		{"take-mem sim profile file not JSON", "take-mem 2 --device sim:testdata/profiles/truncated.json", "decoding: unexpected EOF"},
		{"plan sweep", "plan linear train --win-size 1,2", "plan takes one value per flag but --recompute; --win-size has 2"},
		{"plan recompute twice", "plan linear train --recompute blocks,none,blocks", "--recompute: blocks given twice in blocks,none,blocks"},
		{"plan take not an amount", "plan linear train --take lots", "--take:"},
		{"plan take on cpu", "plan linear train cpu --device cpu --take 1GiB", "--take holds memory on the device of the cuda and cache modes"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantUsageError(t, splitArgs(tc.args), tc.want) })
	}
}

// usageErrorLimit is how long wantUsageError waits for gpuz to refuse its
// input before killing it: refusing bad input takes well under a second,
// so a process still running then hangs (it once read /dev/zero forever).
const usageErrorLimit = 30 * time.Second

// privateLedger points the simulated devices of the test's process at a
// ledger of the test's own, so that no other test's holdings show, and
// returns its path.
func privateLedger(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "ledger")
	t.Setenv(device.LedgerEnv, path)
	return path
}

// readFile returns the contents of the file at path, failing the test if
// it cannot be read.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// splitArgs splits a command line at spaces; ” stands for an empty
// argument, as sysinfo.CommandLine writes it.
func splitArgs(line string) []string {
	args := strings.Fields(line)
	for i, a := range args {
		if a == "''" {
			args[i] = ""
		}
	}
	return args
}

// wantUsageError runs the built binary with args and checks it refuses
// them as bad input within usageErrorLimit: exit status 2, one line on
// stderr containing want, no panic or goroutine dump, nothing on stdout.
func wantUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), usageErrorLimit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, gpuzBinary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gpuz %q still ran after %v: killed; stderr:\n%.2000s", args, usageErrorLimit, stderr.String())
	}
	exitErr, ok := err.(*exec.ExitError)
	if !ok || exitErr.ExitCode() != 2 {
		t.Fatalf("gpuz %q: %v, want exit status 2; stderr:\n%.2000s", args, err, stderr.String())
	}
	for _, bad := range []string{"panic", "goroutine"} {
		if strings.Contains(stderr.String(), bad) {
			t.Fatalf("stderr has %q:\n%.2000s", bad, stderr.String())
		}
	}
	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("stderr = %q, want one line containing %q", stderr.String(), want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %.500q, want nothing", stdout.String())
	}
}

// TestSmallRun runs the main job at small scale in-process: cuda and cache
// run on the simulated device, say so, and train to the same losses as cpu.
func TestSmallRun(t *testing.T) {
	privateLedger(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"linear", "train", "cuda,cache,cpu", "--scale", "small", "--win-size", "1"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"warning: no CUDA GPU", "gpuz linear train (scale small)", "== cpu on host ==",
		"== cuda on sim:8GiB ==", "== cache on sim:8GiB ==", "train: 0  mean loss:", "(warm-up)", "Analyze"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rows := reporttest.TableRows(out)
	for mode, want := range map[string]string{"cuda": " sim:8GiB† ", "cache": " sim:8GiB† window 1/3 ", "cpu": " host "} {
		if !strings.Contains(rows[mode], want) || status(rows[mode]) != "ok" {
			t.Errorf("%s row = %q, want device %q and status ok", mode, rows[mode], want)
		}
	}
	// Every mode prints the same five epoch losses: the modes differ in
	// where memory lives, never in the numbers.
	losses := map[string][]string{}
	mode := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "== ") {
			mode = strings.Fields(line)[1]
		}
		if _, after, ok := strings.Cut(line, "mean loss: "); ok {
			losses[mode] = append(losses[mode], strings.Fields(after)[0])
		}
	}
	if len(losses["cpu"]) != 5 || strings.Join(losses["cuda"], " ") != strings.Join(losses["cpu"], " ") ||
		strings.Join(losses["cache"], " ") != strings.Join(losses["cpu"], " ") {
		t.Errorf("losses differ between modes: %v", losses)
	}
}

// TestCPUDeviceLeavesGPUModesUnavailable runs with --device cpu: the cuda
// and cache rows say why they did not run and show no figures, and the
// status is 3 (the run completed, some modes did not).
func TestCPUDeviceLeavesGPUModesUnavailable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"linear", "train", "cuda,cache,cpu", "--scale", "small", "--device", "cpu"}, &stdout, &stderr)
	if code != exitIncomplete {
		t.Fatalf("exit status %d, want %d; stderr: %s", code, exitIncomplete, stderr.String())
	}
	if want := "gpuz: 2 of 3 modes did not complete: cuda (unavailable), cache (unavailable); the table above says why\n"; stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
	rows := reporttest.TableRows(stdout.String())
	for _, mode := range []string{"cuda", "cache"} {
		if !strings.HasPrefix(status(rows[mode]), "unavailable [") || strings.Contains(rows[mode], "±") {
			t.Errorf("%s row = %q, want unavailable with no figures", mode, rows[mode])
		}
	}
}

// status returns the status cell of a row of the Analyze table: its last
// word, with the note it points to ("OOM [1]").
func status(row string) string {
	f := strings.Fields(row)
	if n := len(f); n > 1 && strings.HasPrefix(f[n-1], "[") {
		return f[n-2] + " " + f[n-1]
	}
	return f[len(f)-1]
}

// TestInterruptedRun cancels the run before it starts: the
// table is still printed, every mode is marked, and the status is 130.
func TestInterruptedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"linear", "train", "cpu", "--scale", "small"}, &stdout, &stderr)
	if code != exitInterrupted {
		t.Fatalf("exit status %d, want %d", code, exitInterrupted)
	}
	if !strings.Contains(stdout.String(), "Analyze") || !strings.Contains(stdout.String(), "interrupted") {
		t.Errorf("output lacks the table or the interrupted status:\n%s", stdout.String())
	}
}

// TestManualExamples runs every example of the command's manual (its doc
// comment and help texts) at small scale, so the manual cannot rot.
func TestManualExamples(t *testing.T) {
	privateLedger(t)
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	var examples []string
	for _, c := range append(root.Commands(), root) {
		for _, line := range strings.Split(c.Example, "\n") {
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "gpuz ") {
				examples = append(examples, line)
			}
		}
	}
	// The package's doc comment is the manual too.
	doc, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, examplesSection, _ := strings.Cut(string(doc), "// Examples:")
	examplesSection, _, _ = strings.Cut(examplesSection, "// Exit status")
	for _, line := range strings.Split(examplesSection, "\n") {
		if rest, ok := strings.CutPrefix(line, "//\tgpuz "); ok {
			rest, _, _ = strings.Cut(rest, "#")
			examples = append(examples, "gpuz "+strings.TrimSpace(rest))
		}
	}
	if len(examples) < 3 {
		t.Fatalf("found %d examples, want the manual's", len(examples))
	}
	// Examples write files (--bench-out a.txt): into a directory of the test's.
	t.Chdir(t.TempDir())
	for _, ex := range examples {
		args := strings.Fields(ex)[1:]
		if args[0] == "calibrate" {
			// It measures this machine for seconds and writes the user's
			// profile: TestCalibrate* run it on synthetic measurements.
			continue
		}
		if args[0] == "take-mem" {
			args = append(args, "--for", "1ms") // the last --for wins
		} else if len(args) > 1 && args[0] != "compare" && args[0] != "plot" && args[0] != "devices" && !strings.Contains(ex, "--scale") {
			args = append(args, "--scale", "small")
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit status %d: %s", ex, code, stderr.String())
		}
	}
}

func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &stdout, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	for _, want := range []string{"gpuz ", "\nrevision: ", "\ncommit time: ", "\nmodified: ", "BLAS: ", "\nfloat32 products: ", "\n16-bit products: ", "\nquantized products: ", "\ntransparent huge pages: ", "CUDA support: no"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("version output %q lacks %q", stdout.String(), want)
		}
	}
}

// TestJSONFlags: a run takes --json FILE, and a plan takes --json alone.
func TestJSONFlags(t *testing.T) {
	privateLedger(t)
	path := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"linear", "eval", "cpu", "--scale", "small", "--json", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("run with --json FILE: exit status %d: %s", code, stderr.String())
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Contains(data, []byte(`"modes"`)) {
		t.Errorf("run JSON: %v, %.80q", err, data)
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"plan", "linear", "train", "--scale", "small", "--json", "-"}, &stdout, &stderr); code != 0 {
		t.Fatalf("plan --json -: exit status %d: %s", code, stderr.String())
	}
	var plan map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil || plan["min_window"] == nil {
		t.Errorf("plan --json - printed %.200q (%v), want only the plan as JSON", stdout.String(), err)
	}
	// plan takes --json FILE and --json=FILE as the runs do, and then
	// prints no plan on stdout.
	for _, equals := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "plan.json")
		argv := []string{"plan", "linear", "train", "cpu", "--scale", "small", "--json", path}
		if equals {
			argv = append(argv[:len(argv)-2], "--json="+path)
		}
		stdout.Reset()
		if code := run(context.Background(), argv, &stdout, &stderr); code != 0 {
			t.Fatalf("gpuz %q: exit status %d: %s", argv, code, stderr.String())
		}
		plan = nil
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, &plan)
		}
		if err != nil || plan["min_window"] == nil {
			t.Errorf("gpuz %q wrote %.200q (%v)", argv, data, err)
		}
		if strings.Contains(stdout.String(), "min_window") {
			t.Errorf("gpuz %q printed the plan too: %.200q", argv, stdout.String())
		}
	}
	// --json alone needs its value.
	stderr.Reset()
	if code := run(context.Background(), []string{"plan", "linear", "train", "--json"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "flag needs an argument: --json (a file, or - for standard output)") {
		t.Errorf("plan --json: exit status %d, stderr %q; want %d and what to give", code, stderr.String(), exitUsage)
	}
}

// exitCode is the exit status in err from exec.Cmd's Run or Wait: 0 for
// nil, -1 for an error other than an exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}

// TestHelpShowsOwnUsageAndExamples: the root help's usage line is the main
// form, and a plan command's help shows plan examples, not the run's.
func TestHelpShowsOwnUsageAndExamples(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		want, reject string
	}{
		{[]string{"--help"}, "\n  gpuz MODEL train|eval [MODES] [flags]\n", ""},
		{[]string{"plan", "linear", "--help"}, "\n  gpuz plan linear train\n", "gpuz linear train cuda,cache,cpu"},
		{[]string{"help", "plan", "resnet"}, "\n  gpuz plan resnet eval --scale small --json -", "gpuz resnet train"},
		{[]string{"linear", "--help"}, "\n  gpuz linear train cuda,cache,cpu\n", "gpuz plan"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit status %d: %s", tc.args, code, stderr.String())
		}
		out := stdout.String()
		if !strings.Contains(out, tc.want) || (tc.reject != "" && strings.Contains(out, tc.reject)) {
			t.Errorf("gpuz %s: want %q and not %q in:\n%s", strings.Join(tc.args, " "), tc.want, tc.reject, out)
		}
	}
}
