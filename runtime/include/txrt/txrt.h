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

/*===----------------------------------------------------------------------===*
 * Sessions: a compiled step (step.txa) loaded onto one GPU.
 *===----------------------------------------------------------------------===*/

typedef struct txrt_session_s txrt_session_t;

/* Element types; the values equal artifact.fbs's DType. */
typedef enum txrt_dtype_e {
  TXRT_F32 = 0, TXRT_F16 = 1, TXRT_BF16 = 2, TXRT_F8E4M3FN = 3,
  TXRT_F8E5M2 = 4, TXRT_F64 = 5, TXRT_I64 = 6, TXRT_I32 = 7, TXRT_I8 = 8,
  TXRT_I1 = 9, /* one byte per element */
} txrt_dtype_t;

/* How an argument gets its first value; the values equal artifact.fbs's
 * InitKind. TXRT_INIT_BATCH arguments are written by the caller. */
typedef enum txrt_init_kind_e {
  TXRT_INIT_ZEROS = 0, TXRT_INIT_SPLAT = 1, TXRT_INIT_INLINE = 2,
  TXRT_INIT_EXTERNAL = 3, TXRT_INIT_BATCH = 4,
} txrt_init_kind_t;

typedef struct txrt_session_options_s {
  int device;              /* CUDA device ordinal; 0 by default */
  const char *weights_dir; /* folder for relative EXTERNAL paths; NULL: the
                              artifact's folder */
  int disable_graphs;      /* nonzero: never replay steps from a CUDA graph */
  int sync_each_command;   /* debugging: synchronize after every command */
  int tune_gemms;          /* nonzero: time cuBLASLt's candidate algorithms
                              for each GEMM at load, keep the fastest */
} txrt_session_options_t;

/* An argument or result of the step. Strings and |shape| stay valid while
 * the session lives. */
typedef struct txrt_tensor_info_s {
  const char *name;
  const char *role;        /* arguments: "param", "data", ...; results: "" */
  txrt_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  size_t size_bytes;       /* elements x dtype size */
  txrt_init_kind_t init;   /* arguments only */
  int64_t index_bound;     /* BATCH integers: values lie in [0, bound); 0: unknown */
  int64_t next;            /* results: the argument this becomes, or -1 */
} txrt_tensor_info_t;

/* Fills |options| with the defaults (device 0, graphs on, no GEMM tuning). */
void txrt_session_options_init(txrt_session_options_t *options);

/* Loads the artifact file at |path| onto the device named by |options|
 * (NULL: defaults). The caller releases |*out_session| with
 * txrt_session_release. TXRT_UNAVAILABLE when the machine has no usable
 * CUDA GPU; TXRT_INVALID_ARGUMENT for a bad artifact. */
txrt_status_t txrt_session_create_from_file(const txrt_session_options_t *options,
                                            const char *path,
                                            txrt_session_t **out_session);
/* As above, from |size| bytes at |data|; relative EXTERNAL paths resolve
 * against |base_dir| (NULL: the current folder). */
txrt_status_t txrt_session_create(const txrt_session_options_t *options,
                                  const void *data, size_t size,
                                  const char *base_dir,
                                  txrt_session_t **out_session);
void txrt_session_retain(txrt_session_t *session);
void txrt_session_release(txrt_session_t *session);

/* The device the session runs on. */
txrt_status_t txrt_session_device_info(txrt_session_t *session,
                                       txrt_device_info_t *out_info);
/* tx.train_step's recipe as JSON ("" if none). */
const char *txrt_session_recipe(txrt_session_t *session);

size_t txrt_session_argument_count(txrt_session_t *session);
size_t txrt_session_result_count(txrt_session_t *session);
txrt_status_t txrt_session_argument_info(txrt_session_t *session, size_t index,
                                         txrt_tensor_info_t *out_info);
txrt_status_t txrt_session_result_info(txrt_session_t *session, size_t index,
                                       txrt_tensor_info_t *out_info);
/* Index of the argument / result named |name|; TXRT_OUT_OF_RANGE if none. */
txrt_status_t txrt_session_find_argument(txrt_session_t *session,
                                         const char *name, size_t *out_index);
txrt_status_t txrt_session_find_result(txrt_session_t *session,
                                       const char *name, size_t *out_index);

/* Copies |size| bytes (exactly the argument's size) into argument |index|,
 * e.g. the batch before a step. */
txrt_status_t txrt_session_write_argument(txrt_session_t *session, size_t index,
                                          const void *data, size_t size);
/* Copies argument / result |index| (|size| = its size) to host |data|. */
txrt_status_t txrt_session_read_argument(txrt_session_t *session, size_t index,
                                         void *data, size_t size);
txrt_status_t txrt_session_read_result(txrt_session_t *session, size_t index,
                                       void *data, size_t size);
/* Runs one training step; state arguments are updated in place. The device
 * time of the step goes to |*out_ms| unless it is NULL. */
txrt_status_t txrt_session_run_step(txrt_session_t *session, float *out_ms);
/* Gradient accumulation (an artifact compiled with --grad-accum N): runs
 * the micro-step once, adding the gradients of the batch now in the
 * arguments into the accumulators. Call it for micro-batches 1..N-1 (each
 * with its own batch and rng key written first), then run_step for
 * micro-batch N. txrt_session_grad_accum gives N (1 without accumulation,
 * where run_micro_step is an error). */
txrt_status_t txrt_session_run_micro_step(txrt_session_t *session, float *out_ms);
txrt_status_t txrt_session_grad_accum(txrt_session_t *session,
                                      uint32_t *out_grad_accum);
/* Validation (an artifact compiled with --eval): the loss of the batch now
 * in the arguments under the current parameters, forward only, into
 * |*out_loss|; no argument changes. An error for an artifact without it. */
txrt_status_t txrt_session_run_eval(txrt_session_t *session, double *out_loss,
                                    float *out_ms);
/* The most device memory the session has had in use, in bytes. */
txrt_status_t txrt_session_peak_memory(txrt_session_t *session,
                                       uint64_t *out_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TXRT_TXRT_H */
