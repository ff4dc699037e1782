// tests/test_safetensors.c: the safetensors reader (single file, sharded folder, buffer, index),
// every malformed-input refusal with its message, bf16 access and conversion, and the writer
// (determinism, padding, round trip).
// ctest-labels: cpu;unit
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/file.h"
#include "common/safetensors.h"
#include "testutil.h"

// Writes a safetensors file by hand: 8-byte length, `header` padded with spaces to `align` bytes
// (1: as given), then `n` data bytes.
static void write_aligned(const char *path, const char *header, size_t align, const void *data,
                          size_t n) {
    size_t len = strlen(header), hlen = (len + align - 1) / align * align;
    uint8_t *buf = calloc(8 + hlen + n + 1, 1);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, header, len);
    memset(buf + 8 + len, ' ', hlen - len);
    if (n) memcpy(buf + 8 + hlen, data, n);
    tu_write_file(path, buf, 8 + hlen + n);
    free(buf);
}

static void write_raw(const char *path, const char *header, const void *data, size_t n) {
    write_aligned(path, header, 8, data, n);
}

static void join(char *out, size_t size, const char *dir, const char *name) {
    snprintf(out, size, "%s/%s", dir, name);
}

// Asserts that the current message contains every non-NULL needle.
static void assert_message(const char *a, const char *b, const char *c) {
    const char *needles[] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (needles[i])
            ck_assert_msg(strstr(sg_error(), needles[i]), "message '%s' lacks '%s'", sg_error(),
                          needles[i]);
}

// A file with `header` and 64 zero data bytes must be refused naming the file and the needles.
static void expect_bad_header(const char *header, const char *needle1, const char *needle2) {
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "bad.safetensors");
    uint8_t zeros[64] = {0};
    write_raw(path, header, zeros, sizeof zeros);
    st_archive a;
    ck_assert_int_eq(st_open_file(path, &a), SG_EXIT_INPUT);
    assert_message(path, needle1, needle2);
    ck_assert_ptr_null(a.tensors); // the partial archive was closed
}

START_TEST(test_single_file_all_dtypes) {
    // Hand-written file: x BF16 [2,2] at 0, h F16 [3] at 8, f F32 [2] at 14 (so f is misaligned
    // for floats but read bytewise), plus __metadata__.
    uint8_t data[22];
    uint16_t xb[4] = {0x3f80, 0xc000, 0x3fc0, 0x0000}; // 1, -2, 1.5, 0
    uint16_t hb[3] = {0x3e00, 0xc400, 0x0001};         // f16: 1.5, -4, 2^-24
    float fb[2] = {1.00390625f, -3.0f};                // 1 + 2^-8 ties to even: 1.0
    memcpy(data, xb, 8);
    memcpy(data + 8, hb, 6);
    memcpy(data + 14, fb, 8);
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "m.safetensors");
    write_raw(path,
              "{\"__metadata__\":{\"format\":\"pt\"},"
              "\"x\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
              "\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[8,14]},"
              "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[14,22]}}    ",
              data, sizeof data);
    st_archive a;
    ck_assert_int_eq(st_open_file(path, &a), SG_OK);
    ck_assert_int_eq(a.n_tensors, 3);
    ck_assert_int_eq(a.n_files, 1);
    ck_assert_str_eq(a.tensors[0].name, "f"); // sorted by name
    const st_tensor *h = st_find(&a, "h");
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(h->dtype, ST_F16);
    ck_assert_int_eq(h->ndim, 1);
    ck_assert_int_eq(h->shape[0], 3);
    ck_assert_ptr_null(st_find(&a, "nope"));

    const bf16 *x, *hv, *fv;
    int64_t s22[2] = {2, 2}, s3[1] = {3}, s2[1] = {2};
    ck_assert_int_eq(st_get_bf16(&a, "x", 2, s22, &x), SG_OK);
    const uint8_t *map = a.files[0].map;
    ck_assert((const uint8_t *)x >= map && (const uint8_t *)x < map + a.files[0].size); // zero-copy
    ck_assert_int_eq(x[1], 0xc000);
    ck_assert_int_eq(st_get_bf16(&a, "h", 1, s3, &hv), SG_OK);
    ck_assert((const uint8_t *)hv < map || (const uint8_t *)hv >= map + a.files[0].size);
    ck_assert_float_eq(bf16_to_f32(hv[0]), 1.5f);
    ck_assert_float_eq(bf16_to_f32(hv[1]), -4.0f);
    ck_assert_float_eq(bf16_to_f32(hv[2]), 0x1p-24f);
    ck_assert_int_eq(st_get_bf16(&a, "f", 1, s2, &fv), SG_OK);
    ck_assert_float_eq(bf16_to_f32(fv[0]), 1.0f);
    ck_assert_float_eq(bf16_to_f32(fv[1]), -3.0f);
    const bf16 *again;
    ck_assert_int_eq(st_get_bf16(&a, "f", 1, s2, &again), SG_OK);
    ck_assert_ptr_eq(again, fv); // converted once, cached

    float exact[2];
    ck_assert_int_eq(st_get_f32(&a, "f", 1, s2, exact), SG_OK);
    ck_assert_float_eq(exact[0], 1.00390625f); // fp32 access keeps the full value
    float halves[3];
    ck_assert_int_eq(st_get_f32(&a, "h", 1, s3, halves), SG_OK);
    ck_assert_float_eq(halves[2], 0x1p-24f);
    ck_assert_int_eq(st_get_f32(&a, "h", 1, s2, halves), SG_EXIT_INPUT);
    assert_message("'h' has shape [3], expected [2]", NULL, NULL);
    st_close(&a);
    ck_assert_ptr_null(a.files);
    st_close(&a); // safe twice
}
END_TEST

