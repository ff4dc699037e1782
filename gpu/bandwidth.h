// gpu/bandwidth.h: the memory roofline of the device, measured (bench/): a read-only kernel over a
// large buffer with the L2 flushed before every timed pass.
//
// Contract: cuda_read_bandwidth allocates `bytes` (>= 8e9 for a roofline figure) of device memory
// filled with a non-zero pattern, and an L2-flush buffer of twice the L2; each of `reps` passes
// first overwrites the flush buffer (evicting the read buffer from L2), then times, with CUDA
// events, one kernel that reads every byte once in 16-byte loads; *gbps = bytes / median pass time
// (1e9 bytes per second). The kernel's XOR of everything it read goes to a device word the host
// reads back, so no load can be dropped. SG_EXIT_NO_GPU with a message when there is no usable
// device or the buffers cannot be had. Frees everything it made.
#ifndef SG_GPU_BANDWIDTH_H
#define SG_GPU_BANDWIDTH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int cuda_read_bandwidth(size_t bytes, int reps, double *gbps);

#ifdef __cplusplus
}
#endif

#endif
