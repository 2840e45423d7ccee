/*
 * rpma_client.h: the client library for C programs. A region replicated on
 * the rpmad daemons of a replica set, behind an opaque handle.
 *
 * Every function returns RPMA_CLIENT_OK (0) or a negative RPMA_CLIENT_E_*
 * code; rpma_client_last_error() then says what happened and what to do
 * (per thread, valid until the thread's next call). Semantics, quorum and
 * failure handling are those of rpma::client::Region (rpma/client/region.h).
 * A handle may be used from several threads at once.
 */
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_H
#define CLIENT_INCLUDE_RPMA_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPMA_CLIENT_OK 0
#define RPMA_CLIENT_E_INVAL (-1)        /* bad argument (range, index, NULL) */
#define RPMA_CLIENT_E_NOT_FOUND (-2)    /* no such region */
#define RPMA_CLIENT_E_EXISTS (-3)       /* region exists with another size */
#define RPMA_CLIENT_E_PRECONDITION (-4) /* refused in the current state */
#define RPMA_CLIENT_E_PERMISSION (-5)   /* admin token missing or wrong */
#define RPMA_CLIENT_E_UNAVAILABLE (-6)  /* a daemon is unreachable */
#define RPMA_CLIENT_E_TIMEOUT (-7)      /* no answer in time */
#define RPMA_CLIENT_E_EXHAUSTED (-8)    /* out of resources */
#define RPMA_CLIENT_E_DATA_PLANE (-9)   /* an rpma operation failed */
#define RPMA_CLIENT_E_QUORUM_LOST (-10) /* fewer live replicas than the quorum */
#define RPMA_CLIENT_E_INTERNAL (-11)

struct rpma_client_region;

struct rpma_client_options {
    uint64_t create_size;    /* > 0: create where missing; 0: must exist */
    size_t quorum;           /* 0: all replicas */
    const char *admin_token; /* NULL: none */
    const char *ca_file;     /* NULL: plaintext control plane */
    /* How long a replica may take to confirm an operation before it is
     * marked failed (OpenOptions::operation_timeout); 0: 10000 ms. */
    unsigned operation_timeout_ms;
};

/* Opens `name` on the `count` rpmad control addresses. opts may be NULL. */
int rpma_client_region_open(const char *const *addresses, size_t count, const char *name,
                            const struct rpma_client_options *opts,
                            struct rpma_client_region **region);

/* Flags of rpma_client_region_open_flags (OpenOptions in region.h). */
/* A reader: records nothing, reads in-sync replicas only, writes refused. */
#define RPMA_CLIENT_OPEN_READ_ONLY 0x1u
/* Open though fewer than a majority of the replicas answered, or their
 * replica-set records disagree: a stale replica may then be taken as in
 * sync. Only when no other writer exists. */
#define RPMA_CLIENT_OPEN_FORCE 0x2u
/* Open though a member is being repaired, to take the repair over. */
#define RPMA_CLIENT_OPEN_REPAIR_TAKEOVER 0x4u
/* Every asynchronous persist posted at once, none left to a group commit
 * (OpenOptions::group_commit in region.h). */
#define RPMA_CLIENT_OPEN_NO_GROUP_COMMIT 0x8u
/* The *_async calls never wait: while max_in_flight operations are
 * outstanding they return RPMA_CLIENT_E_EXHAUSTED at once, nothing
 * submitted and no completion to poll (OpenOptions::wait_for_room in
 * region.h). For an event loop: submit again once a poll returned a
 * completion. Libraries that predate it refuse the flag
 * (RPMA_CLIENT_E_INVAL). */
#define RPMA_CLIENT_OPEN_NO_WAIT 0x10u

/* rpma_client_region_open with RPMA_CLIENT_OPEN_* flags (0: the same). */
int rpma_client_region_open_flags(const char *const *addresses, size_t count, const char *name,
                                  const struct rpma_client_options *opts, unsigned flags,
                                  struct rpma_client_region **region);
/* Waits for the region's outstanding asynchronous operations (each at most
 * operation_timeout), drops their completions and those not yet polled,
 * disconnects and frees; NULL is allowed. After it returns, every buffer
 * given to the region may be freed. No other call on the handle may run
 * meanwhile or after. */
