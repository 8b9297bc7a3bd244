/* The C API as a launcher in another language uses it: only <gossip_rdzv/gossip_rdzv.h>.
 * Forms a group of three nodes on loopback in this process, reads the assignment each node
 * computed, and uses the store through it. Exits non-zero with a message on any failure. */
#include "support/capi_check.h"

#define NODES 3

static gossip_rdzv_config* config_for(const char* seed, const char* listen, const char* name) {
  gossip_rdzv_config* config = gossip_rdzv_config_new();
  REQUIRE_OK(gossip_rdzv_config_set(config, "run_id", "capi-test"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "seeds", seed));
  REQUIRE_OK(gossip_rdzv_config_set(config, "listen", listen));
  REQUIRE_OK(gossip_rdzv_config_set(config, "nnodes", "3"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "nproc_per_node", "2"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "timing", "local"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "join_timeout", "20s"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "hostname", name));
  return config;
}

static void config_errors_are_codes_with_messages(void) {
  gossip_rdzv_config* config = gossip_rdzv_config_new();
  CHECK(gossip_rdzv_config_set(config, "nnodes", "four") == GOSSIP_RDZV_E_USAGE);
  CHECK(strstr(gossip_rdzv_last_error(), "nnodes") != NULL);
  CHECK(gossip_rdzv_config_set(config, "no_such_field", "1") == GOSSIP_RDZV_E_USAGE);
  CHECK(strstr(gossip_rdzv_last_error(), "no_such_field") != NULL);
  /* No seed: refused when the node is created, naming the fix. */
  gossip_rdzv_node* node = NULL;
  CHECK(gossip_rdzv_node_new(config, &node) == GOSSIP_RDZV_E_USAGE);
  CHECK(node == NULL);
  CHECK(strstr(gossip_rdzv_last_error(), "seed") != NULL);
  CHECK(gossip_rdzv_node_wait(NULL, NULL) == GOSSIP_RDZV_E_USAGE);
  gossip_rdzv_config_free(config);
}

/* A key file that cannot be read is refused where it is given, naming it. */
static void missing_key_file_is_a_usage_error(void) {
  const char* missing = "/nonexistent/gossip-rdzv/job.key";
  gossip_rdzv_config* config = gossip_rdzv_config_new();
  CHECK(gossip_rdzv_config_set(config, "key_file", missing) == GOSSIP_RDZV_E_USAGE);
  CHECK(strstr(gossip_rdzv_last_error(), missing) != NULL);
  REQUIRE_OK(gossip_rdzv_config_set(config, "key_file", ""));
  gossip_rdzv_config_free(config);

  gossip_rdzv_store* store = NULL;
  REQUIRE_OK(gossip_rdzv_store_new("127.0.0.1:1", "", 1000, &store));
  CHECK(gossip_rdzv_store_set_key_file(store, missing) == GOSSIP_RDZV_E_USAGE);
  CHECK(strstr(gossip_rdzv_last_error(), missing) != NULL);
  CHECK(gossip_rdzv_store_set_key_file(store, NULL) == GOSSIP_RDZV_E_USAGE);
  REQUIRE_OK(gossip_rdzv_store_set_key_file(store, ""));
  gossip_rdzv_store_free(store);
}

