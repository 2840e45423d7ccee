// dropin: an ordinary librpma client, compiled against Debian's librpma.h and
// linked with -lrpma, never against anything in this workspace.
//
//   dropin EXPECTED_LIBRARY
//
// It first proves which librpma.so.0 the dynamic loader picked (it must be
// EXPECTED_LIBRARY), then checks the behaviour of every function implemented
// so far. dropin_test.sh runs it twice -- with LD_LIBRARY_PATH pointing at our
// librpma.so.0 and without (Debian's) -- and requires identical check lines.
//
// Output: one "library: ..." line, which differs between the two runs, and one
// line per check, "ok   <object>: <check>" or "FAIL <object>: <check>: <why>".
// Exit status: 0 when every check passed.
//
// To cover a function that has just been implemented, add its checks to the
// function of its object below, or add an object to kObjects.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <librpma.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Debian's header guards itself with LIBRPMA_H; ours does not.
#ifndef LIBRPMA_H
#error "dropin.c must be compiled against Debian's /usr/include/librpma.h"
#endif

#ifndef DEBIAN_LIBRPMA
#define DEBIAN_LIBRPMA "/usr/lib/x86_64-linux-gnu/librpma.so.0"
#endif

static const char *current_object = "";
static int failures;

static void verdict(bool passed, const char *what, const char *why) {
    if (passed) {
        printf("ok   %s: %s\n", current_object, what);
    } else {
        printf("FAIL %s: %s: %s\n", current_object, what, why);
        ++failures;
    }
}

static void check_int(long long actual, long long expected, const char *what) {
    char why[96];
    snprintf(why, sizeof(why), "got %lld, expected %lld", actual, expected);
    verdict(actual == expected, what, why);
}

static void check_str(const char *actual, const char *expected, const char *what) {
    char why[160];
    snprintf(why, sizeof(why), "got \"%s\", expected \"%s\"", actual ? actual : "(null)", expected);
    verdict(actual != NULL && strcmp(actual, expected) == 0, what, why);
}

