// receiver-floor - the kernel's floor for receiving a tree of small files, measured on this
// machine by scripts/bench: the system calls `ferry receive` makes for each file, from C, with
// no network, no protocol and no hashing. What is left between it and Ferry is Ferry's own work.
//
//   receiver-floor SRC DST THREADS
//
// SRC's tree is listed first (not timed): its folders and each file's size. Then, timed: the
// folders are made under DST, and THREADS threads (each with folders of its own, the way a
// receiver could spread its work) do for every file what the receiver does —
// openat(O_CREAT|O_EXCL) in a staging folder, flock, pwrite the bytes, fsetxattr the sender's
// mark, futimens, close, renameat2(RENAME_NOREPLACE) into place — and the run ends with one
// syncfs(2), as an offer's end does. The bytes written are a pool of the largest file's size,
// not SRC's: the cost of the calls does not depend on what the bytes are.
//
// Prints one line: "FILES SECONDS SYNC" — the wall clock from the first mkdir to the end of
// syncfs, and of it the seconds syncfs took.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

struct entry {
  char *path;      // relative to SRC
  long long size;  // -1 for a folder
  int top;         // its top-level folder's index (the unit a thread owns)
};

static struct entry *entries;
static size_t count, capacity;
static size_t src_prefix;
static char **tops;
static size_t top_count;
static long long largest;
static char *pool;
static int staging_fd, dst_fd, threads;

static void die(const char *what) {
  fprintf(stderr, "receiver-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

// The index of `rel`'s top-level folder; a file directly in SRC gets one of its own (folders
// come in nftw's order, each whole, so the last one seen is the one to compare with first).
static int top_index(const char *rel) {
  const char *slash = strchr(rel, '/');
  if (!slash) return (int)(count % 64);
  size_t len = (size_t)(slash - rel);
  for (size_t i = top_count; i-- > 0;)
    if (strlen(tops[i]) == len && strncmp(tops[i], rel, len) == 0) return (int)i;
  tops = realloc(tops, (top_count + 1) * sizeof *tops);
  if (!tops) die("memory");
  tops[top_count] = strndup(rel, len);
  return (int)top_count++;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)ftw;
  if (strlen(path) <= src_prefix) return 0;  // SRC itself
  const char *rel = path + src_prefix + 1;
  if (count == capacity) {
    capacity = capacity ? capacity * 2 : 1024;
    entries = realloc(entries, capacity * sizeof *entries);
    if (!entries) die("memory");
  }
  long long size = type == FTW_D ? -1 : (long long)st->st_size;
  if (type != FTW_D && type != FTW_F) return 0;
  entries[count++] = (struct entry){strdup(rel), size, top_index(rel)};
  if (size > largest) largest = size;
  return 0;
}

static void *work(void *arg) {
  int me = (int)(intptr_t)arg;
  char staged[64], folder[4096];
  unsigned char mark[40];
  memset(mark, 0x5a, sizeof mark);
  int folder_fd = -1;
  folder[0] = 0;
  for (size_t i = 0; i < count; i++) {
    struct entry *e = &entries[i];
    if (e->size < 0 || e->top % threads != me) continue;
    const char *slash = strrchr(e->path, '/');
    const char *base = slash ? slash + 1 : e->path;
    size_t len = slash ? (size_t)(slash - e->path) : 0;
    if (folder_fd < 0 || len != strlen(folder) || strncmp(folder, e->path, len) != 0) {
      if (folder_fd >= 0) close(folder_fd);
      memcpy(folder, e->path, len);
      folder[len] = 0;
      folder_fd = len ? openat(dst_fd, folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : dup(dst_fd);
      if (folder_fd < 0) die(folder);
    }
    snprintf(staged, sizeof staged, "%d-%zu.part", me, i);
    int fd = openat(staging_fd, staged, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) die("openat");
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) die("flock");
    if (e->size > 0 && pwrite(fd, pool, (size_t)e->size, 0) != e->size) die("pwrite");
    if (fsetxattr(fd, "user.ferry.placed", mark, sizeof mark, 0) != 0 && errno != ENOTSUP)
      die("fsetxattr");
    struct timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
    if (futimens(fd, times) != 0) die("futimens");
    if (close(fd) != 0) die("close");
    if (renameat2(staging_fd, staged, folder_fd, base, RENAME_NOREPLACE) != 0) die("renameat2");
  }
  if (folder_fd >= 0) close(folder_fd);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: receiver-floor SRC DST THREADS\n");
    return 2;
  }
  threads = atoi(argv[3]);
  if (threads < 1 || threads > 64) {
    fprintf(stderr, "receiver-floor: THREADS is 1 to 64\n");
    return 2;
  }
  src_prefix = strlen(argv[1]);
  if (nftw(argv[1], visit, 64, FTW_PHYS) != 0) die(argv[1]);
  pool = malloc(largest > 0 ? (size_t)largest : 1);
  if (!pool) die("memory");
  for (long long i = 0; i < largest; i++) pool[i] = (char)(i * 131 + 7);

  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  if (mkdir(argv[2], 0755) != 0 && errno != EEXIST) die(argv[2]);
  dst_fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dst_fd < 0) die(argv[2]);
  if (mkdirat(dst_fd, ".staging", 0700) != 0) die(".staging");
  staging_fd = openat(dst_fd, ".staging", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (staging_fd < 0) die(".staging");
  size_t files = 0;
  for (size_t i = 0; i < count; i++) {  // nftw lists a folder before what it holds
    if (entries[i].size >= 0) {
      files++;
    } else if (mkdirat(dst_fd, entries[i].path, 0755) != 0) {
      die(entries[i].path);
    }
  }
  pthread_t ids[64];
  for (int t = 0; t < threads; t++)
    if (pthread_create(&ids[t], NULL, work, (void *)(intptr_t)t) != 0) die("pthread_create");
  for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
  struct timespec written;
  clock_gettime(CLOCK_MONOTONIC, &written);
  if (syncfs(staging_fd) != 0) die("syncfs");
  clock_gettime(CLOCK_MONOTONIC, &end);
  unlinkat(dst_fd, ".staging", AT_REMOVEDIR);
  printf("%zu %.3f %.3f\n", files,
         (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9,
         (double)(end.tv_sec - written.tv_sec) + (double)(end.tv_nsec - written.tv_nsec) / 1e9);
  return 0;
}
