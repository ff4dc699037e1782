// fuzz/fuzz_safetensors.c: libFuzzer target for the safetensors reader.
//
// Contract checked: st_parse_buffer on any bytes either refuses them with a message or yields an
// archive whose every tensor can be found by name and read in full as bf16 and as fp32 with its
// own shape, the bf16 values being the fp32 values rounded (NaN stays NaN); nothing reads outside
// the buffer, leaks or crashes.
#include <stdint.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_archive a;
    if (st_parse_buffer(data, size, "fuzz-input", &a) != SG_OK) return 0;
    for (int i = 0; i < a.n_tensors; i++) {
        const st_tensor *t = &a.tensors[i];
        SG_CHECK(st_find(&a, t->name) == t, "tensor '%s' not found by name", t->name);
        size_t n = t->nbytes / st_dtype_size(t->dtype);
        const bf16 *x;
        SG_CHECK(st_get_bf16(&a, t->name, t->ndim, t->shape, &x) == SG_OK, "%s", sg_error());
        float *f = sg_calloc(n, sizeof *f);
        SG_CHECK(st_get_f32(&a, t->name, t->ndim, t->shape, f) == SG_OK, "%s", sg_error());
        for (size_t j = 0; j < n; j++) {
            float back = bf16_to_f32(x[j]);
            SG_CHECK(f[j] != f[j] ? back != back : x[j] == f32_to_bf16(f[j]),
                     "tensor '%s' element %zu: bf16 %04x vs fp32 %a", t->name, j, x[j], f[j]);
        }
        free(f);
    }
    st_close(&a);
    return 0;
}