int main(void) {
  config_errors_are_codes_with_messages();
  missing_key_file_is_a_usage_error();

  /* The first node listens on a free port and names itself as the seed, as
   * `gossip-rdzv join --seed node0:PORT` does on node0. */
  gossip_rdzv_node* nodes[NODES] = {0};
  char seed[64];
  char listen[64];
  snprintf(seed, sizeof seed, "127.0.0.1:%d", free_port());
  snprintf(listen, sizeof listen, "%s", seed);
  {
    gossip_rdzv_config* config = config_for(seed, listen, "c0");
    REQUIRE_OK(gossip_rdzv_node_new(config, &nodes[0]));
    gossip_rdzv_config_free(config);
    REQUIRE_OK(gossip_rdzv_node_start(nodes[0]));
    CHECK(strcmp(gossip_rdzv_node_endpoint(nodes[0]), seed) == 0);
  }
  for (int i = 1; i < NODES; ++i) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    gossip_rdzv_config* config = config_for(seed, "127.0.0.1:0", name);
    REQUIRE_OK(gossip_rdzv_node_new(config, &nodes[i]));
    gossip_rdzv_config_free(config);
    REQUIRE_OK(gossip_rdzv_node_start(nodes[i]));
  }

  gossip_rdzv_assignment* assignments[NODES] = {0};
  for (int i = 0; i < NODES; ++i) REQUIRE_OK(gossip_rdzv_node_wait(nodes[i], &assignments[i]));

  for (int i = 0; i < NODES; ++i) {
    const gossip_rdzv_assignment* a = assignments[i];
    CHECK(gossip_rdzv_assignment_nnodes(a) == NODES);
    CHECK(gossip_rdzv_assignment_world_size(a) == 2 * NODES);
    CHECK(strcmp(gossip_rdzv_assignment_run_id(a), "capi-test") == 0);
    CHECK(strcmp(gossip_rdzv_assignment_master_addr(a), "127.0.0.1") == 0);
    CHECK(gossip_rdzv_assignment_master_port(a) ==
          gossip_rdzv_assignment_master_port(assignments[0]));
    uint32_t me = gossip_rdzv_assignment_my_node_rank(a);
    CHECK(strcmp(gossip_rdzv_assignment_node_endpoint(a, me),
                 gossip_rdzv_node_endpoint(nodes[i])) == 0);
    CHECK(gossip_rdzv_assignment_node_rank_offset(a, me) == 2 * me);
    CHECK(gossip_rdzv_assignment_node_nproc(a, me) == 2);
    CHECK(strcmp(gossip_rdzv_assignment_node_host(a, NODES), "") == 0); /* out of range */
    char* env = NULL;
    REQUIRE_OK(gossip_rdzv_assignment_env(a, 1, &env));
    char expected[32];
    snprintf(expected, sizeof expected, "RANK=%u\n", 2 * me + 1);
    CHECK(strstr(env, expected) != NULL);
    CHECK(strstr(env, "WORLD_SIZE=6\n") != NULL);
    gossip_rdzv_free(env);
    CHECK(gossip_rdzv_assignment_env(a, 2, &env) == GOSSIP_RDZV_E_USAGE);
  }

  /* The store: set through node 0's agent, read through node 2's. */
  gossip_rdzv_store* writer = NULL;
  gossip_rdzv_store* reader = NULL;
  REQUIRE_OK(gossip_rdzv_store_from_node(nodes[0], 10000, &writer));
  REQUIRE_OK(gossip_rdzv_store_from_node(nodes[2], 10000, &reader));
  REQUIRE_OK(gossip_rdzv_store_set(writer, "hello", "world", 5));
  void* value = NULL;
  size_t length = 0;
  REQUIRE_OK(gossip_rdzv_store_get(reader, "hello", -1, &value, &length));
  CHECK(length == 5 && memcmp(value, "world", 5) == 0);
  gossip_rdzv_free(value);
  int64_t counter = 0;
  REQUIRE_OK(gossip_rdzv_store_add(writer, "n", 2, &counter));
  REQUIRE_OK(gossip_rdzv_store_add(reader, "n", 3, &counter));
  CHECK(counter == 5);
  const char* keys[] = {"hello", "n"};
  int all_set = 0;
  REQUIRE_OK(gossip_rdzv_store_check(reader, keys, 2, &all_set));
  CHECK(all_set == 1);
  REQUIRE_OK(gossip_rdzv_store_wait(reader, keys, 2, -1));
  int64_t count = 0;
  REQUIRE_OK(gossip_rdzv_store_num_keys(reader, &count));
  CHECK(count == 2);
  /* A key nobody sets: a timeout code and a message naming the key. */
  int status = gossip_rdzv_store_get(reader, "missing-key", 200, &value, &length);
  CHECK(status == GOSSIP_RDZV_E_STORE_TIMEOUT);
  CHECK(strstr(gossip_rdzv_last_error(), "missing-key") != NULL);
  CHECK(strcmp(gossip_rdzv_status_name(status), "store_timeout") == 0);
  /* Every member's load: one line per node, five fields; its requests are not counted. */
  char* stats = NULL;
  REQUIRE_OK(gossip_rdzv_store_member_stats(reader, &stats));
  int lines = 0;
  unsigned long long served_total = 0;
  for (const char* line = stats; *line != '\0'; line = strchr(line, '\n') + 1) {
    char member[64];
    unsigned long long served = 0, clients = 0, forwarded = 0, held = 0;
    CHECK(sscanf(line, "%63s %llu %llu %llu %llu", member, &served, &clients, &forwarded, &held) ==
          5);
    served_total += served;
    ++lines;
    if (strchr(line, '\n') == NULL) break;
  }
  CHECK(lines == NODES);
  CHECK(served_total > 0);
  gossip_rdzv_free(stats);
  gossip_rdzv_store_free(writer);
  gossip_rdzv_store_free(reader);

  for (int i = 0; i < NODES; ++i) {
    gossip_rdzv_assignment_free(assignments[i]);
    gossip_rdzv_node_free(nodes[i]);
  }
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("C API: %d nodes agreed, store works\n", NODES);
  return 0;
}