#define CHECK_INT(actual, expected) \
    check_int((long long)(actual), (long long)(expected), #actual " == " #expected)
#define CHECK_TRUE(condition) verdict((condition), #condition, "false")

// ---------------------------------------------------------------------------
// library: which librpma.so.0 is loaded

static bool same_file(const char *a, const char *b) {
    char real_a[PATH_MAX], real_b[PATH_MAX];
    return realpath(a, real_a) != NULL && realpath(b, real_b) != NULL &&
           strcmp(real_a, real_b) == 0;
}

static bool check_loaded_library(const char *expected) {
    Dl_info info;
    if (dladdr((const void *)(uintptr_t)&rpma_err_2str, &info) == 0 || info.dli_fname == NULL) {
        printf("FAIL library: dladdr(rpma_err_2str) found no shared object\n");
        return false;
    }
    char loaded[PATH_MAX];
    if (realpath(info.dli_fname, loaded) == NULL) {
        printf("FAIL library: cannot resolve %s\n", info.dli_fname);
        return false;
    }
    bool is_debian = same_file(loaded, DEBIAN_LIBRPMA);
    printf("library: rpma_err_2str comes from %s (%s)\n", loaded,
           is_debian ? "Debian's librpma" : "not Debian's librpma");
    if (!same_file(loaded, expected)) {
        printf("FAIL library: expected %s to be loaded%s\n", expected,
               is_debian ? "; is LD_LIBRARY_PATH set?" : "");
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------
// err

static void check_err(void) {
    static const struct {
        int code;
        const char *name;
        const char *text;
    } kCodes[] = {
        {0, "0", "Success"},
        {RPMA_E_UNKNOWN, "RPMA_E_UNKNOWN", "Unknown error"},
        {RPMA_E_NOSUPP, "RPMA_E_NOSUPP", "Not supported"},
        {RPMA_E_PROVIDER, "RPMA_E_PROVIDER", "Provider error occurred"},
        {RPMA_E_NOMEM, "RPMA_E_NOMEM", "Out of memory"},
        {RPMA_E_INVAL, "RPMA_E_INVAL", "Invalid argument"},
        {RPMA_E_NO_COMPLETION, "RPMA_E_NO_COMPLETION", "No next completion available"},
        {RPMA_E_NO_EVENT, "RPMA_E_NO_EVENT", "No next event available"},
        {RPMA_E_AGAIN, "RPMA_E_AGAIN", "Temporary error, try again"},
        {RPMA_E_SHARED_CHANNEL, "RPMA_E_SHARED_CHANNEL", "Completion channel is shared"},
        {RPMA_E_NOT_SHARED_CHNL, "RPMA_E_NOT_SHARED_CHNL", "Completion channel is not shared"},
        {1, "1", "Unknown error"},
        {-1, "-1", "Unknown error"},
        {RPMA_E_NOT_SHARED_CHNL - 1, "RPMA_E_NOT_SHARED_CHNL - 1", "Unknown error"},
    };
    for (size_t i = 0; i < sizeof(kCodes) / sizeof(kCodes[0]); ++i) {
        char what[96];
        snprintf(what, sizeof(what), "rpma_err_2str(%s)", kCodes[i].name);
        check_str(rpma_err_2str(kCodes[i].code), kCodes[i].text, what);
    }
}

// ---------------------------------------------------------------------------
// utils

static void check_utils(void) {
    static const struct {
        enum rpma_conn_event event;
        const char *name;
        const char *text;
    } kEvents[] = {
        {RPMA_CONN_UNDEFINED, "RPMA_CONN_UNDEFINED", "Undefined connection event"},
        {RPMA_CONN_ESTABLISHED, "RPMA_CONN_ESTABLISHED", "Connection established"},
        {RPMA_CONN_CLOSED, "RPMA_CONN_CLOSED", "Connection closed"},
        {RPMA_CONN_LOST, "RPMA_CONN_LOST", "Connection lost"},
        {RPMA_CONN_REJECTED, "RPMA_CONN_REJECTED", "Connection rejected"},
        {RPMA_CONN_UNREACHABLE, "RPMA_CONN_UNREACHABLE", "Connection unreachable"},
        {(enum rpma_conn_event)(RPMA_CONN_UNREACHABLE + 1), "RPMA_CONN_UNREACHABLE + 1",
         "Unsupported connection event"},
        {(enum rpma_conn_event)(RPMA_CONN_UNDEFINED - 1), "RPMA_CONN_UNDEFINED - 1",
         "Unsupported connection event"},
    };
    for (size_t i = 0; i < sizeof(kEvents) / sizeof(kEvents[0]); ++i) {
        char what[96];
        snprintf(what, sizeof(what), "rpma_utils_conn_event_2str(%s)", kEvents[i].name);
        check_str(rpma_utils_conn_event_2str(kEvents[i].event), kEvents[i].text, what);
    }
}

// ---------------------------------------------------------------------------
// log

static struct {
    int count;
    enum rpma_log_level level;
    bool has_file, has_function;
    int line;
    char message[256];
} captured;

static void capture_log(enum rpma_log_level level, const char *file_name, const int line_no,
                        const char *function_name, const char *message_format, ...) {
    if (captured.count++ > 0)
        return;
    captured.level = level;
    captured.has_file = file_name != NULL;
    captured.has_function = function_name != NULL;
    captured.line = line_no;
    va_list args;
    va_start(args, message_format);
    if (message_format != NULL)
        vsnprintf(captured.message, sizeof(captured.message), message_format, args);
    va_end(args);
}

static void check_log(void) {
    enum rpma_log_level level = RPMA_LOG_LEVEL_DEBUG;
    CHECK_INT(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, &level), 0);
    CHECK_INT(level, RPMA_LOG_LEVEL_WARNING);
    CHECK_INT(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_AUX, &level), 0);
    CHECK_INT(level, RPMA_LOG_DISABLED);

    CHECK_INT(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_MAX, &level), RPMA_E_INVAL);
    CHECK_INT(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_MAX, RPMA_LOG_LEVEL_ERROR), RPMA_E_INVAL);
    CHECK_INT(
        rpma_log_set_threshold(RPMA_LOG_THRESHOLD, (enum rpma_log_level)(RPMA_LOG_LEVEL_DEBUG + 1)),
        RPMA_E_INVAL);
    CHECK_INT(
        rpma_log_set_threshold(RPMA_LOG_THRESHOLD, (enum rpma_log_level)(RPMA_LOG_DISABLED - 1)),
        RPMA_E_INVAL);
    CHECK_INT(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, &level), 0);
    CHECK_INT(level, RPMA_LOG_LEVEL_WARNING);

    CHECK_INT(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_LEVEL_INFO), 0);
    CHECK_INT(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_AUX, &level), 0);
    CHECK_INT(level, RPMA_LOG_LEVEL_INFO);
    CHECK_INT(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_DISABLED), 0);

    // A descriptor one byte short is an error every implementation logs.
    CHECK_INT(rpma_log_set_function(capture_log), 0);
    CHECK_INT(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_DEBUG), 0);
    unsigned char descriptor[21] = {0};
    struct rpma_mr_remote *mr = NULL;
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, 20, &mr), RPMA_E_INVAL);
    CHECK_TRUE(captured.count > 0);
    CHECK_INT(captured.level, RPMA_LOG_LEVEL_ERROR);
    CHECK_TRUE(captured.has_file);
    CHECK_TRUE(captured.line > 0);
    CHECK_TRUE(captured.has_function);
    CHECK_TRUE(captured.message[0] != '\0');

    CHECK_INT(rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION), 0);
    CHECK_INT(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_WARNING), 0);
    int before = captured.count;
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, 20, &mr), RPMA_E_INVAL);
    CHECK_INT(captured.count, before);
}

