#ifndef STEPO_CSQLITE_SHIM_H
#define STEPO_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the bound value.
static inline sqlite3_destructor_type stepo_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
