/* What the C API's test programs (tests/store/capi_*_test.c) share: checks that count
 * failures and print the library's last error, and a free loopback port. C11, header only:
 * each program includes it once. */
#ifndef GOSSIP_RDZV_TESTS_CAPI_CHECK_H
#define GOSSIP_RDZV_TESTS_CAPI_CHECK_H

#include <gossip_rdzv/gossip_rdzv.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(condition)                                                                \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #condition, gossip_rdzv_last_error());                                    \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

#define REQUIRE_OK(call)                                                       \
  do {                                                                         \
    int status_ = (call);                                                      \
    if (status_ != GOSSIP_RDZV_OK) {                                           \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call, \
              gossip_rdzv_status_name(status_), gossip_rdzv_last_error());     \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* A port nobody listens on right now: the OS picked it and we released it. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(fd, (struct sockaddr*)&address, sizeof address) != 0 ||
      getsockname(fd, (struct sockaddr*)&address, &length) != 0) {
    perror("free_port");
    exit(1);
  }
  close(fd);
  return ntohs(address.sin_port);
}

#endif /* GOSSIP_RDZV_TESTS_CAPI_CHECK_H */
