// This rpmad's identity: 128 random bits, kept as 32 lowercase hex digits in
// <pool_dir>/daemon-id from its first start on. A replica set names its
// members by it (ReplicaSetMember.daemon_id), because an address can be
// reused by another daemon whose copy of a region is not the one the set
// knows. It belongs to the pool, not to the host: a pool moved elsewhere
// keeps it, a new pool gets a new one.
#ifndef DAEMON_DAEMON_ID_H
#define DAEMON_DAEMON_ID_H

#include <string>
#include <string_view>

#include "daemon/status.h"

namespace rpmad {

inline constexpr char kDaemonIdFileName[] = "daemon-id";

// 32 lowercase hex digits.
bool IsDaemonId(std::string_view text);

// Reads <pool_dir>/daemon-id (the digits, a final newline allowed), or
// creates it durably (temporary file, fsync, rename, directory fsync) with
// new random bits when it does not exist. The caller holds the pool's lock,
// so no second rpmad creates one at the same time. FAILED_PRECONDITION,
// naming the file and the fix, when it holds anything else; the errors of
// reading or writing it otherwise.
StatusOr<std::string> LoadOrCreateDaemonId(const std::string &pool_dir);

}  // namespace rpmad

#endif  // DAEMON_DAEMON_ID_H