// ---------------------------------------------------------------------------
// peer_cfg

static void check_peer_cfg(void) {
    CHECK_INT(rpma_peer_cfg_new(NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_peer_cfg_delete(NULL), RPMA_E_INVAL);

    struct rpma_peer_cfg *cfg = NULL;
    CHECK_INT(rpma_peer_cfg_new(&cfg), 0);
    if (cfg == NULL)
        return;
    bool supported = true;
    CHECK_INT(rpma_peer_cfg_get_direct_write_to_pmem(cfg, &supported), 0);
    CHECK_INT(supported, false);
    CHECK_INT(rpma_peer_cfg_set_direct_write_to_pmem(NULL, true), RPMA_E_INVAL);
    CHECK_INT(rpma_peer_cfg_get_direct_write_to_pmem(NULL, &supported), RPMA_E_INVAL);
    CHECK_INT(rpma_peer_cfg_get_direct_write_to_pmem(cfg, NULL), RPMA_E_INVAL);

    size_t size = 0;
    CHECK_INT(rpma_peer_cfg_get_descriptor_size(cfg, &size), 0);
    CHECK_INT(size, 1);
    CHECK_INT(rpma_peer_cfg_get_descriptor_size(NULL, &size), RPMA_E_INVAL);
    CHECK_INT(rpma_peer_cfg_get_descriptor_size(cfg, NULL), RPMA_E_INVAL);

    unsigned char descriptor = 0xff;
    CHECK_INT(rpma_peer_cfg_get_descriptor(cfg, &descriptor), 0);
    CHECK_INT(descriptor, 0);
    CHECK_INT(rpma_peer_cfg_set_direct_write_to_pmem(cfg, true), 0);
    CHECK_INT(rpma_peer_cfg_get_direct_write_to_pmem(cfg, &supported), 0);
    CHECK_INT(supported, true);
    CHECK_INT(rpma_peer_cfg_get_descriptor(cfg, &descriptor), 0);
    CHECK_INT(descriptor, 1);
    CHECK_INT(rpma_peer_cfg_get_descriptor(NULL, &descriptor), RPMA_E_INVAL);
    CHECK_INT(rpma_peer_cfg_get_descriptor(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_peer_cfg_delete(&cfg), 0);
    CHECK_TRUE(cfg == NULL);
    CHECK_INT(rpma_peer_cfg_delete(&cfg), 0);

    // Any non-zero byte means "supported" and is sent on as 1.
    const unsigned char seven = 7;
    CHECK_INT(rpma_peer_cfg_from_descriptor(&seven, sizeof(seven), &cfg), 0);
    if (cfg == NULL)
        return;
    CHECK_INT(rpma_peer_cfg_get_direct_write_to_pmem(cfg, &supported), 0);
    CHECK_INT(supported, true);
    unsigned char resent = 0xff;
    CHECK_INT(rpma_peer_cfg_get_descriptor(cfg, &resent), 0);
    CHECK_INT(resent, 1);
    CHECK_INT(rpma_peer_cfg_delete(&cfg), 0);

    const unsigned char zero = 0;
    CHECK_INT(rpma_peer_cfg_from_descriptor(&zero, sizeof(zero), &cfg), 0);
    if (cfg == NULL)
        return;
    CHECK_INT(rpma_peer_cfg_get_direct_write_to_pmem(cfg, &supported), 0);
    CHECK_INT(supported, false);
    CHECK_INT(rpma_peer_cfg_delete(&cfg), 0);

    struct rpma_peer_cfg *untouched = (struct rpma_peer_cfg *)&current_object;
    cfg = untouched;
    CHECK_INT(rpma_peer_cfg_from_descriptor(&seven, 0, &cfg), RPMA_E_INVAL);
    CHECK_TRUE(cfg == untouched);
    CHECK_INT(rpma_peer_cfg_from_descriptor(NULL, 1, &cfg), RPMA_E_INVAL);
    CHECK_TRUE(cfg == untouched);
    CHECK_INT(rpma_peer_cfg_from_descriptor(&seven, 1, NULL), RPMA_E_INVAL);
}

// ---------------------------------------------------------------------------
// conn_cfg

static void check_conn_cfg(void) {
    CHECK_INT(rpma_conn_cfg_new(NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_delete(NULL), RPMA_E_INVAL);

    struct rpma_conn_cfg *cfg = NULL;
    CHECK_INT(rpma_conn_cfg_new(&cfg), 0);
    if (cfg == NULL)
        return;
    int timeout = -1;
    uint32_t cq_size = 0, rcq_size = 0, sq_size = 0, rq_size = 0;
    bool shared = true;
    struct rpma_srq *srq = (struct rpma_srq *)&current_object;
    CHECK_INT(rpma_conn_cfg_get_timeout(cfg, &timeout), 0);
    CHECK_INT(timeout, RPMA_DEFAULT_TIMEOUT_MS);
    CHECK_INT(timeout, 1000);
    CHECK_INT(rpma_conn_cfg_get_cq_size(cfg, &cq_size), 0);
    CHECK_INT(cq_size, 10);
    CHECK_INT(rpma_conn_cfg_get_rcq_size(cfg, &rcq_size), 0);
    CHECK_INT(rcq_size, 0);
    CHECK_INT(rpma_conn_cfg_get_sq_size(cfg, &sq_size), 0);
    CHECK_INT(sq_size, 10);
    CHECK_INT(rpma_conn_cfg_get_rq_size(cfg, &rq_size), 0);
    CHECK_INT(rq_size, 10);
    CHECK_INT(rpma_conn_cfg_get_compl_channel(cfg, &shared), 0);
    CHECK_INT(shared, false);
    CHECK_INT(rpma_conn_cfg_get_srq(cfg, &srq), 0);
    CHECK_TRUE(srq == NULL);

    CHECK_INT(rpma_conn_cfg_set_timeout(cfg, 2500), 0);
    CHECK_INT(rpma_conn_cfg_get_timeout(cfg, &timeout), 0);
    CHECK_INT(timeout, 2500);
    CHECK_INT(rpma_conn_cfg_set_timeout(cfg, -1), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_timeout(cfg, &timeout), 0);
    CHECK_INT(timeout, 2500);
    CHECK_INT(rpma_conn_cfg_set_timeout(cfg, 0), 0);
    CHECK_INT(rpma_conn_cfg_get_timeout(cfg, &timeout), 0);
    CHECK_INT(timeout, 0);
    CHECK_INT(rpma_conn_cfg_set_cq_size(cfg, 31), 0);
    CHECK_INT(rpma_conn_cfg_get_cq_size(cfg, &cq_size), 0);
    CHECK_INT(cq_size, 31);
    CHECK_INT(rpma_conn_cfg_set_rcq_size(cfg, 32), 0);
    CHECK_INT(rpma_conn_cfg_get_rcq_size(cfg, &rcq_size), 0);
    CHECK_INT(rcq_size, 32);
    CHECK_INT(rpma_conn_cfg_set_sq_size(cfg, 33), 0);
    CHECK_INT(rpma_conn_cfg_get_sq_size(cfg, &sq_size), 0);
    CHECK_INT(sq_size, 33);
    CHECK_INT(rpma_conn_cfg_set_rq_size(cfg, UINT32_MAX), 0);
    CHECK_INT(rpma_conn_cfg_get_rq_size(cfg, &rq_size), 0);
    CHECK_INT(rq_size, UINT32_MAX);
    CHECK_INT(rpma_conn_cfg_set_compl_channel(cfg, true), 0);
    CHECK_INT(rpma_conn_cfg_get_compl_channel(cfg, &shared), 0);
    CHECK_INT(shared, true);
    // The configuration only stores the SRQ handle, so any address will do.
    struct rpma_srq *fake_srq = (struct rpma_srq *)&current_object;
    CHECK_INT(rpma_conn_cfg_set_srq(cfg, fake_srq), 0);
    CHECK_INT(rpma_conn_cfg_get_srq(cfg, &srq), 0);
    CHECK_TRUE(srq == fake_srq);
    CHECK_INT(rpma_conn_cfg_set_srq(cfg, NULL), RPMA_E_INVAL);

    CHECK_INT(rpma_conn_cfg_set_timeout(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_timeout(NULL, &timeout), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_timeout(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_set_cq_size(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_cq_size(NULL, &cq_size), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_cq_size(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_set_rcq_size(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_rcq_size(NULL, &rcq_size), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_rcq_size(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_set_sq_size(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_sq_size(NULL, &sq_size), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_sq_size(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_set_rq_size(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_rq_size(NULL, &rq_size), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_rq_size(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_set_compl_channel(NULL, true), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_compl_channel(NULL, &shared), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_compl_channel(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_set_srq(NULL, fake_srq), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_srq(NULL, &srq), RPMA_E_INVAL);
    CHECK_INT(rpma_conn_cfg_get_srq(cfg, NULL), RPMA_E_INVAL);

    CHECK_INT(rpma_conn_cfg_delete(&cfg), 0);
    CHECK_TRUE(cfg == NULL);
    CHECK_INT(rpma_conn_cfg_delete(&cfg), 0);
}

// ---------------------------------------------------------------------------
// srq_cfg

static void check_srq_cfg(void) {
    CHECK_INT(rpma_srq_cfg_new(NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_srq_cfg_delete(NULL), RPMA_E_INVAL);

    struct rpma_srq_cfg *cfg = NULL;
    CHECK_INT(rpma_srq_cfg_new(&cfg), 0);
    if (cfg == NULL)
        return;
    uint32_t rq_size = 0, rcq_size = 0;
    CHECK_INT(rpma_srq_cfg_get_rq_size(cfg, &rq_size), 0);
    CHECK_INT(rq_size, 20);
    CHECK_INT(rpma_srq_cfg_get_rcq_size(cfg, &rcq_size), 0);
    CHECK_INT(rcq_size, 20);

    CHECK_INT(rpma_srq_cfg_set_rq_size(cfg, 41), 0);
    CHECK_INT(rpma_srq_cfg_get_rq_size(cfg, &rq_size), 0);
    CHECK_INT(rq_size, 41);
    CHECK_INT(rpma_srq_cfg_set_rcq_size(cfg, 0), 0);
    CHECK_INT(rpma_srq_cfg_get_rcq_size(cfg, &rcq_size), 0);
    CHECK_INT(rcq_size, 0);

    CHECK_INT(rpma_srq_cfg_set_rq_size(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_srq_cfg_get_rq_size(NULL, &rq_size), RPMA_E_INVAL);
    CHECK_INT(rpma_srq_cfg_get_rq_size(cfg, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_srq_cfg_set_rcq_size(NULL, 1), RPMA_E_INVAL);
    CHECK_INT(rpma_srq_cfg_get_rcq_size(NULL, &rcq_size), RPMA_E_INVAL);
    CHECK_INT(rpma_srq_cfg_get_rcq_size(cfg, NULL), RPMA_E_INVAL);

    CHECK_INT(rpma_srq_cfg_delete(&cfg), 0);
    CHECK_TRUE(cfg == NULL);
    CHECK_INT(rpma_srq_cfg_delete(&cfg), 0);
}

// ---------------------------------------------------------------------------
// mr_remote

// The wire format: u64 address, u64 length, u32 rkey, u8 usage, little-endian.
enum { kMrDescriptorSize = 21 };

static void put_le(unsigned char *out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
        out[i] = (unsigned char)(value >> (8 * i));
}

static void make_mr_descriptor(unsigned char *out, uint64_t addr, uint64_t length, uint32_t rkey,
                               uint8_t usage) {
    put_le(out, addr, 8);
    put_le(out + 8, length, 8);
    put_le(out + 16, rkey, 4);
    out[20] = usage;
}

static void check_mr_remote(void) {
    unsigned char descriptor[kMrDescriptorSize + 11] = {0};
    struct rpma_mr_remote *mr = NULL;
    size_t size = 0;
    int flush_type = -1;

    make_mr_descriptor(descriptor, 0x1122334455667788u, 0x0000012345678901u, 0xdeadbeefu,
                       RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT |
                           RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, kMrDescriptorSize, &mr), 0);
    if (mr == NULL)
        return;
    CHECK_INT(rpma_mr_remote_get_size(mr, &size), 0);
    CHECK_INT(size, 0x0000012345678901u);
    CHECK_INT(rpma_mr_remote_get_flush_type(mr, &flush_type), 0);
    CHECK_INT(flush_type,
              RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    CHECK_INT(rpma_mr_remote_get_size(NULL, &size), RPMA_E_INVAL);
    CHECK_INT(rpma_mr_remote_get_size(mr, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_mr_remote_get_flush_type(NULL, &flush_type), RPMA_E_INVAL);
    CHECK_INT(rpma_mr_remote_get_flush_type(mr, NULL), RPMA_E_INVAL);
    CHECK_INT(rpma_mr_remote_delete(&mr), 0);
    CHECK_TRUE(mr == NULL);
    CHECK_INT(rpma_mr_remote_delete(&mr), 0);
    CHECK_INT(rpma_mr_remote_delete(NULL), RPMA_E_INVAL);

    // Trailing bytes are ignored; only the flush bits of the usage are reported.
    make_mr_descriptor(descriptor, 0, 4096, 1,
                       RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, sizeof(descriptor), &mr), 0);
    if (mr == NULL)
        return;
    CHECK_INT(rpma_mr_remote_get_size(mr, &size), 0);
    CHECK_INT(size, 4096);
    CHECK_INT(rpma_mr_remote_get_flush_type(mr, &flush_type), 0);
    CHECK_INT(flush_type, RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    CHECK_INT(rpma_mr_remote_delete(&mr), 0);

    make_mr_descriptor(descriptor, 0, 4096, 1, RPMA_MR_USAGE_RECV);
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, kMrDescriptorSize, &mr), 0);
    if (mr == NULL)
        return;
    CHECK_INT(rpma_mr_remote_get_flush_type(mr, &flush_type), 0);
    CHECK_INT(flush_type, 0);
    CHECK_INT(rpma_mr_remote_delete(&mr), 0);

    struct rpma_mr_remote *untouched = (struct rpma_mr_remote *)&current_object;
    mr = untouched;
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, kMrDescriptorSize - 1, &mr), RPMA_E_INVAL);
    CHECK_TRUE(mr == untouched);
    make_mr_descriptor(descriptor, 0, 4096, 1, 0);
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, kMrDescriptorSize, &mr), RPMA_E_INVAL);
    CHECK_TRUE(mr == untouched);
    CHECK_INT(rpma_mr_remote_from_descriptor(NULL, kMrDescriptorSize, &mr), RPMA_E_INVAL);
    CHECK_TRUE(mr == untouched);
    CHECK_INT(rpma_mr_remote_from_descriptor(descriptor, kMrDescriptorSize, NULL), RPMA_E_INVAL);
}

// ---------------------------------------------------------------------------

static const struct {
    const char *name;
    void (*check)(void);
} kObjects[] = {
    {"err", check_err},
    {"utils", check_utils},
    // Before anything else logs: it checks the default thresholds.
    {"log", check_log},
    {"peer_cfg", check_peer_cfg},
    {"conn_cfg", check_conn_cfg},
    {"srq_cfg", check_srq_cfg},
    {"mr_remote", check_mr_remote},
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s EXPECTED_LIBRARY\n", argv[0]);
        return 2;
    }
    if (!check_loaded_library(argv[1]))
        return 1;
    for (size_t i = 0; i < sizeof(kObjects) / sizeof(kObjects[0]); ++i) {
        current_object = kObjects[i].name;
        kObjects[i].check();
    }
    if (failures > 0) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    return 0;
}
