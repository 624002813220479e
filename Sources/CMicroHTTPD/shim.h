#ifndef STEPO_CMICROHTTPD_SHIM_H
#define STEPO_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>
/* MHD_start_daemon is variadic and not imported; callers use MHD_start_daemon_va with withVaList. */

/* MHD_get_daemon_info is variadic too: the port a daemon bound (the system's choice for port 0). */
static inline uint16_t stepo_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

#include <arpa/inet.h>
#include <netinet/in.h>

/* MHD_get_connection_info is variadic: the client's address as text (0 on success). */
static inline int stepo_mhd_client_address(struct MHD_Connection *connection, char *buffer, socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, size) ? 0 : -1;
    if (address->sa_family == AF_INET6)
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, size) ? 0 : -1;
    return -1;
}

/* The connection's socket (-1 when unknown). */
static inline int stepo_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* What the connection-notify callback stored for this connection. */
static inline void *stepo_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* Percent-decoding of the URL and its arguments, as libmicrohttpd's own, except for three
   escapes kept as written. A %00: decoded, the NUL would cut the text short (an id "abc%00def"
   read as "abc"); the handler refuses a path that still holds "%00". A %2F and a %25: an id may
   hold a "/" or a "%", and decoded here the "/" would split its path segment in two (and the
   "%" be read again as an escape); the router decodes them within each segment, and the
   handler within each argument. */
static inline int stepo_hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static inline size_t stepo_mhd_unescape(void *cls, struct MHD_Connection *connection, char *value) {
    (void)cls; (void)connection;
    char *read = value, *write = value;
    while (*read) {
        int high, low;
        if (read[0] == '%' && (high = stepo_hex_value(read[1])) >= 0 && (low = stepo_hex_value(read[2])) >= 0
            && (high | low) != 0 && high * 16 + low != '/' && high * 16 + low != '%') {
            *write++ = (char)(high * 16 + low);
            read += 3;
        } else {
            *write++ = *read++;
        }
    }
    *write = 0;
    return (size_t)(write - value);
}

/* The unescaper above, as the pointer MHD_OPTION_UNESCAPE_CALLBACK takes. */
static inline void *stepo_mhd_unescape_callback(void) { return (void *)stepo_mhd_unescape; }

#include <string.h>
#include <strings.h>

/* Looks at a request's headers or arguments without copying them out: how many carry the name
   `key` (case-insensitive), and whether any name or value holds `needle`. */
struct stepo_value_scan { const char *key; const char *needle; int count; int found; };

static inline enum MHD_Result stepo_mhd_scan_value(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    struct stepo_value_scan *scan = (struct stepo_value_scan *)cls;
    if (scan->key != NULL && key != NULL && strcasecmp(key, scan->key) == 0) scan->count += 1;
    if (scan->needle != NULL && ((key != NULL && strstr(key, scan->needle) != NULL)
                                 || (value != NULL && strstr(value, scan->needle) != NULL))) scan->found = 1;
    return MHD_YES;
}

/* How many values of `kind` are named `key`. */
static inline int stepo_mhd_count_values(struct MHD_Connection *connection, enum MHD_ValueKind kind, const char *key) {
    struct stepo_value_scan scan = { key, NULL, 0, 0 };
    MHD_get_connection_values(connection, kind, stepo_mhd_scan_value, &scan);
    return scan.count;
}

/* Whether a name or a value of `kind` holds `needle`. */
static inline int stepo_mhd_values_contain(struct MHD_Connection *connection, enum MHD_ValueKind kind, const char *needle) {
    struct stepo_value_scan scan = { NULL, needle, 0, 0 };
    MHD_get_connection_values(connection, kind, stepo_mhd_scan_value, &scan);
    return scan.found;
}
#endif
