/* A C program built with `pkg-config --cflags --libs gossip_rdzv` against the installed
 * .deb (tests/package/test_deb.py): one node that is its own seed agrees on a view of one and
 * prints its rank-0 environment.
 *   pkgconfig_app SEED_HOST:PORT */
#include <gossip_rdzv/gossip_rdzv.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    int status_ = (call);                                                      \
    if (status_ != GOSSIP_RDZV_OK) {                                           \
      fprintf(stderr, "%s: %s: %s\n", #call, gossip_rdzv_status_name(status_), \
              gossip_rdzv_last_error());                                       \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
    return 2;
  }
  gossip_rdzv_config* config = gossip_rdzv_config_new();
  CHECK(gossip_rdzv_config_set(config, "run_id", "pkgconfig-app"));
  CHECK(gossip_rdzv_config_set(config, "seeds", argv[1]));
  CHECK(gossip_rdzv_config_set(config, "listen", argv[1]));
  CHECK(gossip_rdzv_config_set(config, "nnodes", "1"));
  CHECK(gossip_rdzv_config_set(config, "timing", "local"));
  CHECK(gossip_rdzv_config_set(config, "join_timeout", "20s"));
  gossip_rdzv_node* node = NULL;
  CHECK(gossip_rdzv_node_new(config, &node));
  gossip_rdzv_config_free(config);
  CHECK(gossip_rdzv_node_start(node));
  gossip_rdzv_assignment* assignment = NULL;
  CHECK(gossip_rdzv_node_wait(node, &assignment));
  char* env = NULL;
  CHECK(gossip_rdzv_assignment_env(assignment, 0, &env));
  fputs(env, stdout);
  gossip_rdzv_free(env);
  gossip_rdzv_assignment_free(assignment);
  gossip_rdzv_node_finish(node);
  gossip_rdzv_node_free(node);
  return 0;
}
