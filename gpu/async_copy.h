// gpu/async_copy.h: asynchronous global -> shared memory copies (cp.async, sm_80 and later). A
// thread issues copies that land in shared memory without passing through its registers, so all
// of them can be in flight at once; it commits them as a group and waits until at most PENDING of
// its newest groups are still in flight. Addresses are aligned to the copy's size at both ends.
// What landed is visible to the issuing thread after the wait, to the others after a barrier.
#ifndef SG_GPU_ASYNC_COPY_H
#define SG_GPU_ASYNC_COPY_H

// 16 bytes at dst: the first `bytes` (0 or 16) from src, the rest zero; not kept in L1.
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(bytes));
}
// As cp_async16 for read-once data (weights): a miss also fetches the 256 bytes around src into
// L2 (the row's next pieces). Ordered after the thread's earlier shared-memory reads (the copy may
// overwrite what they read).
__device__ __forceinline__ void cp_async16_stream(void *dst, const void *src, int bytes) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
                 "r"(bytes)
                 : "memory");
}
// 4 bytes at dst from src.
__device__ __forceinline__ void cp_async4(void *dst, const void *src) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}

#endif
