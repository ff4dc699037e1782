// common/bf16.c: IEEE half-precision decoding, used when an f16 checkpoint is converted to bf16.
#include "bf16.h"

#include <math.h>

float f16_to_f32(uint16_t h) {
    int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float value;
    if (exponent == 0)
        value = ldexpf((float)mantissa, -24); // zero and subnormals
    else if (exponent == 31)
        value = mantissa ? NAN : INFINITY;
    else
        value = ldexpf((float)(mantissa | 0x400), exponent - 25);
    return sign ? -value : value;
}
