/* gossip-rdzv's C API: for launchers written in other languages (and the Python package,
 * which loads it with ctypes). Everything is reached through opaque handles; every call that
 * can fail returns a gossip_rdzv_status, and gossip_rdzv_last_error() then holds a sentence
 * naming the cause and the fix (per thread, valid until the next failing call).
 *
 *   gossip_rdzv_config* cfg = gossip_rdzv_config_new();
 *   gossip_rdzv_config_set(cfg, "seeds", "node0:29400");
 *   gossip_rdzv_config_set(cfg, "nnodes", "4");
 *   gossip_rdzv_node* node = NULL;
 *   if (gossip_rdzv_node_new(cfg, &node) || gossip_rdzv_node_start(node)) goto fail;
 *   gossip_rdzv_assignment* a = NULL;
 *   if (gossip_rdzv_node_wait(node, &a)) goto fail;       // blocks until agreed
 *   printf("world size %u\n", gossip_rdzv_assignment_world_size(a));
 *   ...
 *   fail: fprintf(stderr, "%s\n", gossip_rdzv_last_error());
 *
 * Strings returned as `const char*` belong to the handle they came from and live as long as
 * it does; buffers returned through `void**` / `char**` are the caller's, freed with
 * gossip_rdzv_free(). Handles may be used from any thread; one store handle serialises its
 * calls. Passing NULL where a handle is required returns GOSSIP_RDZV_E_USAGE.
 */
#ifndef GOSSIP_RDZV_H
#define GOSSIP_RDZV_H

#include <stddef.h>
#include <stdint.h>

#include "gossip_rdzv/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values 1-70 are the gossip-rdzv command's exit codes (docs/troubleshooting.md);
 * store failures start at 101. They are the C++ API's statuses, number for number
 * (gossip_rdzv::Failure::status(), include/gossip_rdzv/error.hpp). */
typedef enum gossip_rdzv_status {
  GOSSIP_RDZV_OK = 0,
  GOSSIP_RDZV_E_USAGE = 2,            /* bad argument, config value or call order */
  GOSSIP_RDZV_E_LISTEN_FAILED = 3,    /* cannot bind the gossip port */
  GOSSIP_RDZV_E_SEED_UNREACHABLE = 4, /* no seed answered before the join timeout */
  GOSSIP_RDZV_E_JOIN_TIMEOUT = 5,     /* joined, but no agreement before the join timeout */
  GOSSIP_RDZV_E_RUN_ID_MISMATCH = 6,
  GOSSIP_RDZV_E_VERSION_MISMATCH = 7,
  GOSSIP_RDZV_E_RANK_CONFLICT = 8,
  GOSSIP_RDZV_E_NOT_ADMITTED = 9,
  GOSSIP_RDZV_E_IO = 10,
  GOSSIP_RDZV_E_SEED_UNRESOLVED = 11,
  GOSSIP_RDZV_E_JOB_OVER = 12,       /* an elastic job of this run id ended (finished or failed) */
  GOSSIP_RDZV_E_AUTH_FAILED = 13,    /* the seeds hold another job key, or this node has none */
  GOSSIP_RDZV_E_INTERNAL = 70,       /* a bug: please report it */
  GOSSIP_RDZV_E_STORE_TIMEOUT = 101, /* a key was not set in time (message names it) */
  GOSSIP_RDZV_E_STORE_UNAVAILABLE = 102, /* the agent or the key's home did not answer */
  GOSSIP_RDZV_E_STORE_BAD_REQUEST = 103, /* e.g. add on a value that is not a number */
  GOSSIP_RDZV_E_STORE_NOT_READY = 104,   /* the agent had no agreed view in time */
  GOSSIP_RDZV_E_STORE_REFUSED = 105,     /* another run id or store version */
  GOSSIP_RDZV_E_STORE_TOO_LARGE = 106    /* over the 4 MiB message limit */
} gossip_rdzv_status;

typedef struct gossip_rdzv_config gossip_rdzv_config;
typedef struct gossip_rdzv_node gossip_rdzv_node;
typedef struct gossip_rdzv_assignment gossip_rdzv_assignment;
typedef struct gossip_rdzv_store gossip_rdzv_store;

/* The message of the last failing call on this thread ("" if none). */
GOSSIP_RDZV_API const char* gossip_rdzv_last_error(void);
/* Stable short name of a status ("store_timeout"); "unknown" for a number that names none;
 * never NULL. It reads the library's one table of names (gossip_rdzv::status_name), as the
 * Python package does through this function. */
