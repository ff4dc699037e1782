// engine/backend.c: backend-independent helpers of the boundary (backend.h): the digest definition
// every backend must reproduce, and allocation with an error message.
#include "backend.h"

#include "common/error.h"

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t be_digest(const void *row, int n, int elem_bytes) {
    SG_CHECK(elem_bytes == 2 || elem_bytes == 4, "digest of %d-byte elements", elem_bytes);
    uint64_t h = 0;
    for (int i = 0; i < n; i++) {
        uint32_t e;
        if (elem_bytes == 4) {
            memcpy(&e, (const char *)row + (size_t)i * 4, 4);
        } else {
            uint16_t e16;
            memcpy(&e16, (const char *)row + (size_t)i * 2, 2);
            e = e16;
        }
        h += mix64(((uint64_t)(uint32_t)i << 32) | e);
    }
    return mix64(h ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull));
}

int be_alloc(const sg_backend *be, size_t bytes, const char *what, void **out) {
    SG_CHECK(bytes > 0, "zero-byte allocation for %s", what);
    *out = be->alloc(be->ctx, bytes);
    if (!*out)
        return sg_fail(SG_EXIT_USAGE,
                       "the %s backend cannot allocate %zu bytes for %s: lower --pool-pages, the "
                       "batch limits or the model size",
                       be->name, bytes, what);
    return SG_OK;
}

int be_alloc_upload(const sg_backend *be, const void *src, size_t bytes, const char *what,
                    void **out) {
    SG_TRY(be_alloc(be, bytes, what, out));
    be->upload(be->ctx, *out, src, bytes);
    return SG_OK;
}
