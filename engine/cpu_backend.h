// engine/cpu_backend.h: the plain-C backend of the engine (every op of backend.h on host memory).
//
// Contract: the numerics of backend.h exactly (design.md §3), batch and path invariant by
// construction: gemm computes every output element with one dot product whose order depends only
// on K (8 fp32 lanes, lane l taking k ≡ l mod 8 in ascending k, zero-padded to a multiple of 8,
// combined as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))); attention reduces keys one by one in ascending
// position. The CPU backend is single-threaded; its ops are not safe to call from two threads.
#ifndef SG_ENGINE_CPU_BACKEND_H
#define SG_ENGINE_CPU_BACKEND_H

#include "backend.h"

// A new CPU backend; free it with be->destroy(be).
sg_backend *cpu_backend_create(void);

#endif
