// receiver-floor - the kernel's floor for receiving a tree of files, measured on this machine
// by scripts/bench: the system calls `ferry receive` makes for each file, from C, with no
// network, no protocol and no hashing. What is left between it and Ferry is Ferry's own work.
//
//   receiver-floor SRC DST THREADS
//
// SRC's tree is listed first (not timed): its folders and each file's size, in the byte order
// of their paths (for trees whose names have no byte below '/', the order `ferry send` walks
// them in). Then, timed: the folders are made
// under DST, and the files go in consecutive groups of 10 000, as `ferry send` offers them. In
// each group, THREADS threads do for every file what the receiver does — openat(O_CREAT|O_EXCL)
// in one staging folder, flock, pwrite the bytes, fsetxattr the sender's mark (its 32-byte key
// and the offered path), futimens, fsync for a file of 1 MiB or more, close,
// renameat2(RENAME_NOREPLACE) into place — and the group ends with a syncfs(2) waited for, as
// an offer's end does. A thread takes whole top-level folders of SRC (the way a receiver could
// spread its work); files directly in SRC are dealt out in turn, so in a flat tree the threads
// share the staging and the destination folder, and their figure shows what those folders'
// locks allow. The bytes written are a pool of the largest file's size, not SRC's: the cost of
// the calls does not depend on what the bytes are. Left out: the receiver's background syncfs
// every 2048 small files, which only starts the final one's work early.
//
// Prints one line: "FILES SECONDS SYNC" — the wall clock from the first mkdir to the end of
// the last syncfs, and of it the seconds the syncfs calls took.
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

enum { offer_files = 10000, large_file = 1 << 20, max_threads = 64 };

struct entry {
  char *path;      // relative to SRC
  long long size;  // -1 for a folder
  int owner;       // the thread that places it: its top-level folder's index, or a turn
};

static struct entry *entries;
static size_t count, capacity;
static size_t src_prefix, mark_prefix;
static char **tops;
static size_t top_count;
static long long largest;
static char *pool;
static int staging_fd, dst_fd, threads;
static size_t group_start, group_end;  // the files of the group being placed: [start, end)

