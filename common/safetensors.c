// common/safetensors.c: safetensors reading (mmap, read-only; single file, sharded folder, memory
// buffer), validation of every header entry, bf16 access, and the deterministic writer.
//
// Contract: see safetensors.h. Layout of a file: 8-byte little-endian header length N, N bytes of
// JSON header (an object: name -> {dtype, shape, data_offsets [begin, end]} relative to the data
// section, plus an optional "__metadata__"), then the data section. Nothing in a file is trusted:
// every error is SG_EXIT_INPUT naming the file and, where there is one, the tensor.
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads little-endian data in place: little-endian hosts only"
#endif

#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"
#define ST_MAX_EXACT_INT 9007199254740992.0 // 2^53: JSON numbers above it are not exact

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} st_dtypes[] = {{"BF16", ST_BF16, 2}, {"F16", ST_F16, 2}, {"F32", ST_F32, 4}};
#define ST_N_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

const char *st_dtype_name(st_dtype dtype) {
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dtype == dtype) return st_dtypes[i].name;
    SG_CHECK(0, "unknown st_dtype %d", (int)dtype);
}

size_t st_dtype_size(st_dtype dtype) {
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dtype == dtype) return st_dtypes[i].size;
    SG_CHECK(0, "unknown st_dtype %d", (int)dtype);
}

static char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = sg_calloc(n, 1);
    memcpy(d, s, n);
    return d;
}

static char *path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = sg_calloc(n, 1);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

// Formats a shape as "[a, b, c]" into buf.
static void format_shape(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

// Parses JSON text of exactly `len` bytes (no NUL needed); only whitespace may follow the value.
// NULL when it is not valid JSON.
static cJSON *parse_json_exact(const char *text, size_t len) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) return NULL;
    for (size_t i = (size_t)(end - text); i < len; i++) {
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
            cJSON_Delete(root);
            return NULL;
        }
    }
    return root;
}

// A JSON number that is an exact non-negative integer (at most 2^53).
static int json_uint(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return 0;
    double v = item->valuedouble;
    if (!(v >= 0.0 && v <= ST_MAX_EXACT_INT) || v != floor(v)) return 0;
    *out = (uint64_t)v;
    return 1;
}

// ---------------------------------------------------------------------------------------------
// Reading

static int add_file(st_archive *a, const char *path, const uint8_t *map, size_t size,
                    int is_mapped) {
    st_file *files = sg_calloc((size_t)a->n_files + 1, sizeof *files);
    if (a->n_files) memcpy(files, a->files, (size_t)a->n_files * sizeof *files);
    free(a->files);
    a->files = files;
    st_file *f = &a->files[a->n_files];
    f->path = st_strdup(path);
    f->map = map;
    f->size = size;
    f->is_mapped = is_mapped;
    return a->n_files++;
}

// Maps `path` read-only (an empty file gets no mapping).
static int map_file(const char *path, const uint8_t **map, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sg_fail(SG_EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sg_fail(SG_EXIT_INPUT, "%s: not a regular file", path);
    }
    *size = (size_t)st.st_size;
    *map = NULL;
    if (*size > 0) {
        void *p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            close(fd);
            return sg_fail(SG_EXIT_INPUT, "%s: cannot map: %s", path, strerror(err));
        }
        *map = p;
    }
    close(fd);
    return SG_OK;
}

// Maps a file and adds it to the archive as file *index.
static int open_mapped(st_archive *a, const char *path, int *index) {
    const uint8_t *map;
    size_t size;
    SG_TRY(map_file(path, &map, &size));
    *index = add_file(a, path, map, size, size > 0);
    return SG_OK;
}

static int compare_begin(const void *x, const void *y) {
    const st_tensor *a = *(const st_tensor *const *)x, *b = *(const st_tensor *const *)y;
    if (a->data != b->data) return a->data < b->data ? -1 : 1;
    return a->nbytes < b->nbytes ? -1 : a->nbytes > b->nbytes;
}