GOSSIP_RDZV_API const char* gossip_rdzv_status_name(int status);
/* Frees a buffer this API returned through void** or char**. NULL is fine. */
GOSSIP_RDZV_API void gossip_rdzv_free(void* buffer);

/* ---- configuration ---------------------------------------------------------------- */

/* A config with the documented defaults (include/gossip_rdzv/config.hpp). NULL only when out
 * of memory. */
GOSSIP_RDZV_API gossip_rdzv_config* gossip_rdzv_config_new(void);
GOSSIP_RDZV_API void gossip_rdzv_config_free(gossip_rdzv_config* config);
/* Sets one field from text, as the command line spells it:
 *   run_id          job42
 *   seeds           "node0:29400,node1:29400"      (comma-separated)
 *   listen          "0.0.0.0:29400", ":29400" or ":0" (any free port)
 *   advertise       10.0.0.5
 *   nnodes          "4" or "MIN:MAX"
 *   nproc_per_node  8
 *   node_rank       3  (-1: none)
 *   master_port     29500 (0: pick a free one)
 *   join_timeout    "10m", "30s", "500ms"
 *   last_call       "30s"
 *   timing          lan | local | wan
 *   hostname        trainer-07
 *   elastic         1 or 0 (also true/false): an elastic job (the command's --max-restarts > 0);
 *                   after a round commits the nodes agree on the next one when a member dies
 *                   or restarts, a node arrives below MAX, or a node reports its workers
 *                   failed (gossip_rdzv_node_report_workers_failed). Default 0: agree once.
 *   key_file        /etc/gossip-rdzv/job.key: the job's key file (docs/security.md; the
 *                   command's --key-file): messages are authenticated and encrypted. Read
 *                   here, so a file that cannot be read or holds no valid key is E_USAGE
 *                   naming it; "" clears it (the default: no key, messages in clear).
 * Returns GOSSIP_RDZV_E_USAGE naming the field for an unknown name or a bad value. Checks
 * that involve several fields happen in gossip_rdzv_node_new. */
GOSSIP_RDZV_API int gossip_rdzv_config_set(gossip_rdzv_config* config, const char* name,
                                           const char* value);

/* ---- node ------------------------------------------------------------------------- */

/* Checks the config (E_USAGE naming the bad field); `config` may be freed afterwards. */
GOSSIP_RDZV_API int gossip_rdzv_node_new(const gossip_rdzv_config* config, gossip_rdzv_node** out);
/* Binds and starts joining in a background thread. E_LISTEN_FAILED, E_SEED_UNRESOLVED. */
GOSSIP_RDZV_API int gossip_rdzv_node_start(gossip_rdzv_node* node);
/* Blocks until this node's assignment is committed (at most the join timeout).
 * E_SEED_UNREACHABLE, E_JOIN_TIMEOUT, E_RUN_ID_MISMATCH, E_VERSION_MISMATCH, E_RANK_CONFLICT,
 * E_NOT_ADMITTED. Free *out with gossip_rdzv_assignment_free. */
GOSSIP_RDZV_API int gossip_rdzv_node_wait(gossip_rdzv_node* node, gossip_rdzv_assignment** out);
/* "host:port" peers (and store clients) use for this node; "" before start. */
GOSSIP_RDZV_API const char* gossip_rdzv_node_endpoint(gossip_rdzv_node* node);
/* 1 when nodes that start late ask this node first (the seed list names it, or it has none),
 * else 0; known after start (0 for NULL). After an elastic job ended, such a node tells them
 * the job is over (E_JOB_OVER there) for as long as it is not freed: keep it a while to have
 * them told (C++ Node::listed_as_seed; the CLI's --stay-after-job). */
