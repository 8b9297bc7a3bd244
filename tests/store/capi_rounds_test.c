/* The C API's elastic round calls as a launcher in another language uses them: only
 * <gossip_rdzv/gossip_rdzv.h>. Their errors (a node whose job is not elastic, calls before a
 * commit or in the wrong order, NULL arguments), then three elastic nodes in this process:
 * one reports its workers failed and every node gets round 1 with the same assignment; one
 * node stops and the two others get a round without it; all report their workers finished
 * and the job finishes; in a second job one node reports its last failure and the other is
 * told which node, rank and status ended the job. Exits non-zero with a message on any failure. */
#include "support/capi_check.h"

#define NODES 3

/* A usage error whose message contains `words`. */
#define CHECK_USAGE(call, words)                              \
  do {                                                        \
    CHECK((call) == GOSSIP_RDZV_E_USAGE);                     \
    CHECK(strstr(gossip_rdzv_last_error(), (words)) != NULL); \
  } while (0)

static gossip_rdzv_node* new_node(const char* seed, const char* listen, const char* nnodes,
                                  const char* elastic) {
  gossip_rdzv_config* config = gossip_rdzv_config_new();
  REQUIRE_OK(gossip_rdzv_config_set(config, "run_id", "capi-rounds"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "seeds", seed));
  REQUIRE_OK(gossip_rdzv_config_set(config, "listen", listen));
  REQUIRE_OK(gossip_rdzv_config_set(config, "nnodes", nnodes));
  REQUIRE_OK(gossip_rdzv_config_set(config, "last_call", "500ms"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "timing", "local"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "join_timeout", "60s"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "elastic", elastic));
  gossip_rdzv_node* node = NULL;
  REQUIRE_OK(gossip_rdzv_node_new(config, &node));
  gossip_rdzv_config_free(config);
  return node;
}

/* The nodes of `a`, by endpoint, as one string: equal strings mean the same view. */
static void view_of(const gossip_rdzv_assignment* a, char* out, size_t size) {
  out[0] = '\0';
  for (uint32_t i = 0; i < gossip_rdzv_assignment_nnodes(a); ++i) {
    strncat(out, gossip_rdzv_assignment_node_endpoint(a, i), size - strlen(out) - 2);
    strncat(out, ",", size - strlen(out) - 1);
  }
}

static void errors_are_usage_with_messages(void) {
  gossip_rdzv_config* config = gossip_rdzv_config_new();
  CHECK_USAGE(gossip_rdzv_config_set(config, "elastic", "yes"), "elastic");
  REQUIRE_OK(gossip_rdzv_config_set(config, "elastic", "true"));
  REQUIRE_OK(gossip_rdzv_config_set(config, "elastic", "0"));
  gossip_rdzv_config_free(config);

  /* NULL handles and outputs. */
  int flag = 7;
  char* text = (char*)"untouched";
  gossip_rdzv_assignment* next = (gossip_rdzv_assignment*)&flag;
  CHECK_USAGE(gossip_rdzv_node_round_over(NULL, NULL, &flag), "NULL");
  CHECK_USAGE(gossip_rdzv_node_failure_explained(NULL, NULL, &flag), "NULL");
  CHECK(flag == 0);
  flag = 7;
  CHECK_USAGE(gossip_rdzv_node_round_change(NULL, &text), "NULL");
  CHECK(text == NULL);
  CHECK_USAGE(gossip_rdzv_node_wait_next(NULL, NULL, &next), "NULL");
  CHECK(next == NULL);
  CHECK_USAGE(gossip_rdzv_node_report_workers_failed(NULL), "NULL");
  CHECK_USAGE(gossip_rdzv_node_report_workers_finished(NULL), "NULL");
  CHECK_USAGE(gossip_rdzv_node_wait_job_finished(NULL, 0, &flag), "NULL");
  CHECK(flag == 0);

  /* A job that agrees once has no rounds: every round call says so. */
  char seed[64];
  snprintf(seed, sizeof seed, "127.0.0.1:%d", free_port());
  gossip_rdzv_node* once = new_node(seed, seed, "1", "0");
  REQUIRE_OK(gossip_rdzv_node_start(once));
  gossip_rdzv_assignment* a = NULL;
  REQUIRE_OK(gossip_rdzv_node_wait(once, &a));
  CHECK_USAGE(gossip_rdzv_node_round_over(once, a, &flag), "not elastic");
  CHECK_USAGE(gossip_rdzv_node_round_over(once, NULL, &flag), "NULL");
  CHECK_USAGE(gossip_rdzv_node_round_over(once, a, NULL), "NULL");
  CHECK_USAGE(gossip_rdzv_node_failure_explained(once, a, &flag), "not elastic");
  CHECK_USAGE(gossip_rdzv_node_failure_explained(once, a, NULL), "NULL");
  CHECK_USAGE(gossip_rdzv_node_round_change(once, &text), "not elastic");
  CHECK_USAGE(gossip_rdzv_node_wait_next(once, a, &next), "not elastic");
  CHECK_USAGE(gossip_rdzv_node_report_workers_failed(once), "not elastic");
  CHECK_USAGE(gossip_rdzv_node_report_workers_finished(once), "not elastic");
  CHECK_USAGE(gossip_rdzv_node_wait_job_finished(once, 0, &flag), "not elastic");
  gossip_rdzv_node_free(once);

  /* An elastic node before start and before its first commit (it waits for a second node
   * that never comes). */
  snprintf(seed, sizeof seed, "127.0.0.1:%d", free_port());
  gossip_rdzv_node* early = new_node(seed, seed, "2", "1");
  CHECK_USAGE(gossip_rdzv_node_report_workers_finished(early), "start");
  CHECK_USAGE(gossip_rdzv_node_report_workers_failed(early), "not committed");
  REQUIRE_OK(gossip_rdzv_node_start(early));
  CHECK_USAGE(gossip_rdzv_node_report_workers_failed(early), "not committed");
  CHECK_USAGE(gossip_rdzv_node_wait_next(early, a, NULL), "NULL");
  CHECK_USAGE(gossip_rdzv_node_wait_job_finished(early, 0, &flag), "report_workers_finished");
  REQUIRE_OK(gossip_rdzv_node_round_change(early, &text));
  CHECK(text == NULL); /* still the first round */
  REQUIRE_OK(gossip_rdzv_node_report_workers_finished(early));
  CHECK_USAGE(gossip_rdzv_node_report_workers_failed(early), "finished");
  CHECK_USAGE(gossip_rdzv_node_wait_job_finished(early, -1, &flag), "negative");
  gossip_rdzv_node_free(early);
  gossip_rdzv_assignment_free(a);
}