START_TEST(test_bf16_at_odd_address_is_copied) {
    // Header of 61 bytes: the data section starts at byte 69, so x sits at an odd address.
    uint8_t data[4] = {0x80, 0x3f, 0x00, 0x40}; // 1.0, 2.0
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "odd.safetensors");
    const char *header = "{\"x\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}      ";
    ck_assert_int_eq(strlen(header) % 2, 1);
    write_aligned(path, header, 1, data, sizeof data);
    st_archive a;
    ck_assert_int_eq(st_open_file(path, &a), SG_OK);
    const bf16 *x;
    int64_t s[1] = {2};
    ck_assert_int_eq(st_get_bf16(&a, "x", 1, s, &x), SG_OK);
    ck_assert_int_eq((uintptr_t)x % 2, 0);
    ck_assert_float_eq(bf16_to_f32(x[0]), 1.0f);
    ck_assert_float_eq(bf16_to_f32(x[1]), 2.0f);
    st_close(&a);
}
END_TEST

START_TEST(test_get_bf16_errors) {
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "m.safetensors");
    uint8_t zeros[12] = {0};
    write_raw(path, "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", zeros,
              sizeof zeros);
    st_archive a;
    ck_assert_int_eq(st_open_file(path, &a), SG_OK);
    const bf16 *w;
    int64_t s32[2] = {3, 2}, s6[1] = {6};
    ck_assert_int_eq(st_get_bf16(&a, "w", 2, s32, &w), SG_EXIT_INPUT);
    assert_message(path, "'w' has shape [2, 3], expected [3, 2]", NULL);
    ck_assert_int_eq(st_get_bf16(&a, "w", 1, s6, &w), SG_EXIT_INPUT);
    assert_message("[2, 3], expected [6]", NULL, NULL);
    ck_assert_int_eq(st_get_bf16(&a, "missing.weight", 1, s6, &w), SG_EXIT_INPUT);
    assert_message(path, "'missing.weight' not found", NULL);
    st_close(&a);
}
END_TEST

