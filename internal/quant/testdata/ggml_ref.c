// ggml_ref quantizes float32s read from stdin with ggml's reference
// quantizers and writes the blocks to stdout; it made ggml_q8_0.bin,
// ggml_q4_0.bin, ggml_q4_k.bin and ggml_q6_k.bin from ggml_input.f32 (see
// README.md).
//
//	usage: ggml_ref q8_0|q4_0|q4_k|q6_k N < floats > blocks
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-quants.h" // defines GGML_COMMON_DECL_C and includes ggml-common.h

// ggml-quants.c's quantizers for other types call these; the reference
// ones used here do not.
void ggml_abort(const char *file, int line, const char *fmt, ...) { abort(); }
size_t ggml_type_size(enum ggml_type t) { abort(); }
const char *ggml_type_name(enum ggml_type t) { abort(); }
size_t ggml_row_size(enum ggml_type t, int64_t n) { abort(); }

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    long n = atol(argv[2]);
    float *x = malloc(n * sizeof(float));
    if (fread(x, sizeof(float), n, stdin) != (size_t)n) return 1;
    size_t bytes;
    void *y;
    if (!strcmp(argv[1], "q8_0")) {
        bytes = n / QK8_0 * sizeof(block_q8_0);
        quantize_row_q8_0_ref(x, y = calloc(1, bytes), n);
    } else if (!strcmp(argv[1], "q4_0")) {
        bytes = n / QK4_0 * sizeof(block_q4_0);
        quantize_row_q4_0_ref(x, y = calloc(1, bytes), n);
    } else if (!strcmp(argv[1], "q4_k")) {
        bytes = n / QK_K * sizeof(block_q4_K);
        quantize_row_q4_K_ref(x, y = calloc(1, bytes), n);
    } else if (!strcmp(argv[1], "q6_k")) {
        bytes = n / QK_K * sizeof(block_q6_K);
        quantize_row_q6_K_ref(x, y = calloc(1, bytes), n);
    } else {
        return 2;
    }
    fwrite(y, 1, bytes, stdout);
    return 0;
}
