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
#endif