START_TEST(test_short_and_bad_length) {
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "short.safetensors");
    tu_write_file(path, "abc", 3);
    st_archive a;
    ck_assert_int_eq(st_open_file(path, &a), SG_EXIT_INPUT);
    assert_message(path, "shorter than the 8-byte header length", NULL);
    tu_write_file(path, "", 0);
    ck_assert_int_eq(st_open_file(path, &a), SG_EXIT_INPUT);
    assert_message(path, "0 bytes", NULL);

    uint8_t past[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    tu_write_file(path, past, sizeof past);
    ck_assert_int_eq(st_open_file(path, &a), SG_EXIT_INPUT);
    assert_message(path, "header length 100 runs past the end of the file (12 bytes)", NULL);

    uint8_t absurd[12] = {0, 0, 0, 0, 0, 1, 0, 0, '{', '}', ' ', ' '};
    tu_write_file(path, absurd, sizeof absurd);
    ck_assert_int_eq(st_open_file(path, &a), SG_EXIT_INPUT);
    assert_message(path, "is absurd", NULL);

    join(path, sizeof path, dir, "no-such.safetensors");
    ck_assert_int_eq(st_open_file(path, &a), SG_EXIT_INPUT);
    assert_message(path, "cannot open", NULL);
}
END_TEST

START_TEST(test_bad_json) {
    expect_bad_header("{\"x\": ", "not valid JSON", NULL);
    expect_bad_header("{} trailing", "not valid JSON", NULL);
    expect_bad_header("[1, 2]", "not a JSON object", NULL);
    expect_bad_header("{\"x\": 3}", "'x'", "not a JSON object");
}
END_TEST

START_TEST(test_bad_entries) {
    expect_bad_header("{\"t\":{\"shape\":[1],\"data_offsets\":[0,2]}}", "'t'", "lacks 'dtype'");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"data_offsets\":[0,2]}}", "'t'",
                      "lacks 'shape'");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1]}}", "'t'", "lacks 'data_offsets'");
    expect_bad_header("{\"t\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,2]}}", "'t'",
                      "dtype is not a string");
    expect_bad_header("{\"t\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
                      "'t': dtype 'I64' is not supported", "supported: BF16, F16, F32");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":3,\"data_offsets\":[0,2]}}", "'t'",
                      "shape is not a JSON array");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[-1],\"data_offsets\":[0,2]}}", "'t'",
                      "shape dim 0 is not a non-negative integer");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1,1.5],\"data_offsets\":[0,2]}}",
                      "'t'", "shape dim 1 is not a non-negative integer");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,2]}}",
                      "'t'", "5 dims, at most 4");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0]}}", "'t'",
                      "data_offsets must be two non-negative integers");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[-2,0]}}", "'t'",
                      "data_offsets must be two non-negative integers");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":\"0,2\"}}", "'t'",
                      "data_offsets must be two non-negative integers");
}
END_TEST

START_TEST(test_bad_offsets_and_sizes) {
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,10]}}",
                      "'t': shape [2, 3] of BF16 needs 12 bytes", "hold 10");
    expect_bad_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,6]}}",
                      "'t': shape [3] of F32 needs 12 bytes", NULL);
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[9007199254740992,9007199254740992,4],"
                      "\"data_offsets\":[0,8]}}",
                      "'t'", "needs more than");
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[40],\"data_offsets\":[0,80]}}",
                      "'t': data_offsets [0, 80] run past the data section (64 bytes)", NULL);
    expect_bad_header("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[4,2]}}",
                      "'t': data_offsets [4, 2] begin after end", NULL);
    expect_bad_header("{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[4,12]}}",
                      "tensors 'a' and 'b' overlap", NULL);
    // Containment: c lies inside a, after b ends.
    expect_bad_header("{\"a\":{\"dtype\":\"BF16\",\"shape\":[16],\"data_offsets\":[0,32]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                      "\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[20,24]}}",
                      "overlap", "'a'");
    expect_bad_header("{\"d\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]},"
                      "\"d\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[2,4]}}",
                      "tensor 'd' appears twice in the header", NULL);
}
END_TEST

START_TEST(test_metadata_and_empty_tensors_accepted) {
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "m.safetensors");
    uint8_t data[4] = {0};
    write_raw(path,
              "{\"__metadata__\":{\"anything\":[1,2,{}]},"
              "\"e\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[4,4]},"
              "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
              data, sizeof data);
    st_archive a;
    ck_assert_int_eq(st_open_file(path, &a), SG_OK);
    ck_assert_int_eq(a.n_tensors, 2);
    ck_assert_ptr_null(st_find(&a, "__metadata__"));
    ck_assert_int_eq(st_find(&a, "s")->ndim, 0);
    st_close(&a);
}
END_TEST