GOSSIP_RDZV_API int gossip_rdzv_node_listed_as_seed(gossip_rdzv_node* node);
/* After commit: keep answering peers until every member knows the outcome (bounded). */
GOSSIP_RDZV_API void gossip_rdzv_node_finish(gossip_rdzv_node* node);
/* ---- elastic rounds (config "elastic" = 1; docs/protocol.md, "Rounds") ------------------
 * One assignment per round: wait for the first with gossip_rdzv_node_wait, run the workers,
 * and poll gossip_rdzv_node_round_over while they run. When the round is over, stop them and
 * wait for the next with gossip_rdzv_node_wait_next. When they fail, report it (the nodes
 * agree on the next round) and wait for the next; when they finish, report that and wait for
 * the job to finish:
 *
 *   gossip_rdzv_assignment* a = NULL;
 *   if (gossip_rdzv_node_wait(node, &a)) goto fail;
 *   for (;;) {
 *     start_workers(a);                  // RANK etc. from gossip_rdzv_assignment_env
 *     int over = 0, status = -1;        // poll_workers: -1 while they run, waiting a moment
 *     while (!over && (status = poll_workers()) < 0) gossip_rdzv_node_round_over(node, a, &over);
 *     if (over) stop_workers();
 *     else if (status != 0) {            // theirs, or a member's agent that went away?
 *       gossip_rdzv_node_failure_explained(node, a, &over);
 *       if (!over) gossip_rdzv_node_report_workers_failed(node);  // counts as a restart
 *     } else break;                      // finished
 *     gossip_rdzv_assignment* next = NULL;
 *     if (gossip_rdzv_node_wait_next(node, a, &next)) goto fail;
 *     gossip_rdzv_assignment_free(a);
 *     a = next;
 *   }
 *   gossip_rdzv_node_report_workers_finished(node);
 *   int finished = 0;
 *   gossip_rdzv_node_wait_job_finished(node, 600000, &finished);
 *
 * A launcher that counts restarts reports the last failure with
 * gossip_rdzv_node_report_job_failed instead of _report_workers_failed: every node's
 * gossip_rdzv_node_wait_next then fails with E_JOB_OVER, and gossip_rdzv_node_job_failure
 * says which node, rank and exit status ended the job. Only a failure that
 * gossip_rdzv_node_failure_explained did not explain counts: that call also lets a node that
 * was frozen learn that the job moved on without it before it could end the job.
 *
 * The store (gossip_rdzv_store_from_node) serves the current round: keys set in an earlier
 * round are gone once this node commits the next one (docs/store.md, "Rounds").
 * Every call below returns E_USAGE for a NULL argument or a node whose config did not set
 * "elastic" (a job that agrees once has no rounds). */

/* *over = 1 when the job moved past `current`'s round (a member died or restarted, a node
 * arrived, a node's workers failed): this node's workers of that round must stop. Does not
 * block. */
GOSSIP_RDZV_API int gossip_rdzv_node_round_over(gossip_rdzv_node* node,
                                                const gossip_rdzv_assignment* current, int* over);
/* This node's workers of `current` failed while the round is not over: *explained = 1 when
 * another member's departure explains it (its agent is gone and the membership declared its
 * death), so the failure should use no restart; 0 when the failure is this node's own. Blocks:
 * about one gossip interval when every member still listens, up to the failure detector's
 * bound when one refuses connections (C++ Node::failure_explained_by_departure). */
GOSSIP_RDZV_API int gossip_rdzv_node_failure_explained(gossip_rdzv_node* node,
                                                       const gossip_rdzv_assignment* current,
                                                       int* explained);
/* Why the latest round began, for people ("round 1: node 10.0.0.3:29400 was declared dead;
 * ..."), into *out (free with gossip_rdzv_free); *out = NULL while the job is in its first
 * round. */
GOSSIP_RDZV_API int gossip_rdzv_node_round_change(gossip_rdzv_node* node, char** out);
/* Blocks until the assignment of a round after `previous` is committed, at most the join
 * timeout; fails as gossip_rdzv_node_wait does (E_NOT_ADMITTED: the round closed without this
 * node). Free *out with gossip_rdzv_assignment_free. */
GOSSIP_RDZV_API int gossip_rdzv_node_wait_next(gossip_rdzv_node* node,
                                               const gossip_rdzv_assignment* previous,
                                               gossip_rdzv_assignment** out);
/* This node's workers failed: the nodes agree on the next round. E_USAGE when this node has
 * no committed round yet (call gossip_rdzv_node_wait first) or has reported its workers
 * finished. */
GOSSIP_RDZV_API int gossip_rdzv_node_report_workers_failed(gossip_rdzv_node* node);
/* This node's workers finished: it leaves the job and starts no more rounds; the others do
 * not mistake its exit for a crash. E_USAGE before gossip_rdzv_node_start. */
