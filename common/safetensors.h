// common/safetensors.h: memory-mapped safetensors checkpoints, single file or sharded
// (model.safetensors.index.json), with dtypes BF16, F16 and F32.
//
// Contract: the header is parsed with cJSON and every entry validated before any tensor is used:
// known dtype, shape and byte size agree, offsets inside the data section, no two tensors overlap,
// header length inside the file. Every index entry must name an existing shard holding the tensor.
// Failures return SG_EXIT_INPUT with a message naming the file and the tensor. Tensor data is never
// copied unless it must be converted to bf16 (F16, F32, or BF16 data at an odd address), in which
// case the tensor owns the copy until st_close. Tensors are kept sorted by name (st_find is a
// binary search). "__metadata__" is allowed and ignored. A sharded index must list every tensor of
// every shard exactly once, in the shard that holds it; shard names are plain file names in the
// folder. Headers longer than ST_MAX_HEADER bytes are refused. Little-endian hosts only.
#ifndef SG_SAFETENSORS_H
#define SG_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "bf16.h"

#define ST_MAX_DIMS 4
#define ST_MAX_HEADER (100u << 20) // bytes, as in the reference implementation

typedef enum { ST_BF16, ST_F16, ST_F32 } st_dtype;

typedef struct {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const uint8_t *data; // inside the mapping of its file
    size_t nbytes;
    int file;        // index into st_archive.files
    bf16 *converted; // owned bf16 copy made by st_get_bf16 when needed, else NULL
} st_tensor;

typedef struct {
    char *path;
    const uint8_t *map;
    size_t size;
    int is_mapped; // 1: munmap on close; 0: borrowed buffer (st_parse_buffer)
} st_file;

typedef struct {
    char *source; // the folder (st_open_dir), file (st_open_file) or name (st_parse_buffer)
    st_file *files;
    int n_files;
    st_tensor *tensors; // sorted by name
    int n_tensors;
} st_archive;

// A checkpoint folder: model.safetensors.index.json when present, else model.safetensors.
int st_open_dir(const char *dir, st_archive *out);
// One safetensors file.
int st_open_file(const char *path, st_archive *out);
// A whole safetensors file already in memory (borrowed; must outlive the archive). For the fuzzer.
int st_parse_buffer(const uint8_t *data, size_t size, const char *name, st_archive *out);
// The shard index (model.safetensors.index.json) in memory: checks it (a JSON object with a
// non-empty "weight_map" object of tensor name -> shard file name) and lists the distinct shard
// file names in order of first appearance. The caller frees each name and the array with free().
int st_parse_index(const char *json, size_t len, const char *name, char ***shards, int *n_shards);
// Unmaps and frees everything; leaves the archive zeroed. Safe on a zeroed archive.
void st_close(st_archive *archive);

const st_tensor *st_find(const st_archive *archive, const char *name);
// The tensor `name` as bf16 with exactly the given shape (converted and owned by the archive when
// stored as F16 or F32). Missing tensor or wrong shape: SG_EXIT_INPUT naming the tensor.
int st_get_bf16(st_archive *archive, const char *name, int ndim, const int64_t *shape,
                const bf16 **out);
// The tensor `name` converted to fp32 into out[numel] (exact for every dtype), same checks. For
// small tensors kept in fp32 (biases).
int st_get_f32(const st_archive *archive, const char *name, int ndim, const int64_t *shape,
               float *out);
size_t st_dtype_size(st_dtype dtype);
const char *st_dtype_name(st_dtype dtype);

// Writer (used by the fixture generator): tensors are written in the order added, the header with
// cJSON, padded with spaces to a multiple of 8 bytes; the same calls give byte-identical files.
typedef struct st_writer st_writer;
st_writer *st_writer_new(void);
// Copies data ([shape] elements of dtype).
void st_writer_add(st_writer *w, const char *name, st_dtype dtype, int ndim, const int64_t *shape,
                   const void *data);
// n_shards == 1: dir/model.safetensors; n_shards > 1: dir/model-0000k-of-0000n.safetensors plus
// dir/model.safetensors.index.json, tensors split in order. Returns SG_EXIT_INPUT on I/O errors.
int st_writer_save_dir(const st_writer *w, const char *dir, int n_shards);
void st_writer_free(st_writer *w);

#endif
