/*
 * half.h — float32 <-> IEEE binary16 (F16) and bfloat16 (BF16) bit
 * conversions, round to nearest even.  Pure functions, no state.
 */
#ifndef LQ_CORE_HALF_H
#define LQ_CORE_HALF_H

#include <stdint.h>

uint16_t half_f32_to_f16(float f);
float half_f16_to_f32(uint16_t h);
uint16_t half_f32_to_bf16(float f);
float half_bf16_to_f32(uint16_t h);

#endif
