/*
 * load.h — reading one weight for a device upload: looked up by its
 * expected name, shape-checked, converted to float32 and with LoRAs fused.
 *
 * This is the loading side of the expected tables (expected.h): nn walks a
 * component's table and calls model_read_weight_f32 for each tensor it
 * uses, into a staging buffer it owns.
 */
#ifndef LQ_MODEL_LOAD_H
#define LQ_MODEL_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/lora.h"
#include "model/safetensors.h"

/*
 * Reads tensor `name` of set `s` into dst (product(shape) floats), after
 * checking it has exactly (ndim, shape) and a float dtype; then, for a 2-D
 * weight, fuses every LoRA in loras[0..nloras) that changes it with
 * scales[i] (lora_fuse_weight).  loras may be NULL when nloras is 0.
 * Errors: LQ-MODEL-010 (absent), -012 (shape), -013 (dtype), naming the set
 * file and the tensor; dst is then untouched.  *nfused (may be NULL) gets
 * the number of LoRA pairs applied.
 */
enum lq_status model_read_weight_f32(const struct st_set *s, const char *name, int ndim,
    const int64_t *shape, struct lora *const *loras, const double *scales, size_t nloras,
    float *dst, int *nfused, struct lq_error *err);

#endif