// One header entry into t (name already set). data/size: the file's data section.
static int parse_entry(const cJSON *entry, const char *path, const uint8_t *data, size_t size,
                       st_tensor *t) {
    const char *name = t->name;
    if (!cJSON_IsObject(entry))
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s': header entry is not a JSON object", path,
                       name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    const char *missing = !offsets ? "data_offsets" : NULL;
    if (!shape) missing = "shape";
    if (!dtype) missing = "dtype";
    if (missing)
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s': header entry lacks '%s'", path, name,
                       missing);
    if (!cJSON_IsString(dtype))
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s': dtype is not a string", path, name);
    size_t esize = 0;
    for (size_t i = 0; i < ST_N_DTYPES; i++) {
        if (strcmp(dtype->valuestring, st_dtypes[i].name) == 0) {
            t->dtype = st_dtypes[i].dtype;
            esize = st_dtypes[i].size;
        }
    }
    if (!esize)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: tensor '%s': dtype '%s' is not supported (supported: BF16, F16, F32)",
                       path, name, dtype->valuestring);

    if (!cJSON_IsArray(shape))
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s': shape is not a JSON array", path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ST_MAX_DIMS)
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s': shape has %d dims, at most %d supported",
                       path, name, ndim, ST_MAX_DIMS);
    t->ndim = ndim;
    uint64_t need = esize;
    int overflow = 0;
    for (int i = 0; i < ndim; i++) {
        uint64_t dim;
        if (!json_uint(cJSON_GetArrayItem(shape, i), &dim))
            return sg_fail(SG_EXIT_INPUT,
                           "%s: tensor '%s': shape dim %d is not a non-negative integer", path,
                           name, i);
        t->shape[i] = (int64_t)dim;
        overflow |= __builtin_mul_overflow(need, dim, &need);
    }

    uint64_t begin, end;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_uint(cJSON_GetArrayItem(offsets, 0), &begin) ||
        !json_uint(cJSON_GetArrayItem(offsets, 1), &end))
        return sg_fail(SG_EXIT_INPUT,
                       "%s: tensor '%s': data_offsets must be two non-negative integers", path,
                       name);
    if (begin > end)
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s': data_offsets [%llu, %llu] begin after end",
                       path, name, (unsigned long long)begin, (unsigned long long)end);
    if (end > size)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: tensor '%s': data_offsets [%llu, %llu] run past the data section "
                       "(%zu bytes): the file is truncated or the header is wrong",
                       path, name, (unsigned long long)begin, (unsigned long long)end, size);
    if (overflow || need != end - begin) {
        char dims[160];
        format_shape(dims, sizeof dims, ndim, t->shape);
        return sg_fail(SG_EXIT_INPUT,
                       "%s: tensor '%s': shape %s of %s needs %s%llu bytes but data_offsets "
                       "[%llu, %llu] hold %llu",
                       path, name, dims, dtype->valuestring, overflow ? "more than " : "",
                       (unsigned long long)(overflow ? UINT64_MAX : need),
                       (unsigned long long)begin, (unsigned long long)end,
                       (unsigned long long)(end - begin));
    }
    t->data = data + begin;
    t->nbytes = (size_t)(end - begin);
    return SG_OK;
}

