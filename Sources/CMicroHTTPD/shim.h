#ifndef STEPO_CMICROHTTPD_SHIM_H
#define STEPO_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>
/* MHD_start_daemon is variadic and not imported; callers use MHD_start_daemon_va with withVaList. */
#endif