/* Two nodes; one reports its last failure: the other's wait_next fails with E_JOB_OVER and
 * job_failure names the node, rank and status. */
static void a_reported_job_failure_reaches_the_other_node(void) {
  int failed = 7, status = 7;
  uint32_t rank = 7;
  char* message = (char*)"untouched";
  CHECK_USAGE(gossip_rdzv_node_report_job_failed(NULL, 0, 1), "NULL");
  CHECK_USAGE(gossip_rdzv_node_job_failure(NULL, &failed, &rank, &status, &message), "NULL");

  char seed[64];
  snprintf(seed, sizeof seed, "127.0.0.1:%d", free_port());
  gossip_rdzv_node* nodes[2] = {new_node(seed, seed, "2", "1"),
                                new_node(seed, "127.0.0.1:0", "2", "1")};
  CHECK_USAGE(gossip_rdzv_node_report_job_failed(nodes[0], 0, 1), "start");
  gossip_rdzv_assignment* a[2] = {0};
  for (int i = 0; i < 2; ++i) REQUIRE_OK(gossip_rdzv_node_start(nodes[i]));
  for (int i = 0; i < 2; ++i) REQUIRE_OK(gossip_rdzv_node_wait(nodes[i], &a[i]));
  CHECK(gossip_rdzv_node_listed_as_seed(nodes[0]) == 1);
  CHECK(gossip_rdzv_node_listed_as_seed(nodes[1]) == 0);
  CHECK(gossip_rdzv_node_listed_as_seed(NULL) == 0);
  REQUIRE_OK(gossip_rdzv_node_job_failure(nodes[1], &failed, &rank, &status, &message));
  CHECK(failed == 0 && message == NULL);
  /* Both still listen: a failure now would be the node's own. */
  int explained = 7;
  REQUIRE_OK(gossip_rdzv_node_failure_explained(nodes[1], a[1], &explained));
  CHECK(explained == 0);

  REQUIRE_OK(gossip_rdzv_node_report_job_failed(nodes[0], 1, 7));
  CHECK_USAGE(gossip_rdzv_node_report_workers_failed(nodes[0]), "left the job");
  gossip_rdzv_assignment* next = NULL;
  CHECK(gossip_rdzv_node_wait_next(nodes[1], a[1], &next) == GOSSIP_RDZV_E_JOB_OVER);
  CHECK(next == NULL);
  int over = 0;
  REQUIRE_OK(gossip_rdzv_node_round_over(nodes[1], a[1], &over));
  CHECK(over == 1);
  REQUIRE_OK(gossip_rdzv_node_job_failure(nodes[1], &failed, &rank, &status, &message));
  CHECK(failed == 1 && rank == 1 && status == 7);
  CHECK(message != NULL && strstr(message, gossip_rdzv_node_endpoint(nodes[0])) != NULL);
  gossip_rdzv_free(message);
  int finished = 0;
  REQUIRE_OK(gossip_rdzv_node_wait_job_finished(nodes[0], 0, &finished));
  for (int i = 0; i < 2; ++i) {
    gossip_rdzv_assignment_free(a[i]);
    gossip_rdzv_node_free(nodes[i]);
  }
}