START_TEST(test_parse_buffer) {
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    join(path, sizeof path, dir, "m.safetensors");
    uint16_t v[2] = {0x3f80, 0x4000};
    write_raw(path, "{\"v\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}    ", v,
              sizeof v);
    char *bytes;
    size_t n;
    ck_assert_int_eq(file_read_all(path, &bytes, &n), SG_OK);
    st_archive a;
    ck_assert_int_eq(st_parse_buffer((const uint8_t *)bytes, n, "buffer-name", &a), SG_OK);
    ck_assert_str_eq(a.source, "buffer-name");
    ck_assert_int_eq(a.files[0].is_mapped, 0);
    const bf16 *x;
    int64_t s[1] = {2};
    ck_assert_int_eq(st_get_bf16(&a, "v", 1, s, &x), SG_OK);
    ck_assert_ptr_eq(x, (const bf16 *)(const void *)(bytes + n - 4));
    st_close(&a);
    ck_assert_int_eq(st_parse_buffer((const uint8_t *)bytes, 5, "cut-name", &a), SG_EXIT_INPUT);
    assert_message("cut-name", "shorter than", NULL);
    free(bytes);
}
END_TEST

// A writer with three tensors of the three dtypes (values from `seed`).
static st_writer *make_writer(uint64_t seed) {
    st_writer *w = st_writer_new();
    bf16 *a = tu_random_bf16(12, 1.0, seed);
    uint16_t h[5] = {0x3c00, 0x4000, 0xbc00, 0x0000, 0x7bff};
    float f[3] = {0.1f, -2.5f, 1e30f};
    int64_t sa[2] = {3, 4}, sh[1] = {5}, sf[3] = {1, 3, 1};
    st_writer_add(w, "zeta.weight", ST_BF16, 2, sa, a);
    st_writer_add(w, "alpha.weight", ST_F16, 1, sh, h);
    st_writer_add(w, "mid.bias", ST_F32, 3, sf, f);
    free(a);
    return w;
}

static int same_file(const char *p, const char *q) {
    char *a, *b;
    size_t na, nb;
    ck_assert_int_eq(file_read_all(p, &a, &na), SG_OK);
    ck_assert_int_eq(file_read_all(q, &b, &nb), SG_OK);
    int same = na == nb && memcmp(a, b, na) == 0;
    free(a);
    free(b);
    return same;
}

