#ifndef STEPO_LIBPQ_SHIM_H
#define STEPO_LIBPQ_SHIM_H
// libpq, PostgreSQL's client library (Debian: libpq-dev). Its header lives in
// /usr/include/postgresql, which pkg-config's libpq.pc adds to the search path.
#include <libpq-fe.h>

// A notice processor that drops notices ("relation already exists, skipping"): the store's
// migrations and temporary tables cause them on purpose, and they are not errors.
static inline void stepo_pq_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void stepo_pq_silence(PGconn *conn) { PQsetNoticeProcessor(conn, stepo_pq_ignore_notice, 0); }
#endif