// Parses the header of file `fi` of the archive and appends its tensors.
static int parse_file(st_archive *a, int fi) {
    const st_file *f = &a->files[fi];
    const char *path = f->path;
    if (f->size < 8)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: %zu bytes, shorter than the 8-byte header length: not a safetensors "
                       "file",
                       path, f->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | f->map[i];
    if (hlen > ST_MAX_HEADER)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: header length %llu is absurd (limit %u bytes): not a safetensors file",
                       path, (unsigned long long)hlen, ST_MAX_HEADER);
    if (hlen > f->size - 8)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: header length %llu runs past the end of the file (%zu bytes): the file "
                       "is truncated or not a safetensors file",
                       path, (unsigned long long)hlen, f->size);
    const uint8_t *data = f->map + 8 + hlen;
    size_t data_size = f->size - 8 - (size_t)hlen;

    cJSON *root = parse_json_exact((const char *)f->map + 8, (size_t)hlen);
    if (!root)
        return sg_fail(SG_EXIT_INPUT, "%s: the %llu-byte header is not valid JSON", path,
                       (unsigned long long)hlen);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return sg_fail(SG_EXIT_INPUT, "%s: the header is not a JSON object", path);
    }
    int count = 0;
    for (const cJSON *e = root->child; e; e = e->next) count++;
    st_tensor *tensors = sg_calloc((size_t)a->n_tensors + (size_t)count, sizeof *tensors);
    if (a->n_tensors) memcpy(tensors, a->tensors, (size_t)a->n_tensors * sizeof *tensors);
    free(a->tensors);
    a->tensors = tensors;
    int first = a->n_tensors, status = SG_OK;
    for (const cJSON *e = root->child; e && status == SG_OK; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        st_tensor *t = &a->tensors[a->n_tensors++];
        t->name = st_strdup(e->string);
        t->file = fi;
        status = parse_entry(e, path, data, data_size, t);
    }
    cJSON_Delete(root);
    SG_TRY(status);

    // Overlap: sort this file's tensors by offset; each must start at or after every earlier end.
    int n = a->n_tensors - first;
    st_tensor **order = sg_calloc((size_t)n, sizeof *order);
    for (int i = 0; i < n; i++) order[i] = &a->tensors[first + i];
    qsort(order, (size_t)n, sizeof *order, compare_begin);
    const st_tensor *reach = NULL; // the tensor with the furthest end so far
    for (int i = 0; i < n && status == SG_OK; i++) {
        if (reach && order[i]->data < reach->data + reach->nbytes)
            status = sg_fail(SG_EXIT_INPUT, "%s: tensors '%s' and '%s' overlap in the data section",
                             path, reach->name, order[i]->name);
        if (!reach || order[i]->data + order[i]->nbytes > reach->data + reach->nbytes)
            reach = order[i];
    }
    free(order);
    return status;
}

static int compare_name(const void *x, const void *y) {
    const st_tensor *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : a->file - b->file;
}

// Sorts all tensors by name and refuses duplicates (within a file or across shards).
static int sort_and_check_names(st_archive *a) {
    if (a->n_tensors > 1) qsort(a->tensors, (size_t)a->n_tensors, sizeof *a->tensors, compare_name);
    for (int i = 1; i < a->n_tensors; i++) {
        const st_tensor *p = &a->tensors[i - 1], *t = &a->tensors[i];
        if (strcmp(p->name, t->name) != 0) continue;
        if (p->file == t->file)
            return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s' appears twice in the header",
                           a->files[t->file].path, t->name);
        return sg_fail(SG_EXIT_INPUT, "tensor '%s' is in two shards: %s and %s", t->name,
                       a->files[p->file].path, a->files[t->file].path);
    }
    return SG_OK;
}

void st_close(st_archive *a) {
    for (int i = 0; i < a->n_files; i++) {
        if (a->files[i].is_mapped) munmap((void *)a->files[i].map, a->files[i].size);
        free(a->files[i].path);
    }
    for (int i = 0; i < a->n_tensors; i++) {
        free(a->tensors[i].name);
        free(a->tensors[i].converted);
    }
    free(a->files);
    free(a->tensors);
    free(a->source);
    memset(a, 0, sizeof *a);
}

// Finishes an open: on failure closes the partial archive (the message stays).
static int finish(st_archive *a, int status) {
    if (status != SG_OK) st_close(a);
    return status;
}

int st_parse_buffer(const uint8_t *data, size_t size, const char *name, st_archive *out) {
    memset(out, 0, sizeof *out);
    out->source = st_strdup(name);
    int fi = add_file(out, name, data, size, 0);
    int status = parse_file(out, fi);
    if (status == SG_OK) status = sort_and_check_names(out);
    return finish(out, status);
}