void rpma_client_region_close(struct rpma_client_region *region);

uint64_t rpma_client_region_size(const struct rpma_client_region *region);
/* 1 when replica `index` is live (in sync), 0 otherwise. */
int rpma_client_replica_live(const struct rpma_client_region *region, size_t index);

/* Replica states (ReplicaState in region.h). */
#define RPMA_CLIENT_REPLICA_LIVE 0      /* in sync: counted, read */
#define RPMA_CLIENT_REPLICA_FAILED 1    /* failed while open; recorded stale */
#define RPMA_CLIENT_REPLICA_REPAIRING 2 /* being repaired by this handle */
#define RPMA_CLIENT_REPLICA_STALE 3     /* not in sync at open: repair it */
/* The state of replica `index`, or RPMA_CLIENT_E_INVAL. */
int rpma_client_replica_state(const struct rpma_client_region *region, size_t index);
/* The replica-set generation the handle holds (0: read-only, or daemons
 * that keep no record). */
uint64_t rpma_client_region_generation(const struct rpma_client_region *region);

int rpma_client_write(struct rpma_client_region *region, uint64_t offset, const void *buf,
                      size_t len);
int rpma_client_persist(struct rpma_client_region *region, uint64_t offset, size_t len);
int rpma_client_write_persist(struct rpma_client_region *region, uint64_t offset, const void *buf,
                              size_t len);
int rpma_client_read(struct rpma_client_region *region, size_t replica, uint64_t offset, void *buf,
                     size_t len);
/* Repairs failed or stale replica `index` (see Region::Readd); new_address
 * may be NULL. */
int rpma_client_readd(struct rpma_client_region *region, size_t index, const char *new_address);

/* The calling thread's last error message ("" after a success). */
const char *rpma_client_last_error(void);

/* ---- since RPMA_CLIENT_1.1 ------------------------------------------------
 *
 * Opening with every option: an extensible struct. Set `size` to
 * sizeof(struct rpma_client_open_options) and zero what you do not set
 * (= {sizeof(...)} or memset). Later versions only append fields: a
 * library reads the fields that fit in `size` (a program built against an
 * older header gets the defaults for the rest), and refuses a larger size
 * whose bytes past the fields it knows are not all zero (a program built
 * against a newer header, asking for something this library cannot do).
 */
struct rpma_client_open_options {
    size_t size;                   /* sizeof(struct rpma_client_open_options) */
    unsigned flags;                /* RPMA_CLIENT_OPEN_* */
    uint64_t create_size;          /* > 0: create where missing; 0: must exist */
    size_t quorum;                 /* 0: all replicas */
    unsigned operation_timeout_ms; /* 0: 10000 ms */
    /* Asynchronous operations outstanding at once (OpenOptions::
     * max_in_flight); a submission past it blocks until the oldest
     * completes (or is refused: RPMA_CLIENT_OPEN_NO_WAIT). 0: 64. */
    size_t max_in_flight;
    const char *admin_token; /* NULL: none */
    /* For daemons with sessions.client_tokens_file; NULL: none. */
    const char *client_token;
    const char *ca_file; /* PEM CA bundle; NULL: plaintext unless cert_file */
    /* PEM client certificate and key, for daemons that require mutual TLS:
     * both or neither (imply TLS; with ca_file NULL the system's roots). */
    const char *cert_file;
    const char *key_file;
};

/* rpma_client_region_open with every option; opts may be NULL (defaults).
 * RPMA_CLIENT_E_INVAL also for a size smaller than sizeof(size_t), unknown
 * bytes set past the known fields, unknown flags, an unreadable TLS file or
 * a certificate without its key. */
int rpma_client_region_open_ex(const char *const *addresses, size_t count, const char *name,
                               const struct rpma_client_open_options *opts,
                               struct rpma_client_region **region);

