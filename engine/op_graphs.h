// engine/op_graphs.h: a backend wrapper that replays the engine's op sequences as cached graphs
// (CUDA graphs on the CUDA backend), so a decode step costs a few graph launches instead of
// hundreds of kernel launches.
//
// Contract. The wrapped backend has the inner backend's ops and meanings (backend.h) and changes
// no bit of any result (design.md §3: results do not depend on whether a graph or an eager launch
// ran an op). Its op entries (every model, selection and data-movement op, and copy) RECORD the
// call (op id and arguments by value; the be_paging struct copied) into a log instead of running
// it; the log is flushed (run, in order) before every call that needs the host or memory (upload,
// download, alloc, free), by op_graphs_flush, and at destroy. Flushing a log:
//   - fewer than OP_GRAPHS_MIN_OPS ops, or an inner backend without capture hooks: run eagerly;
//   - otherwise looked up in a cache of recently seen logs (keyed by the exact log bytes; a hash
//     narrows the search, the full bytes decide): the first time a log is seen it runs eagerly
//     and is remembered, the second time it is captured into a graph (inner capture hooks) while
//     it runs and the graph is launched, later times the cached graph is launched.
// This is correct because every input an op reads at execution time is device memory (backend.h)
// and every host argument is in the log: a replay reads the current device contents, and a log
// that differs in any host argument is a different log. The inner backend must keep every device
// address a graph captured valid while the graph lives (the CUDA backend's scratch does).
// The cache holds OP_GRAPHS_CACHE logs; to make room it drops the least recently used log seen
// only once, else the least recently used graph (destroying it).
// Not thread-safe (like the backends). destroy flushes, destroys the graphs and frees the wrapper,
// never the inner backend, which must outlive it.
#ifndef SG_ENGINE_OP_GRAPHS_H
#define SG_ENGINE_OP_GRAPHS_H

#include <stdint.h>

#include "backend.h"

#define OP_GRAPHS_CACHE 64
#define OP_GRAPHS_MIN_OPS 4

typedef struct {
    int64_t ops;           // ops recorded
    int64_t flushes;       // non-empty logs run
    int64_t eager_flushes; // logs run op by op (short, first seen, or no capture hooks)
    int64_t captures;      // graphs captured and instantiated
    int64_t launches;      // graph launches (a capture's own launch included)
    int64_t graph_ops;     // ops run inside graph launches
    int64_t evictions;     // cached graphs destroyed to make room
} op_graphs_stats;

// A wrapper over `inner` (free it with (*out)->destroy(*out)). Its name is the inner backend's;
// its capture hooks are NULL. Without capture hooks on `inner` it only defers ops (every flush
// eager). Returns SG_OK.
int op_graphs_wrap(const sg_backend *inner, sg_backend **out);
// Runs the ops recorded so far (they may still be in flight on the device afterwards, as any op).
void op_graphs_flush(const sg_backend *wrapped);
void op_graphs_stats_of(const sg_backend *wrapped, op_graphs_stats *out);
const sg_backend *op_graphs_inner(const sg_backend *wrapped);

// The recorded log as bytes, for a backend that stands in for a capturing device (tests build a
// fake graph from it): op_graphs_take moves the ops recorded since the last flush out WITHOUT
// running them (*log: the caller frees it; NULL when none) and returns their byte count;
// op_graphs_put appends such bytes to the log, to run at the next flush, as a graph launch on a
// stream runs after the work before it.
size_t op_graphs_take(const sg_backend *wrapped, void **log);
void op_graphs_put(const sg_backend *wrapped, const void *log, size_t bytes);

#endif
