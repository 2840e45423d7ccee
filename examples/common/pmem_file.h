/*
 * pmem_file.h -- a file mapped as persistent memory with libpmem2, for the examples that keep
 * their data in a file (on real PMem: a file on a DAX file system; elsewhere an ordinary file
 * mapped with page granularity, persisted by msync).
 */
#ifndef EXAMPLES_COMMON_PMEM_FILE_H
#define EXAMPLES_COMMON_PMEM_FILE_H

#include <stddef.h>

#include <libpmem2.h>

struct ex_pmem_file {
    int fd;
    struct pmem2_map *map;
    char *addr;
    size_t size;              /* as asked for; the mapping may be longer */
    pmem2_persist_fn persist; /* makes [ptr, ptr + len) of the mapping durable */
};

/*
 * Opens path (created when missing), grows it to at least size bytes (new bytes are zero) and
 * maps its beginning: size bytes rounded up to the mapping alignment (a page on ordinary
 * files). Prints why on failure and returns non-zero.
 */
int ex_pmem_file_map(const char *path, size_t size, struct ex_pmem_file *file);

/* Unmaps and closes the file. */
int ex_pmem_file_unmap(struct ex_pmem_file *file);

/* Reads len bytes at offset of path through the file system (not a mapping), for checks. */
int ex_file_pread(const char *path, size_t offset, void *buf, size_t len);

#endif /* EXAMPLES_COMMON_PMEM_FILE_H */