/* Asynchronous operations, for event loops.
 *
 * Each *_async call submits one operation and returns at once (except
 * when max_in_flight operations are outstanding: then it waits for the
 * oldest). RPMA_CLIENT_OK means submitted: exactly one completion with
 * `user_data` will come out of rpma_client_poll, also when the operation
 * fails or the region refuses it (a range beyond the region, a read-only
 * region's write: its status says so). Only NULL arguments
 * (RPMA_CLIENT_E_INVAL) and, opened with RPMA_CLIENT_OPEN_NO_WAIT, a
 * region with max_in_flight operations outstanding
 * (RPMA_CLIENT_E_EXHAUSTED) fail at once, nothing submitted. Semantics, ordering and quorum
 * are those of the synchronous calls: operations take effect on every
 * replica in submission order, and a persist covers every write submitted
 * before it. Completions come out in submission order.
 *
 * Buffers: a write's `buf` must stay valid, unchanged, and a read's `buf`
 * untouched, until the operation's completion has been polled (or the
 * region closed).
 *
 * Threads: submissions and polls may come from any threads at once; each
 * completion is returned by one poll only. Nothing runs in the caller's
 * thread behind its back: completions wait in the handle until polled. */

/* What an operation was (rpma_client_completion::op). */
#define RPMA_CLIENT_OP_WRITE 1
#define RPMA_CLIENT_OP_PERSIST 2
#define RPMA_CLIENT_OP_WRITE_PERSIST 3
#define RPMA_CLIENT_OP_READ 4
#define RPMA_CLIENT_OP_COMMIT 5

/* Its layout is fixed (callers allocate arrays of it): a later version
 * would add a poll call of its own rather than fields. */
struct rpma_client_completion {
    void *user_data; /* as submitted */
    int status;      /* RPMA_CLIENT_OK or an RPMA_CLIENT_E_* code */
    int op;          /* RPMA_CLIENT_OP_* */
    /* Why it failed ("" on success), as rpma_client_last_error would say:
     * valid until the calling thread's next rpma_client_poll (of any
     * region). */
    const char *message;
};

int rpma_client_write_async(struct rpma_client_region *region, uint64_t offset, const void *buf,
                            size_t len, void *user_data);
int rpma_client_persist_async(struct rpma_client_region *region, uint64_t offset, size_t len,
                              void *user_data);
int rpma_client_write_persist_async(struct rpma_client_region *region, uint64_t offset,
                                    const void *buf, size_t len, void *user_data);
int rpma_client_read_async(struct rpma_client_region *region, size_t replica, uint64_t offset,
                           void *buf, size_t len, void *user_data);

/* A file descriptor that is readable (poll(2), epoll, select: POLLIN)
 * while completions wait to be polled; owned by the region (do not read
 * or close it). RPMA_CLIENT_E_EXHAUSTED when no descriptor could be made. */
int rpma_client_poll_fd(struct rpma_client_region *region);
/* Copies up to `max` completed operations, oldest first, into `out`;
 * never blocks. Returns how many (0: none ready), or RPMA_CLIENT_E_INVAL
 * (NULL region, or NULL out with max > 0). */
int rpma_client_poll(struct rpma_client_region *region, struct rpma_client_completion *out,
                     size_t max);

/* Batches: several writes made durable by one persist over the range they
 * span (Region::Commit). A batch records (offset, buf, len) only: the
 * buffers must stay valid as for a write until the commit returned (or its
 * completion was polled); the batch itself may be cleared, reused or freed
 * as soon as rpma_client_commit or rpma_client_commit_async returned. */
struct rpma_client_batch;

int rpma_client_batch_new(struct rpma_client_batch **batch);
int rpma_client_batch_add_write(struct rpma_client_batch *batch, uint64_t offset, const void *buf,
                                size_t len);
/* How many writes it holds; 0 for NULL. */
size_t rpma_client_batch_size(const struct rpma_client_batch *batch);
void rpma_client_batch_clear(struct rpma_client_batch *batch);
/* NULL is allowed. */
void rpma_client_batch_free(struct rpma_client_batch *batch);
/* An empty batch writes nothing (it still fails when the quorum is lost). */
int rpma_client_commit(struct rpma_client_region *region, const struct rpma_client_batch *batch);
int rpma_client_commit_async(struct rpma_client_region *region,
                             const struct rpma_client_batch *batch, void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* CLIENT_INCLUDE_RPMA_CLIENT_H */
