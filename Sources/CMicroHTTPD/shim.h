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
#endif
