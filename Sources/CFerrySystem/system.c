#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "CFerrySystem.h"

int ferry_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

int ferry_syncfs(int fd) { return syncfs(fd); }

int ferry_start_writeback(int fd, off_t offset, off_t count) {
  return sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE);
}