int st_open_file(const char *path, st_archive *out) {
    memset(out, 0, sizeof *out);
    out->source = st_strdup(path);
    int fi = 0;
    int status = open_mapped(out, path, &fi);
    if (status == SG_OK) status = parse_file(out, fi);
    if (status == SG_OK) status = sort_and_check_names(out);
    return finish(out, status);
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

// Checks the index and lists its shards; *weight_map points into *root (caller deletes root).
static int parse_index(const char *json, size_t len, const char *name, cJSON **root,
                       const cJSON **weight_map, char ***shards, int *n_shards) {
    *root = NULL;
    *shards = NULL;
    *n_shards = 0;
    cJSON *r = parse_json_exact(json, len);
    if (!r) return sg_fail(SG_EXIT_INPUT, "%s: not valid JSON", name);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(r, "weight_map");
    int status = SG_OK;
    if (!cJSON_IsObject(r))
        status = sg_fail(SG_EXIT_INPUT, "%s: not a JSON object", name);
    else if (!cJSON_IsObject(map))
        status =
            sg_fail(SG_EXIT_INPUT,
                    "%s: needs a \"weight_map\" object (tensor name -> shard file name)", name);
    else if (!map->child)
        status = sg_fail(SG_EXIT_INPUT, "%s: \"weight_map\" is empty", name);
    if (status != SG_OK) {
        cJSON_Delete(r);
        return status;
    }
    int count = 0;
    for (const cJSON *e = map->child; e; e = e->next) count++;
    char **list = sg_calloc((size_t)count, sizeof *list);
    int n = 0;
    for (const cJSON *e = map->child; e && status == SG_OK; e = e->next) {
        const char *shard = cJSON_GetStringValue(e);
        if (!shard || !*shard || strchr(shard, '/') || strcmp(shard, ".") == 0 ||
            strcmp(shard, "..") == 0) {
            status = sg_fail(SG_EXIT_INPUT,
                             "%s: weight_map entry '%s' must be a shard file name in the same "
                             "folder (a non-empty string without '/')",
                             name, e->string);
            break;
        }
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = strcmp(list[i], shard) == 0;
        if (!seen) list[n++] = st_strdup(shard);
    }
    if (status != SG_OK) {
        free_names(list, n);
        cJSON_Delete(r);
        return status;
    }
    *root = r;
    *weight_map = map;
    *shards = list;
    *n_shards = n;
    return SG_OK;
}

int st_parse_index(const char *json, size_t len, const char *name, char ***shards, int *n_shards) {
    cJSON *root;
    const cJSON *map;
    SG_TRY(parse_index(json, len, name, &root, &map, shards, n_shards));
    cJSON_Delete(root);
    return SG_OK;
}

// Checks the weight_map against the shards' tensors: every entry in its named shard, every tensor
// listed exactly once. shards[i] is file i of the archive.
static int check_weight_map(const st_archive *a, const char *index_path, const cJSON *map,
                            char **shards, int n_shards) {
    char *listed = sg_calloc((size_t)a->n_tensors, 1);
    int status = SG_OK;
    for (const cJSON *e = map->child; e && status == SG_OK; e = e->next) {
        int file = 0;
        while (file < n_shards && strcmp(shards[file], e->valuestring) != 0) file++;
        const st_tensor *t = st_find(a, e->string);
        if (!t)
            status = sg_fail(SG_EXIT_INPUT,
                             "%s: weight_map puts tensor '%s' in %s, but no shard holds it",
                             index_path, e->string, e->valuestring);
        else if (t->file != file)
            status =
                sg_fail(SG_EXIT_INPUT, "%s: weight_map puts tensor '%s' in %s, but it is in %s",
                        index_path, e->string, e->valuestring, a->files[t->file].path);
        else if (listed[t - a->tensors])
            status = sg_fail(SG_EXIT_INPUT, "%s: weight_map lists tensor '%s' twice", index_path,
                             e->string);
        else
            listed[t - a->tensors] = 1;
    }
    for (int i = 0; i < a->n_tensors && status == SG_OK; i++)
        if (!listed[i])
            status = sg_fail(SG_EXIT_INPUT, "%s: tensor '%s' is not listed in the weight_map of %s",
                             a->files[a->tensors[i].file].path, a->tensors[i].name, index_path);
    free(listed);
    return status;
}

static int open_sharded(const char *dir, const char *index_path, st_archive *out) {
    const uint8_t *map;
    size_t size;
    SG_TRY(map_file(index_path, &map, &size));
    cJSON *root;
    const cJSON *weight_map;
    char **shards;
    int n_shards;
    int status =
        parse_index((const char *)map, size, index_path, &root, &weight_map, &shards, &n_shards);
    if (map) munmap((void *)map, size);
    SG_TRY(status);
    for (int i = 0; i < n_shards && status == SG_OK; i++) {
        char *path = path_join(dir, shards[i]);
        int fi = 0;
        status = open_mapped(out, path, &fi);
        if (status != SG_OK)
            sg_fail_context(status, "%s names shard %s", index_path, shards[i]);
        else
            status = parse_file(out, fi);
        free(path);
    }
    if (status == SG_OK) status = sort_and_check_names(out);
    if (status == SG_OK) status = check_weight_map(out, index_path, weight_map, shards, n_shards);
    free_names(shards, n_shards);
    cJSON_Delete(root);
    return status;
}

int st_open_dir(const char *dir, st_archive *out) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(dir, &st) != 0)
        return sg_fail(SG_EXIT_INPUT, "%s: cannot open the checkpoint folder: %s", dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sg_fail(SG_EXIT_INPUT, "%s: not a folder (a checkpoint is a folder)", dir);
    out->source = st_strdup(dir);
    char *index_path = path_join(dir, ST_INDEX_NAME);
    char *single_path = path_join(dir, ST_SINGLE_NAME);
    int status;
    if (access(index_path, F_OK) == 0) {
        status = open_sharded(dir, index_path, out);
    } else if (access(single_path, F_OK) == 0) {
        int fi = 0;
        status = open_mapped(out, single_path, &fi);
        if (status == SG_OK) status = parse_file(out, fi);
        if (status == SG_OK) status = sort_and_check_names(out);
    } else {
        status =
            sg_fail(SG_EXIT_INPUT, "%s: has neither %s nor %s", dir, ST_INDEX_NAME, ST_SINGLE_NAME);
    }
    free(index_path);
    free(single_path);
    return finish(out, status);
}

