#ifndef STEPO_CPSEUDOTERMINAL_SHIM_H
#define STEPO_CPSEUDOTERMINAL_SHIM_H
/* What the benches need to run the real inbox in a pseudo-terminal: opening one, and setting
   its size (ioctl is variadic, so Swift cannot call it); and a thread kept on one core. */
/* posix_openpt, grantpt, unlockpt and ptsname are X/Open: glibc declares them only under
   _XOPEN_SOURCE, which this module cannot define (the C library's types would then differ from
   those Swift's Glibc module holds). Undeclared, C takes ptsname for a function returning int,
   and its pointer comes back cut to 32 bits: so they are declared here, as glibc does. */
#include <sys/ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
extern int posix_openpt(int flags);
extern int grantpt(int fd);
extern int unlockpt(int fd);
extern char *ptsname(int fd);

/* A new pseudo-terminal's controlling end (-1 on failure); its other end's path in `name`. */
static inline int stepo_open_pseudo_terminal(char *name, size_t size) {
    int fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (fd < 0) return -1;
    const char *path = (grantpt(fd) == 0 && unlockpt(fd) == 0) ? ptsname(fd) : NULL;
    if (path == NULL || strlen(path) >= size) { close(fd); return -1; }
    strcpy(name, path);
    return fd;
}
/* Keeps the calling thread on the CPUs of `mask` (`bytes` long): sched_setaffinity is glibc's
   only under _GNU_SOURCE, the system call is not. 0 on success. */
#include <sys/syscall.h>
static inline int stepo_pin_thread(const unsigned long *mask, size_t bytes) {
    return (int)syscall(SYS_sched_setaffinity, 0, bytes, mask);
}
/* glibc's POSIX_SPAWN_SETSID (2.26 and later), hidden from this header without _GNU_SOURCE. */
static inline short stepo_spawn_setsid(void) { return 0x80; }
static inline int stepo_set_window_size(int fd, unsigned short height, unsigned short width) {
    struct winsize size = { height, width, 0, 0 };
    return ioctl(fd, TIOCSWINSZ, &size);
}

#endif