START_TEST(test_writer_single_round_trip_and_determinism) {
    char d1[256], d2[256], p1[512], p2[512];
    tu_tmpdir(d1, sizeof d1);
    tu_tmpdir(d2, sizeof d2);
    st_writer *w = make_writer(7), *w2 = make_writer(7);
    ck_assert_int_eq(st_writer_save_dir(w, d1, 1), SG_OK);
    ck_assert_int_eq(st_writer_save_dir(w2, d2, 1), SG_OK);
    join(p1, sizeof p1, d1, "model.safetensors");
    join(p2, sizeof p2, d2, "model.safetensors");
    ck_assert(same_file(p1, p2));

    // Header: length a multiple of 8, padded with spaces, tensors in insertion order.
    char *bytes;
    size_t n;
    ck_assert_int_eq(file_read_all(p1, &bytes, &n), SG_OK);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | (uint8_t)bytes[i];
    ck_assert_int_eq(hlen % 8, 0);
    ck_assert_int_eq(n, 8 + hlen + 24 + 10 + 12);
    size_t json_end = hlen;
    while (json_end > 0 && bytes[8 + json_end - 1] == ' ') json_end--;
    ck_assert_int_eq(bytes[8 + json_end - 1], '}');
    ck_assert_int_lt(hlen - json_end, 8);
    char *header = strndup(bytes + 8, hlen);
    ck_assert_ptr_nonnull(strstr(header, "{\"__metadata__\":{\"format\":\"pt\"},\"zeta.weight\":"));
    char *z = strstr(header, "\"zeta.weight\""), *al = strstr(header, "\"alpha.weight\"");
    ck_assert(z && al && z < al);
    ck_assert_ptr_nonnull(strstr(header, "\"shape\":[1,3,1],\"data_offsets\":[34,46]"));
    free(header);
    free(bytes);

    st_archive a;
    ck_assert_int_eq(st_open_dir(d1, &a), SG_OK);
    ck_assert_int_eq(a.n_tensors, 3);
    bf16 *want = tu_random_bf16(12, 1.0, 7);
    const bf16 *got;
    int64_t sa[2] = {3, 4}, sf[3] = {1, 3, 1};
    ck_assert_int_eq(st_get_bf16(&a, "zeta.weight", 2, sa, &got), SG_OK);
    ck_assert_mem_eq(got, want, 24);
    float f[3];
    ck_assert_int_eq(st_get_f32(&a, "mid.bias", 3, sf, f), SG_OK);
    ck_assert_float_eq(f[0], 0.1f);
    ck_assert_float_eq(f[2], 1e30f);
    const st_tensor *h = st_find(&a, "alpha.weight");
    ck_assert_int_eq(h->dtype, ST_F16);
    ck_assert_int_eq(h->nbytes, 10);
    st_close(&a);
    free(want);

    // A different value changes the file.
    st_writer *w3 = make_writer(8);
    ck_assert_int_eq(st_writer_save_dir(w3, d2, 1), SG_OK);
    ck_assert(!same_file(p1, p2));
    st_writer_free(w);
    st_writer_free(w2);
    st_writer_free(w3);
}
END_TEST

START_TEST(test_writer_sharded_round_trip) {
    char d1[256], d2[256], p[512], q[512];
    tu_tmpdir(d1, sizeof d1);
    tu_tmpdir(d2, sizeof d2);
    st_writer *w = make_writer(3);
    ck_assert_int_eq(st_writer_save_dir(w, d1, 3), SG_OK);
    ck_assert_int_eq(st_writer_save_dir(w, d2, 3), SG_OK);
    const char *names[] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                           "model-00003-of-00003.safetensors", "model.safetensors.index.json"};
    for (int i = 0; i < 4; i++) {
        join(p, sizeof p, d1, names[i]);
        join(q, sizeof q, d2, names[i]);
        ck_assert_msg(same_file(p, q), "%s differs between identical saves", names[i]);
    }
    char *index;
    size_t n;
    join(p, sizeof p, d1, "model.safetensors.index.json");
    ck_assert_int_eq(file_read_all(p, &index, &n), SG_OK);
    ck_assert_ptr_nonnull(strstr(index, "\"total_size\":\t46"));
    char **shards;
    int n_shards;
    ck_assert_int_eq(st_parse_index(index, n, p, &shards, &n_shards), SG_OK);
    ck_assert_int_eq(n_shards, 3);
    ck_assert_str_eq(shards[0], names[0]);
    ck_assert_str_eq(shards[2], names[2]);
    for (int i = 0; i < n_shards; i++) free(shards[i]);
    free(shards);
    free(index);

    st_archive a;
    ck_assert_int_eq(st_open_dir(d1, &a), SG_OK);
    ck_assert_int_eq(a.n_files, 3);
    ck_assert_int_eq(a.n_tensors, 3);
    const st_tensor *t = st_find(&a, "mid.bias");
    ck_assert_ptr_nonnull(strstr(a.files[t->file].path, names[2]));
    bf16 *want = tu_random_bf16(12, 1.0, 3);
    const bf16 *got;
    int64_t sa[2] = {3, 4};
    ck_assert_int_eq(st_get_bf16(&a, "zeta.weight", 2, sa, &got), SG_OK);
    ck_assert_mem_eq(got, want, 24);
    free(want);
    st_close(&a);

    // Saving unsharded into the same folder removes the stale index.
    ck_assert_int_eq(st_writer_save_dir(w, d1, 1), SG_OK);
    ck_assert_int_eq(st_open_dir(d1, &a), SG_OK);
    ck_assert_int_eq(a.n_files, 1);
    st_close(&a);
    st_writer_free(w);
}
END_TEST