const st_tensor *st_find(const st_archive *a, const char *name) {
    int lo = 0, hi = a->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, a->tensors[mid].name);
        if (c == 0) return &a->tensors[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

// The tensor `name` with exactly the given shape, or SG_EXIT_INPUT naming expected vs found.
static int find_checked(const st_archive *a, const char *name, int ndim, const int64_t *shape,
                        const st_tensor **out) {
    const st_tensor *t = st_find(a, name);
    if (!t) return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s' not found", a->source, name);
    int same = t->ndim == ndim;
    for (int i = 0; i < ndim && same; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char want[160], got[160];
        format_shape(want, sizeof want, ndim, shape);
        format_shape(got, sizeof got, t->ndim, t->shape);
        return sg_fail(SG_EXIT_INPUT, "%s: tensor '%s' has shape %s, expected %s",
                       a->files[t->file].path, name, got, want);
    }
    *out = t;
    return SG_OK;
}

// Element i of t as fp32 (exact for every dtype); reads bytes, so any alignment is fine.
static float element_f32(const st_tensor *t, size_t i) {
    if (t->dtype == ST_F32) {
        float f;
        memcpy(&f, t->data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, t->data + 2 * i, 2);
    return t->dtype == ST_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

int st_get_bf16(st_archive *a, const char *name, int ndim, const int64_t *shape, const bf16 **out) {
    const st_tensor *found;
    SG_TRY(find_checked(a, name, ndim, shape, &found));
    st_tensor *t = &a->tensors[found - a->tensors];
    if (t->dtype == ST_BF16 && (uintptr_t)t->data % _Alignof(bf16) == 0) {
        *out = (const bf16 *)(const void *)t->data;
        return SG_OK;
    }
    if (!t->converted) {
        size_t n = t->nbytes / st_dtype_size(t->dtype);
        t->converted = sg_calloc(n, sizeof(bf16));
        for (size_t i = 0; i < n; i++) t->converted[i] = f32_to_bf16(element_f32(t, i));
    }
    *out = t->converted;
    return SG_OK;
}

int st_get_f32(const st_archive *a, const char *name, int ndim, const int64_t *shape, float *out) {
    const st_tensor *t;
    SG_TRY(find_checked(a, name, ndim, shape, &t));
    size_t n = t->nbytes / st_dtype_size(t->dtype);
    for (size_t i = 0; i < n; i++) out[i] = element_f32(t, i);
    return SG_OK;
}

// ---------------------------------------------------------------------------------------------
// Writing

typedef struct {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint8_t *data;
    size_t nbytes;
} st_writer_tensor;

struct st_writer {
    st_writer_tensor *tensors;
    int n, cap;
};

st_writer *st_writer_new(void) { return sg_calloc(1, sizeof(st_writer)); }

void st_writer_add(st_writer *w, const char *name, st_dtype dtype, int ndim, const int64_t *shape,
                   const void *data) {
    SG_CHECK(name && *name && strcmp(name, "__metadata__") != 0, "bad tensor name");
    SG_CHECK(ndim >= 0 && ndim <= ST_MAX_DIMS, "tensor '%s': ndim %d", name, ndim);
    for (int i = 0; i < w->n; i++)
        SG_CHECK(strcmp(w->tensors[i].name, name) != 0, "tensor '%s' added twice", name);
    size_t nbytes = st_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        SG_CHECK(shape[i] >= 0, "tensor '%s': dim %d is %lld", name, i, (long long)shape[i]);
        SG_CHECK(!__builtin_mul_overflow(nbytes, (size_t)shape[i], &nbytes),
                 "tensor '%s': size overflows", name);
    }
    SG_CHECK(data || nbytes == 0, "tensor '%s': no data", name);
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        st_writer_tensor *grown = sg_calloc((size_t)w->cap, sizeof *grown);
        if (w->n) memcpy(grown, w->tensors, (size_t)w->n * sizeof *grown);
        free(w->tensors);
        w->tensors = grown;
    }
    st_writer_tensor *t = &w->tensors[w->n++];
    t->name = st_strdup(name);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->data = sg_calloc(nbytes, 1);
    if (nbytes) memcpy(t->data, data, nbytes);
    t->nbytes = nbytes;
}

void st_writer_free(st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].data);
    }
    free(w->tensors);
    free(w);
}