GOSSIP_RDZV_API int gossip_rdzv_node_report_workers_finished(gossip_rdzv_node* node);
/* This node's workers failed and it has no restart left (its --max-restarts): the job ends
 * on every node. Each other member's gossip_rdzv_node_round_over turns 1 and its
 * gossip_rdzv_node_wait_next fails with E_JOB_OVER; gossip_rdzv_node_job_failure there names
 * this node, `rank` (the global rank of the worker that failed first) and `status` (its exit
 * status, or 128+N for signal N; clamped to 0-255). A node started later is refused with
 * E_JOB_OVER. Call gossip_rdzv_node_wait_job_finished next to let the news spread. E_USAGE
 * before gossip_rdzv_node_start or after gossip_rdzv_node_report_workers_finished. */
GOSSIP_RDZV_API int gossip_rdzv_node_report_job_failed(gossip_rdzv_node* node, uint32_t rank,
                                                       int status);
/* Whether another node ended the job with gossip_rdzv_node_report_job_failed: *failed = 1
 * and *rank, *status and *message (one line naming the node, rank and status; free with
 * gossip_rdzv_free) are set; otherwise *failed = 0 and *message = NULL. Exit with *status
 * to end this agent as the failing one does. Does not block. */
GOSSIP_RDZV_API int gossip_rdzv_node_job_failure(gossip_rdzv_node* node, int* failed,
                                                 uint32_t* rank, int* status, char** message);
/* After gossip_rdzv_node_report_workers_finished or _report_job_failed: waits until every
 * other member of the last round left too or is dead (then this node may exit), at most
 * `timeout_ms` (0: do not wait); *finished = 1 when so, 0 when the time ran out. E_USAGE
 * when neither was reported. */
GOSSIP_RDZV_API int gossip_rdzv_node_wait_job_finished(gossip_rdzv_node* node, int64_t timeout_ms,
                                                       int* finished);

/* Stops the background thread and closes sockets; the store this node served is gone. */
GOSSIP_RDZV_API void gossip_rdzv_node_stop(gossip_rdzv_node* node);
/* Stops if needed and frees. NULL is fine. */
GOSSIP_RDZV_API void gossip_rdzv_node_free(gossip_rdzv_node* node);

/* ---- assignment (read-only) ------------------------------------------------------- */

GOSSIP_RDZV_API const char* gossip_rdzv_assignment_run_id(const gossip_rdzv_assignment* a);
GOSSIP_RDZV_API uint32_t gossip_rdzv_assignment_round(const gossip_rdzv_assignment* a);
GOSSIP_RDZV_API uint32_t gossip_rdzv_assignment_world_size(const gossip_rdzv_assignment* a);
GOSSIP_RDZV_API const char* gossip_rdzv_assignment_master_addr(const gossip_rdzv_assignment* a);
GOSSIP_RDZV_API uint16_t gossip_rdzv_assignment_master_port(const gossip_rdzv_assignment* a);
GOSSIP_RDZV_API uint32_t gossip_rdzv_assignment_nnodes(const gossip_rdzv_assignment* a);
/* The node rank of the node that computed this assignment. */
GOSSIP_RDZV_API uint32_t gossip_rdzv_assignment_my_node_rank(const gossip_rdzv_assignment* a);
/* Fields of node `node_rank` (< nnodes; otherwise 0 or ""). */
GOSSIP_RDZV_API uint32_t gossip_rdzv_assignment_node_rank_offset(const gossip_rdzv_assignment* a,
                                                                 uint32_t node_rank);
GOSSIP_RDZV_API uint32_t gossip_rdzv_assignment_node_nproc(const gossip_rdzv_assignment* a,
                                                           uint32_t node_rank);
GOSSIP_RDZV_API const char* gossip_rdzv_assignment_node_host(const gossip_rdzv_assignment* a,
                                                             uint32_t node_rank);
GOSSIP_RDZV_API const char* gossip_rdzv_assignment_node_endpoint(const gossip_rdzv_assignment* a,
                                                                 uint32_t node_rank);
GOSSIP_RDZV_API const char* gossip_rdzv_assignment_node_hostname(const gossip_rdzv_assignment* a,
                                                                 uint32_t node_rank);
/* The torchrun variables of local process `local_rank` of this node, as "KEY=VALUE\n"
 * lines (docs/env-vars.md), into *out (free with gossip_rdzv_free). E_USAGE when
 * local_rank >= this node's nproc. */
GOSSIP_RDZV_API int gossip_rdzv_assignment_env(const gossip_rdzv_assignment* a, uint32_t local_rank,
                                               char** out);
GOSSIP_RDZV_API void gossip_rdzv_assignment_free(gossip_rdzv_assignment* a);

