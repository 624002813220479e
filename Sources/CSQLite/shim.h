#ifndef STEPO_CSQLITE_SHIM_H
#define STEPO_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the bound value.
static inline sqlite3_destructor_type stepo_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_config is variadic, which Swift cannot call. Turns off SQLite's memory statistics:
/// they take a global mutex on every allocation, and we never read them. Must run before the
/// first connection opens; returns SQLITE_MISUSE if SQLite is already initialised.
static inline int stepo_sqlite_disable_memstatus(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
#endif