static cJSON *json_checked(cJSON *item) {
    SG_CHECK(item != NULL, "cJSON allocation failed");
    return item;
}

static void json_add(cJSON *obj, const char *key, cJSON *item) {
    SG_CHECK(cJSON_AddItemToObject(obj, key, json_checked(item)), "cJSON allocation failed");
}

static cJSON *json_int_array(const int64_t *v, int n) {
    cJSON *arr = json_checked(cJSON_CreateArray());
    for (int i = 0; i < n; i++)
        SG_CHECK(cJSON_AddItemToArray(arr, json_checked(cJSON_CreateNumber((double)v[i]))),
                 "cJSON allocation failed");
    return arr;
}

static int write_all(FILE *f, const void *data, size_t n) {
    return n == 0 || fwrite(data, 1, n, f) == n;
}

// Writes tensors [first, last) as one safetensors file.
static int write_shard(const st_writer *w, int first, int last, const char *path) {
    cJSON *header = json_checked(cJSON_CreateObject());
    cJSON *meta = json_checked(cJSON_CreateObject());
    json_add(meta, "format", cJSON_CreateString("pt"));
    json_add(header, "__metadata__", meta);
    int64_t offset = 0;
    for (int i = first; i < last; i++) {
        const st_writer_tensor *t = &w->tensors[i];
        cJSON *entry = json_checked(cJSON_CreateObject());
        json_add(entry, "dtype", cJSON_CreateString(st_dtype_name(t->dtype)));
        json_add(entry, "shape", json_int_array(t->shape, t->ndim));
        int64_t span[2] = {offset, offset + (int64_t)t->nbytes};
        SG_CHECK(span[1] <= (int64_t)ST_MAX_EXACT_INT, "shard too large for exact JSON offsets");
        json_add(entry, "data_offsets", json_int_array(span, 2));
        json_add(header, t->name, entry);
        offset = span[1];
    }
    char *text = cJSON_PrintUnformatted(header);
    cJSON_Delete(header);
    SG_CHECK(text != NULL, "cJSON print failed");
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    uint8_t prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (uint8_t)((uint64_t)padded >> (8 * i));

    FILE *f = fopen(path, "wb");
    if (!f) {
        free(text);
        return sg_fail(SG_EXIT_INPUT, "%s: cannot write: %s", path, strerror(errno));
    }
    int ok = write_all(f, prefix, 8) && write_all(f, text, len);
    for (size_t i = len; i < padded && ok; i++) ok = fputc(' ', f) != EOF;
    for (int i = first; i < last && ok; i++)
        ok = write_all(f, w->tensors[i].data, w->tensors[i].nbytes);
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    free(text);
    if (!ok) return sg_fail(SG_EXIT_INPUT, "%s: write failed: %s", path, strerror(err));
    return SG_OK;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return sg_fail(SG_EXIT_INPUT, "%s: cannot write: %s", path, strerror(errno));
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return sg_fail(SG_EXIT_INPUT, "%s: write failed: %s", path, strerror(errno));
    return SG_OK;
}

