/*
 * fuxi-forker: the spawn helper's forking arm (agent/src/shell/forker.ts).
 *
 * A worker started from a Node.js process pays for Node's size: the fork copies the page tables of
 * tens of MB, the caller takes copy-on-write faults until the child has exec'd, and the exec tears
 * the copy down again. On the 2-core bench machine that was about 1 ms of the caller's CPU and 0.4 ms
 * more of the child's for each `/bin/true`, against 0.05-0.08 ms for the same fork from a small C
 * process. This program is that small process: the spawn helper (a Node process) lays out the
 * worker's directory, then hands the fork and exec to it; it reaps the children and reports how each
 * one ended. Linux only (signalfd); C99 and glibc, nothing else.
 *
 * Requests on stdin, one per record: a 4-byte little-endian length, then that many bytes of fields,
 * each ending with a NUL byte:
 *
 *     id uid gid cwd dir nprocs procs... nargv argv... nenv env...
 *
 * `uid` and `gid` are decimal or empty (the forker's own). `dir` is the worker's directory:
 * `stdout` and `stderr` are created there (exclusively, never through a symlink, owned by `uid`).
 * `procs` are `cgroup.procs` files the child joins before its exec. `argv[0]` is looked up in the
 * `PATH` of `env`. The child gets its own session, /dev/null as stdin, default signal handling.
 *
 * Replies on stdout, one line each (`R` first, before any request is read):
 *
 *     R                             ready
 *     S <id> <pid> <start time>     started (exec'd); the start time is field 22 of /proc/<pid>/stat
 *     N <id> <errno> <stage>        not started: nothing runs, the caller starts it its own way
 *     X <pid> <status>              a child ended: status = exit code, or 128 + the signal's number
 *                                   as a negative number (-9 for SIGKILL)
 *
 * When stdin ends, the forker reaps what it still has, then exits (replies no one reads are dropped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RECORD (16u << 20)
#define MAX_FIELDS 65536

extern char **environ;

static long running = 0;

/* Writes all of `s` to stdout; a reader that is gone is not an error (SIGPIPE is ignored). */
static void reply(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(STDOUT_FILENO, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

/* Field 22 of /proc/<pid>/stat (after the command name, which may hold spaces and parentheses). */
static void start_time(pid_t pid, char *out, size_t cap) {
  char path[64], buf[1024];
  out[0] = '\0';
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p) return;
  p += 2; /* ") " then field 3 (state) */
  for (int field = 3; field < 22 && p; field++) {
    p = strchr(p, ' ');
    if (p) p++;
  }
  if (!p) return;
  size_t len = strcspn(p, " ");
  if (len >= cap) return;
  memcpy(out, p, len);
  out[len] = '\0';
}

/* A new, empty file at dir/name, opened for writing: O_EXCL and O_NOFOLLOW, so never a symlink's target. */
static int create_fresh(const char *dir, const char *name) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

struct failure {
  int err;
  int stage;
};

enum { STAGE_CGROUP = 1, STAGE_STDIO = 2, STAGE_CWD = 3, STAGE_USER = 4, STAGE_EXEC = 5 };

/* In the child: report why it could not exec, and end. */
static void child_fail(int pipe_fd, int stage) {
  struct failure f = {errno, stage};
  ssize_t w = write(pipe_fd, &f, sizeof f);
  (void)w;
  _exit(127);
}

static void child(int pipe_fd, const char *cwd, long uid, long gid, char **procs, long nprocs, char **argv, char **envp,
                  int out_fd, int err_fd) {
  sigset_t none;
  sigemptyset(&none);
  for (int s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    signal(s, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, &none, NULL);
  setsid();
  char pid[32];
  int plen = snprintf(pid, sizeof pid, "%d", (int)getpid());
  for (long i = 0; i < nprocs; i++) {
    int fd = open(procs[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid, (size_t)plen) != plen) child_fail(pipe_fd, STAGE_CGROUP);
    close(fd);
  }
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) child_fail(pipe_fd, STAGE_STDIO);
  if (null_fd > 2) close(null_fd);
  if (chdir(cwd) != 0) child_fail(pipe_fd, STAGE_CWD);
  if (gid >= 0 || uid >= 0) {
    if (setgroups(0, NULL) != 0 && errno != EPERM) child_fail(pipe_fd, STAGE_USER);
    if (gid >= 0 && setgid((gid_t)gid) != 0) child_fail(pipe_fd, STAGE_USER);
    if (uid >= 0 && setuid((uid_t)uid) != 0) child_fail(pipe_fd, STAGE_USER);
  }
#ifdef SYS_close_range
  /* Nothing of the forker's but the three above reaches the worker (the failure pipe closes at exec). */
  syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
#endif
  environ = envp;
  execvp(argv[0], argv);
  child_fail(pipe_fd, STAGE_EXEC);
}

static long parse_id(const char *s) {
  if (!*s) return -1;
  char *end;
  long v = strtol(s, &end, 10);
  return *end ? -2 : v;
}

/* One request: fields[0..n). */
static void start(char **f, long n) {
  char line[256];
  long i = 0;
  if (n < 6) return;
  const char *id = f[i++];
  long uid = parse_id(f[i++]), gid = parse_id(f[i++]);
  const char *cwd = f[i++], *dir = f[i++];
  long nprocs = parse_id(f[i++]);
  if (uid < -1 || gid < -1 || nprocs < 0 || i + nprocs >= n) goto bad;
  char **procs = f + i;
  i += nprocs;
  long nargv = parse_id(f[i++]);
  if (nargv < 1 || i + nargv >= n) goto bad;
  char **argv = f + i;
  i += nargv;
  long nenv = parse_id(f[i++]);
  if (nenv < 0 || i + nenv != n) goto bad;
  char **envp = f + i;
  /* The fields are NUL-terminated in place; argv and env need a NULL after their last entry. */
  char **av = calloc((size_t)nargv + 1, sizeof *av), **ev = calloc((size_t)nenv + 1, sizeof *ev);
  if (!av || !ev) {
    free(av);
    free(ev);
    snprintf(line, sizeof line, "N %s %d 0\n", id, ENOMEM);
    reply(line);
    return;
  }
  memcpy(av, argv, (size_t)nargv * sizeof *av);
  memcpy(ev, envp, (size_t)nenv * sizeof *ev);

  int out_fd = create_fresh(dir, "stdout"), err_fd = out_fd < 0 ? -1 : create_fresh(dir, "stderr");
  int pipe_fds[2] = {-1, -1};
  struct failure fail = {0, 0};
  pid_t pid = -1;
  if (out_fd < 0 || err_fd < 0) {
    fail.err = errno;
    fail.stage = STAGE_STDIO;
  } else if (uid >= 0 && (fchown(out_fd, (uid_t)uid, (gid_t)gid) != 0 || fchown(err_fd, (uid_t)uid, (gid_t)gid) != 0)) {
    fail.err = errno;
    fail.stage = STAGE_USER;
  } else if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    fail.err = errno;
  } else {
    pid = fork();
    if (pid == 0) {
      close(pipe_fds[0]);
      child(pipe_fds[1], cwd, uid, gid, procs, nprocs, av, ev, out_fd, err_fd);
    }
    if (pid < 0) fail.err = errno;
    close(pipe_fds[1]);
    if (pid > 0) {
      ssize_t r;
      do r = read(pipe_fds[0], &fail, sizeof fail);
      while (r < 0 && errno == EINTR);
      if (r == (ssize_t)sizeof fail) {
        /* It never exec'd: reap it here, nothing of it is left. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        pid = -1;
      } else {
        fail.err = 0;
      }
    }
    close(pipe_fds[0]);
  }
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  free(av);
  free(ev);
  if (pid > 0) {
    char st[32];
    start_time(pid, st, sizeof st);
    running++;
    snprintf(line, sizeof line, "S %s %d %s\n", id, (int)pid, st);
  } else {
    /* What this call created is removed: the caller's own start makes them again. */
    char path[4096];
    if (out_fd >= 0 && (size_t)snprintf(path, sizeof path, "%s/stdout", dir) < sizeof path) unlink(path);
    if (err_fd >= 0 && (size_t)snprintf(path, sizeof path, "%s/stderr", dir) < sizeof path) unlink(path);
    snprintf(line, sizeof line, "N %s %d %d\n", id, fail.err ? fail.err : EIO, fail.stage);
  }
  reply(line);
  return;
bad:
  snprintf(line, sizeof line, "N %s %d 0\n", id, EINVAL);
  reply(line);
}

static void reap(void) {
  char line[64];
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    running--;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : 255;
    snprintf(line, sizeof line, "X %d %d\n", (int)pid, code);
    reply(line);
  }
}

/* Splits a record into its NUL-terminated fields; their count, or -1 when malformed. */
static long fields(char *rec, uint32_t len, char **out) {
  long n = 0;
  uint32_t at = 0;
  if (len == 0 || rec[len - 1] != '\0') return -1;
  while (at < len) {
    if (n >= MAX_FIELDS) return -1;
    out[n++] = rec + at;
    at += (uint32_t)strlen(rec + at) + 1;
  }
  return n;
}

int main(void) {
  /* Ctrl-C and hangups are the agent's, as for the spawn helper: the forker reaps on. */
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    perror("fuxi-forker: signalfd");
    return 1;
  }
  fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
  fcntl(STDOUT_FILENO, F_SETFD, FD_CLOEXEC);
  char **fieldv = malloc(MAX_FIELDS * sizeof *fieldv);
  size_t cap = 1 << 16, have = 0;
  char *buf = malloc(cap);
  if (!fieldv || !buf) return 1;
  reply("R\n"); /* ready: nothing read before this */
  int input_open = 1;
  while (input_open || running > 0) {
    struct pollfd p[2] = {{sfd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    if (poll(p, input_open ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
      }
      reap();
    }
    if (input_open && p[1].revents) {
      if (have == cap) {
        if (cap >= MAX_RECORD + 4) return 1;
        cap *= 2;
        char *grown = realloc(buf, cap);
        if (!grown) return 1;
        buf = grown;
      }
      ssize_t r = read(STDIN_FILENO, buf + have, cap - have);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        input_open = 0;
        continue;
      }
      have += (size_t)r;
      size_t at = 0;
      while (have - at >= 4) {
        uint32_t len = (uint32_t)(unsigned char)buf[at] | (uint32_t)(unsigned char)buf[at + 1] << 8 |
                       (uint32_t)(unsigned char)buf[at + 2] << 16 | (uint32_t)(unsigned char)buf[at + 3] << 24;
        if (len > MAX_RECORD) return 1;
        if (have - at - 4 < len) break;
        long n = fields(buf + at + 4, len, fieldv);
        if (n < 0) return 1;
        start(fieldv, n);
        at += 4 + (size_t)len;
      }
      memmove(buf, buf + at, have - at);
      have -= at;
    }
    /* A child that ended while this turn started others is reaped at the next poll (the signalfd stays readable). */
  }
  return 0;
}