int main(void) {
  errors_are_usage_with_messages();

  gossip_rdzv_node* nodes[NODES] = {0};
  char seed[64];
  snprintf(seed, sizeof seed, "127.0.0.1:%d", free_port());
  nodes[0] = new_node(seed, seed, "2:3", "1");
  for (int i = 1; i < NODES; ++i) nodes[i] = new_node(seed, "127.0.0.1:0", "2:3", "1");
  for (int i = 0; i < NODES; ++i) REQUIRE_OK(gossip_rdzv_node_start(nodes[i]));

  /* Round 0 with every node (the last call waits for the third). Nodes that committed a
   * smaller view first are moved on by the arrival: wait_next until all three are in. */
  gossip_rdzv_assignment* a[NODES] = {0};
  for (int i = 0; i < NODES; ++i) {
    REQUIRE_OK(gossip_rdzv_node_wait(nodes[i], &a[i]));
    while (gossip_rdzv_assignment_nnodes(a[i]) < NODES) {
      gossip_rdzv_assignment* next = NULL;
      REQUIRE_OK(gossip_rdzv_node_wait_next(nodes[i], a[i], &next));
      gossip_rdzv_assignment_free(a[i]);
      a[i] = next;
    }
  }
  const uint32_t first = gossip_rdzv_assignment_round(a[0]);
  for (int i = 0; i < NODES; ++i) CHECK(gossip_rdzv_assignment_round(a[i]) == first);
  int over = 1;
  REQUIRE_OK(gossip_rdzv_node_round_over(nodes[0], a[0], &over));
  CHECK(over == 0);

  /* Node 1's workers fail: every node moves to the next round, with the same view. */
  REQUIRE_OK(gossip_rdzv_node_report_workers_failed(nodes[1]));
  char views[NODES][512];
  for (int i = 0; i < NODES; ++i) {
    gossip_rdzv_assignment* next = NULL;
    REQUIRE_OK(gossip_rdzv_node_wait_next(nodes[i], a[i], &next));
    REQUIRE_OK(gossip_rdzv_node_round_over(nodes[i], a[i], &over));
    CHECK(over == 1);
    CHECK(gossip_rdzv_assignment_round(next) == first + 1);
    CHECK(gossip_rdzv_assignment_nnodes(next) == NODES);
    view_of(next, views[i], sizeof views[i]);
    gossip_rdzv_assignment_free(a[i]);
    a[i] = next;
    char* change = NULL;
    REQUIRE_OK(gossip_rdzv_node_round_change(nodes[i], &change));
    CHECK(change != NULL && strstr(change, "round") != NULL);
    gossip_rdzv_free(change);
  }
  CHECK(strcmp(views[0], views[1]) == 0 && strcmp(views[1], views[2]) == 0);

  /* Node 2 stops (its process would have died): the others form a round without it. */
  char gone[128];
  snprintf(gone, sizeof gone, "%s", gossip_rdzv_node_endpoint(nodes[2]));
  gossip_rdzv_node_free(nodes[2]);
  nodes[2] = NULL;
  for (int i = 0; i < 2; ++i) {
    gossip_rdzv_assignment* next = NULL;
    REQUIRE_OK(gossip_rdzv_node_wait_next(nodes[i], a[i], &next));
    CHECK(gossip_rdzv_assignment_nnodes(next) == 2);
    CHECK(gossip_rdzv_assignment_round(next) > first + 1);
    view_of(next, views[i], sizeof views[i]);
    CHECK(strstr(views[i], gone) == NULL);
    gossip_rdzv_assignment_free(a[i]);
    a[i] = next;
  }
  CHECK(strcmp(views[0], views[1]) == 0);

  /* Both report their workers finished: the job finishes. */
  for (int i = 0; i < 2; ++i) REQUIRE_OK(gossip_rdzv_node_report_workers_finished(nodes[i]));
  for (int i = 0; i < 2; ++i) {
    int finished = 0;
    REQUIRE_OK(gossip_rdzv_node_wait_job_finished(nodes[i], 30000, &finished));
    CHECK(finished == 1);
  }

  for (int i = 0; i < NODES; ++i) {
    gossip_rdzv_assignment_free(a[i]);
    gossip_rdzv_node_free(nodes[i]);
  }
  a_reported_job_failure_reaches_the_other_node();
  if (failures == 0) printf("capi_rounds_test: ok\n");
  return failures == 0 ? 0 : 1;
}