int st_writer_save_dir(const st_writer *w, const char *dir, int n_shards) {
    SG_CHECK(n_shards >= 1 && (n_shards == 1 || n_shards <= w->n), "%d shards for %d tensors",
             n_shards, w->n);
    char *index_path = path_join(dir, ST_INDEX_NAME);
    int status = SG_OK;
    if (n_shards == 1) {
        // A stale index from an earlier sharded save would take precedence when reading.
        if (unlink(index_path) != 0 && errno != ENOENT)
            status = sg_fail(SG_EXIT_INPUT, "%s: cannot remove stale index: %s", index_path,
                             strerror(errno));
        char *path = path_join(dir, ST_SINGLE_NAME);
        if (status == SG_OK) status = write_shard(w, 0, w->n, path);
        free(path);
        free(index_path);
        return status;
    }
    cJSON *index = json_checked(cJSON_CreateObject());
    cJSON *meta = json_checked(cJSON_CreateObject());
    cJSON *map = json_checked(cJSON_CreateObject());
    int64_t total = 0;
    for (int k = 0; k < n_shards && status == SG_OK; k++) {
        int first = (int)((int64_t)k * w->n / n_shards);
        int last = (int)((int64_t)(k + 1) * w->n / n_shards);
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, n_shards);
        for (int i = first; i < last; i++) {
            json_add(map, w->tensors[i].name, cJSON_CreateString(name));
            total += (int64_t)w->tensors[i].nbytes;
        }
        char *path = path_join(dir, name);
        status = write_shard(w, first, last, path);
        free(path);
    }
    json_add(meta, "total_size", cJSON_CreateNumber((double)total));
    json_add(index, "metadata", meta);
    json_add(index, "weight_map", map);
    if (status == SG_OK) {
        char *text = cJSON_Print(index);
        SG_CHECK(text != NULL, "cJSON print failed");
        status = write_text(index_path, text);
        free(text);
    }
    cJSON_Delete(index);
    free(index_path);
    return status;
}