/* ---- store (docs/store.md) ----------------------------------------------------------
 * Timeouts are in milliseconds: 0 waits for ever, a negative value means the store's
 * default timeout (set at creation). Whatever the timeout, a waiting call returns
 * E_STORE_UNAVAILABLE (naming the key and the member) once the key's home is declared dead
 * by the membership, or once this client's agent stops answering its checks (every 5 s). */

/* A client of the agent at `agent` ("host:port"); `run_id` may be NULL or "" (any run). */
GOSSIP_RDZV_API int gossip_rdzv_store_new(const char* agent, const char* run_id, int64_t timeout_ms,
                                          gossip_rdzv_store** out);
/* From GOSSIP_RDZV_STORE (and TORCHELASTIC_RUN_ID, GOSSIP_RDZV_STORE_TIMEOUT,
 * GOSSIP_RDZV_KEY_FILE), as a worker of `gossip-rdzv join -- CMD` has them. E_USAGE naming a
 * missing variable or a key file that cannot be read. */
GOSSIP_RDZV_API int gossip_rdzv_store_from_env(gossip_rdzv_store** out);
/* The store served by `node`, which must have committed (after gossip_rdzv_node_wait); it
 * uses the node's key file. */
GOSSIP_RDZV_API int gossip_rdzv_store_from_node(gossip_rdzv_node* node, int64_t timeout_ms,
                                                gossip_rdzv_store** out);
GOSSIP_RDZV_API void gossip_rdzv_store_free(gossip_rdzv_store* store);

GOSSIP_RDZV_API int gossip_rdzv_store_set(gossip_rdzv_store* store, const char* key,
                                          const void* value, size_t length);
/* Waits until `key` is set; *value (free with gossip_rdzv_free; never NULL on success, even
 * for an empty value) and *length receive it. E_STORE_TIMEOUT names the key and its home. */
GOSSIP_RDZV_API int gossip_rdzv_store_get(gossip_rdzv_store* store, const char* key,
                                          int64_t timeout_ms, void** value, size_t* length);
/* Adds `amount` to the decimal counter at `key` (missing: 0); *result gets the new value. */
GOSSIP_RDZV_API int gossip_rdzv_store_add(gossip_rdzv_store* store, const char* key, int64_t amount,
                                          int64_t* result);
/* *all_set = 1 when every key exists, else 0; does not wait. */
GOSSIP_RDZV_API int gossip_rdzv_store_check(gossip_rdzv_store* store, const char* const* keys,
                                            size_t count, int* all_set);
/* Waits until every key exists. */
GOSSIP_RDZV_API int gossip_rdzv_store_wait(gossip_rdzv_store* store, const char* const* keys,
                                           size_t count, int64_t timeout_ms);
/* torch's compare_set; *current (free with gossip_rdzv_free) gets the value stored after. */
GOSSIP_RDZV_API int gossip_rdzv_store_compare_set(gossip_rdzv_store* store, const char* key,
                                                  const void* expected, size_t expected_length,
                                                  const void* desired, size_t desired_length,
                                                  void** current, size_t* current_length);
/* *deleted = 1 when the key existed. */
GOSSIP_RDZV_API int gossip_rdzv_store_delete_key(gossip_rdzv_store* store, const char* key,
                                                 int* deleted);
GOSSIP_RDZV_API int gossip_rdzv_store_num_keys(gossip_rdzv_store* store, int64_t* count);
GOSSIP_RDZV_API int gossip_rdzv_store_set_timeout(gossip_rdzv_store* store, int64_t timeout_ms);
/* The job's key file for this client's requests (docs/security.md), the one its agent was
 * started with; "" for none. Read now and again when it changes (key rotation). E_USAGE
 * naming a file that cannot be read or holds no valid key; the previous key stays then. */
GOSSIP_RDZV_API int gossip_rdzv_store_set_key_file(gossip_rdzv_store* store, const char* path);
/* Every member's load since its agent started: *text (free with gossip_rdzv_free) gets one
 * line per member, sorted by member, of five fields separated by single spaces:
 *   MEMBER HOME_REQUESTS CLIENT_REQUESTS FORWARDED KEYS
 * (its "host:port"; requests it served as the home of their keys; requests its own clients
 * sent it; parts of those it forwarded to other homes; keys it holds). Reading them is not
 * counted. E_STORE_UNAVAILABLE names a member that does not answer. */
GOSSIP_RDZV_API int gossip_rdzv_store_member_stats(gossip_rdzv_store* store, char** text);

#ifdef __cplusplus
}
#endif

#endif /* GOSSIP_RDZV_H */