static void die(const char *what) {
  fprintf(stderr, "receiver-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

static char *copy(const char *text, size_t length) {
  char *result = strndup(text, length);
  if (!result) die("memory");
  return result;
}

// The index of `rel`'s top-level folder (entries come sorted, each folder whole, so the last
// one seen is the one to compare with first); an entry directly in SRC takes the next turn.
static int owner_of(const char *rel, size_t *turn) {
  const char *slash = strchr(rel, '/');
  if (!slash) return (int)((*turn)++ % max_threads);
  size_t len = (size_t)(slash - rel);
  for (size_t i = top_count; i-- > 0;)
    if (strlen(tops[i]) == len && strncmp(tops[i], rel, len) == 0) return (int)i;
  tops = realloc(tops, (top_count + 1) * sizeof *tops);
  if (!tops) die("memory");
  tops[top_count] = copy(rel, len);
  return (int)top_count++;
}

// Gives each entry its owner, in the sorted order: the index of its top-level folder among
// SRC's top-level folders, or — for an entry directly in SRC — the next turn.
static void deal(void) {
  size_t turn = 0;
  for (size_t i = 0; i < count; i++) entries[i].owner = owner_of(entries[i].path, &turn);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)ftw;
  if (strlen(path) <= src_prefix) return 0;  // SRC itself
  if (type != FTW_D && type != FTW_F) return 0;
  const char *rel = path + src_prefix + 1;
  if (count == capacity) {
    capacity = capacity ? capacity * 2 : 1024;
    entries = realloc(entries, capacity * sizeof *entries);
    if (!entries) die("memory");
  }
  long long size = type == FTW_D ? -1 : (long long)st->st_size;
  entries[count] = (struct entry){copy(rel, strlen(rel)), size, 0};
  count++;
  if (size > largest) largest = size;
  return 0;
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static void *work(void *arg) {
  int me = (int)(intptr_t)arg;
  char staged[64], folder[4096];
  unsigned char mark[32 + 4096 + 256];
  memset(mark, 0x5a, sizeof mark);
  int folder_fd = -1;
  folder[0] = 0;
  for (size_t i = group_start; i < group_end; i++) {
    struct entry *e = &entries[i];
    if (e->size < 0 || e->owner % threads != me) continue;
    const char *slash = strrchr(e->path, '/');
    const char *base = slash ? slash + 1 : e->path;
    size_t len = slash ? (size_t)(slash - e->path) : 0;
    if (len >= sizeof folder) {
      errno = ENAMETOOLONG;
      die(e->path);
    }
    if (folder_fd < 0 || len != strlen(folder) || strncmp(folder, e->path, len) != 0) {
      if (folder_fd >= 0) close(folder_fd);
      memcpy(folder, e->path, len);
      folder[len] = 0;
      folder_fd = len ? openat(dst_fd, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : dup(dst_fd);
      if (folder_fd < 0) die(folder);
    }
    snprintf(staged, sizeof staged, "%d-%zu.part", me, i);
    int fd = openat(staging_fd, staged, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) die("openat");
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) die("flock");
    if (e->size > 0 && pwrite(fd, pool, (size_t)e->size, 0) != e->size) die("pwrite");
    size_t marked = 32 + mark_prefix + strlen(e->path);
    if (marked > sizeof mark) marked = sizeof mark;
    if (fsetxattr(fd, "user.ferry.placed", mark, marked, 0) != 0 && errno != ENOTSUP)
      die("fsetxattr");
    struct timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
    if (futimens(fd, times) != 0) die("futimens");
    if (e->size >= large_file && fsync(fd) != 0) die("fsync");
    if (close(fd) != 0) die("close");
    if (renameat2(staging_fd, staged, folder_fd, base, RENAME_NOREPLACE) != 0) die("renameat2");
  }
  if (folder_fd >= 0) close(folder_fd);
  return NULL;
}

static double since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: receiver-floor SRC DST THREADS\n");
    return 2;
  }
  threads = atoi(argv[3]);
  if (threads < 1 || threads > max_threads) {
    fprintf(stderr, "receiver-floor: THREADS is 1 to %d\n", max_threads);
    return 2;
  }
  char *src = copy(argv[1], strlen(argv[1]));
  while (strlen(src) > 1 && src[strlen(src) - 1] == '/') src[strlen(src) - 1] = 0;
  src_prefix = strlen(src);
  // The offered path starts with SRC's own name ("data/…"), as `ferry send SRC` offers it.
  const char *name = strrchr(src, '/');
  mark_prefix = strlen(name ? name + 1 : src) + 1;
  if (nftw(src, visit, 64, FTW_PHYS) != 0) die(src);
  qsort(entries, count, sizeof *entries, by_path);
  deal();
  pool = malloc(largest > 0 ? (size_t)largest : 1);
  if (!pool) die("memory");
  for (long long i = 0; i < largest; i++) pool[i] = (char)(i * 131 + 7);

  struct timespec start, synced;
  double syncing = 0;
  clock_gettime(CLOCK_MONOTONIC, &start);
  if (mkdir(argv[2], 0755) != 0 && errno != EEXIST) die(argv[2]);
  dst_fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dst_fd < 0) die(argv[2]);
  if (mkdirat(dst_fd, ".staging", 0700) != 0) die(".staging");
  staging_fd = openat(dst_fd, ".staging", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (staging_fd < 0) die(".staging");
  size_t files = 0;
  for (size_t i = 0; i < count; i++) {  // sorted: a folder comes before what it holds
    if (entries[i].size >= 0) {
      files++;
    } else if (mkdirat(dst_fd, entries[i].path, 0755) != 0) {
      die(entries[i].path);
    }
  }
  // Groups of offer_files files, each placed by the threads and then synced.
  for (group_start = 0; group_start < count; group_start = group_end) {
    size_t in_group = 0;
    for (group_end = group_start; group_end < count && in_group < offer_files; group_end++)
      if (entries[group_end].size >= 0) in_group++;
    pthread_t ids[max_threads];
    for (int t = 0; t < threads; t++)
      if (pthread_create(&ids[t], NULL, work, (void *)(intptr_t)t) != 0) die("pthread_create");
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &synced);
    if (syncfs(staging_fd) != 0) die("syncfs");
    syncing += since(&synced);
  }
  double seconds = since(&start);
  unlinkat(dst_fd, ".staging", AT_REMOVEDIR);
  printf("%zu %.3f %.3f\n", files, seconds, syncing);
  return 0;
}