START_TEST(test_parse_index_errors) {
    char **shards;
    int n;
    const struct {
        const char *json, *needle;
    } cases[] = {
        {"{\"weight_map\": ", "not valid JSON"},
        {"[]", "not a JSON object"},
        {"{\"metadata\": {}}", "needs a \"weight_map\" object"},
        {"{\"weight_map\": []}", "needs a \"weight_map\" object"},
        {"{\"weight_map\": {}}", "\"weight_map\" is empty"},
        {"{\"weight_map\": {\"a\": 3}}", "weight_map entry 'a' must be a shard file name"},
        {"{\"weight_map\": {\"a\": \"../x.safetensors\"}}", "entry 'a' must be a shard file name"},
        {"{\"weight_map\": {\"a\": \"\"}}", "entry 'a' must be a shard file name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(
            st_parse_index(cases[i].json, strlen(cases[i].json), "idx.json", &shards, &n),
            SG_EXIT_INPUT);
        assert_message("idx.json", cases[i].needle, NULL);
    }
    const char *ok = "{\"weight_map\": {\"a\": \"s2\", \"b\": \"s1\", \"c\": \"s2\"}}";
    ck_assert_int_eq(st_parse_index(ok, strlen(ok), "idx.json", &shards, &n), SG_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(shards[0], "s2");
    ck_assert_str_eq(shards[1], "s1");
    for (int i = 0; i < n; i++) free(shards[i]);
    free(shards);
}
END_TEST

// A two-shard folder: s1 holds a and b, s2 holds c; `index` is the index text.
static void make_sharded(char *dir, size_t size, const char *index) {
    tu_tmpdir(dir, size);
    char path[512];
    uint8_t zeros[8] = {0};
    join(path, sizeof path, dir, "s1.safetensors");
    write_raw(path,
              "{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]}}",
              zeros, 8);
    join(path, sizeof path, dir, "s2.safetensors");
    write_raw(path, "{\"c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", zeros, 8);
    join(path, sizeof path, dir, "model.safetensors.index.json");
    tu_write_file(path, index, strlen(index));
}

static void expect_bad_sharded(const char *index, const char *needle1, const char *needle2) {
    char dir[256];
    make_sharded(dir, sizeof dir, index);
    st_archive a;
    ck_assert_int_eq(st_open_dir(dir, &a), SG_EXIT_INPUT);
    assert_message(needle1, needle2, NULL);
    ck_assert_ptr_null(a.files);
}

START_TEST(test_sharded_folder) {
    char dir[256];
    make_sharded(dir, sizeof dir,
                 "{\"metadata\": {\"total_size\": 16}, \"weight_map\": {\"a\": \"s1.safetensors\", "
                 "\"b\": \"s1.safetensors\", \"c\": \"s2.safetensors\"}}");
    st_archive a;
    ck_assert_int_eq(st_open_dir(dir, &a), SG_OK);
    ck_assert_int_eq(a.n_files, 2);
    ck_assert_int_eq(a.n_tensors, 3);
    ck_assert_str_eq(a.source, dir);
    ck_assert_int_eq(st_find(&a, "c")->file, 1);
    const bf16 *c;
    int64_t s[1] = {2};
    ck_assert_int_eq(st_get_bf16(&a, "c", 1, s, &c), SG_OK);
    ck_assert_int_eq(c[0], 0);
    ck_assert_int_eq(st_get_bf16(&a, "zz", 1, s, &c), SG_EXIT_INPUT);
    assert_message(dir, "'zz' not found", NULL);
    st_close(&a);
}
END_TEST

START_TEST(test_sharded_errors) {
    expect_bad_sharded("{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
                       "\"c\": \"s3.safetensors\"}}",
                       "names shard s3.safetensors", "cannot open");
    expect_bad_sharded("{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
                       "\"c\": \"model.safetensors.index.json\"}}",
                       "model.safetensors.index.json: header length", NULL);
    expect_bad_sharded("{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
                       "\"c\": \"s2.safetensors\", \"x\": \"s2.safetensors\"}}",
                       "weight_map puts tensor 'x' in s2.safetensors, but no shard holds it", NULL);
    expect_bad_sharded("{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s2.safetensors\", "
                       "\"c\": \"s2.safetensors\"}}",
                       "weight_map puts tensor 'b' in s2.safetensors, but it is in",
                       "s1.safetensors");
    expect_bad_sharded("{\"weight_map\": {\"a\": \"s1.safetensors\", \"c\": \"s2.safetensors\"}}",
                       "tensor 'b' is not listed in the weight_map", "s1.safetensors");
    expect_bad_sharded("{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
                       "\"c\": \"s2.safetensors\", \"a\": \"s1.safetensors\"}}",
                       "weight_map lists tensor 'a' twice", NULL);
    expect_bad_sharded("{\"weight_map\": 7}", "model.safetensors.index.json",
                       "needs a \"weight_map\" object");

    // A tensor held by two shards.
    char dir[256], path[512];
    make_sharded(dir, sizeof dir,
                 "{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
                 "\"c\": \"s2.safetensors\"}}");
    uint8_t zeros[4] = {0};
    join(path, sizeof path, dir, "s2.safetensors");
    write_raw(path,
              "{\"c\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]},"
              "\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[2,4]}}",
              zeros, 4);
    st_archive a;
    ck_assert_int_eq(st_open_dir(dir, &a), SG_EXIT_INPUT);
    assert_message("tensor 'a' is in two shards", "s1.safetensors", "s2.safetensors");
}
END_TEST

START_TEST(test_dir_errors) {
    char dir[256], path[512];
    tu_tmpdir(dir, sizeof dir);
    st_archive a;
    ck_assert_int_eq(st_open_dir(dir, &a), SG_EXIT_INPUT);
    assert_message(dir, "has neither model.safetensors.index.json nor model.safetensors", NULL);
    join(path, sizeof path, dir, "missing");
    ck_assert_int_eq(st_open_dir(path, &a), SG_EXIT_INPUT);
    assert_message(path, "cannot open the checkpoint folder", NULL);
    join(path, sizeof path, dir, "model.safetensors");
    write_raw(path, "{\"a\":1}", NULL, 0);
    ck_assert_int_eq(st_open_dir(path, &a), SG_EXIT_INPUT);
    assert_message(path, "not a folder", NULL);
    ck_assert_int_eq(st_open_dir(dir, &a), SG_EXIT_INPUT); // the single file is malformed
    assert_message(path, "'a'", "not a JSON object");
}
END_TEST

START_TEST(test_dtype_names) {
    ck_assert_str_eq(st_dtype_name(ST_BF16), "BF16");
    ck_assert_str_eq(st_dtype_name(ST_F16), "F16");
    ck_assert_str_eq(st_dtype_name(ST_F32), "F32");
    ck_assert_int_eq(st_dtype_size(ST_F32), 4);
    ck_assert_int_eq(st_dtype_size(ST_BF16), 2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("safetensors");
    tcase_add_test(tc, test_single_file_all_dtypes);
    tcase_add_test(tc, test_bf16_at_odd_address_is_copied);
    tcase_add_test(tc, test_get_bf16_errors);
    tcase_add_test(tc, test_short_and_bad_length);
    tcase_add_test(tc, test_bad_json);
    tcase_add_test(tc, test_bad_entries);
    tcase_add_test(tc, test_bad_offsets_and_sizes);
    tcase_add_test(tc, test_metadata_and_empty_tensors_accepted);
    tcase_add_test(tc, test_parse_buffer);
    tcase_add_test(tc, test_writer_single_round_trip_and_determinism);
    tcase_add_test(tc, test_writer_sharded_round_trip);
    tcase_add_test(tc, test_parse_index_errors);
    tcase_add_test(tc, test_sharded_folder);
    tcase_add_test(tc, test_sharded_errors);
    tcase_add_test(tc, test_dir_errors);
    tcase_add_test(tc, test_dtype_names);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
