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

/* rpma_client_region_open with RPMA_CLIENT_OPEN_* flags (0: the same). */
int rpma_client_region_open_flags(const char *const *addresses, size_t count, const char *name,
                                  const struct rpma_client_options *opts, unsigned flags,
                                  struct rpma_client_region **region);
/* Disconnects and frees; NULL is allowed. */
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

#ifdef __cplusplus
}
#endif

#endif /* CLIENT_INCLUDE_RPMA_CLIENT_H */
