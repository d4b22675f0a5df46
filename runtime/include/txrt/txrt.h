/*===- txrt.h - txopt runtime C API --------------------------------------===*
 *
 * SPDX-License-Identifier: Apache-2.0
 * The stable C interface of the runtime that executes compiled steps.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TXRT_TXRT_H
#define TXRT_TXRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible call returns a status; NULL means success. A non-NULL status
 * is owned by the caller and freed with txrt_status_free. */
typedef struct txrt_status_s *txrt_status_t;

typedef enum txrt_status_code_e {
  TXRT_OK = 0,
  TXRT_INVALID_ARGUMENT = 1,
  TXRT_UNAVAILABLE = 2, /* e.g. no CUDA driver or no GPU on this machine */
  TXRT_INTERNAL = 3,
  TXRT_OUT_OF_RANGE = 4,
} txrt_status_code_t;

/* Creates a status with |code| and a copy of |message|. */
txrt_status_t txrt_status_create(txrt_status_code_t code, const char *message);
/* TXRT_OK for NULL. */
txrt_status_code_t txrt_status_code(txrt_status_t status);
/* "" for NULL; valid until the status is freed. */
const char *txrt_status_message(txrt_status_t status);
void txrt_status_free(txrt_status_t status);

/* What the runtime knows about one GPU. */
typedef struct txrt_device_info_s {
  char name[256];
  int compute_capability_major;
  int compute_capability_minor;
  int multiprocessor_count;
  size_t total_memory_bytes;
} txrt_device_info_t;

/* Number of CUDA devices in |*out_count|. Returns TXRT_UNAVAILABLE, with the
 * reason, when the CUDA driver cannot be loaded or initialized. */
txrt_status_t txrt_device_count(int *out_count);

/* Facts about device |ordinal| (0-based). */
txrt_status_t txrt_device_info(int ordinal, txrt_device_info_t *out_info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TXRT_TXRT_H */
