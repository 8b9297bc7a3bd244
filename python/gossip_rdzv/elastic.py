"""torchrun without a store host: a rendezvous handler for torch.distributed.elastic.

torchrun's c10d rendezvous keeps its state in one TCPStore on the --rdzv_endpoint host; when
that host dies, every agent of the job fails with RendezvousConnectionError. The `gossip`
backend keeps torchrun's agent, flags and restarts, and replaces that store host with the
nodes' own agreement: each agent runs a gossip_rdzv.Node (elastic rounds, docs/protocol.md),
--rdzv_endpoint is the seed list, and the store torchrun's agents share is the job's
master-less store (docs/store.md). `python3 -m gossip_rdzv.run` registers it and runs
torchrun (gossip_rdzv/run.py):

    /usr/bin/python3 -m gossip_rdzv.run --nnodes 2:4 --nproc_per_node 8 --max_restarts 3 \\
        --rdzv_endpoint node0:29400,node1:29400,node2:29400 --rdzv_id job42 train.py

How torchrun's calls map onto the rounds of a Node:

- next_rendezvous(): the first call starts the node and waits for round 0. A later call comes
  after torchrun stopped its workers: if the job had not moved on, this node's workers failed,
  so it reports that (every node moves to the next round); then it waits for the next round.
  It returns the round's store, this node's rank in the round and the number of nodes.
- num_nodes_waiting(): 1 once the job moved past this node's round (a node arrived below MAX,
  a member died or its workers failed), else 0; torchrun then restarts its workers without
  spending a restart, as with the c10d backend. torchrun counts restarts per agent, so after a
  worker failure TORCHELASTIC_RESTART_COUNT can differ between nodes of the same round (an
  agent whose own workers failed on the broken group spent a restart; one told first that
  the job moved on did not); `gossip-rdzv join -- CMD` numbers the rounds for every node.
- is_closed(): set_closed() was called here, or another node ended the job.
- shutdown(): this node's part of the job is over; the others do not take its exit for a
  crash. torchrun does not tell its handler whether its workers succeeded, so a job whose
  restarts ran out on one node ends on the others by torchrun's own rules (their workers'
  collectives fail), as with the c10d backend.

The rank-0 agent publishes MASTER_ADDR for the workers' TCPStore; torchrun writes its host
name (socket.getfqdn()), which other machines often cannot resolve or which resolves to
127.0.1.1 on Debian. Through this backend's store the address is the one node rank 0
advertised in the round, which its peers have reached (docs/troubleshooting.md).

Options: torchrun's --rdzv_conf KEY=VALUE,... takes the fields of gossip_rdzv.Node (listen,
advertise, key_file, join_timeout, last_call, timing, hostname, node_rank, nproc_per_node);
torchrun's own `timeout` (--rdzv_timeout, seconds) is the join timeout unless join_timeout
is given, and --local_addr (torch 2.0 and later) is the advertised address.
"""

from torch.distributed.elastic.rendezvous import (RendezvousClosedError, RendezvousError,
                                                  RendezvousHandler, RendezvousParameters,
                                                  RendezvousTimeoutError)
from torch.distributed.elastic.rendezvous.registry import handler_registry

from . import Node
from .errors import GossipRdzvError
from .torch import GossipRdzvStore

__all__ = ["BACKEND", "GossipRendezvousHandler", "create_handler", "register"]

BACKEND = "gossip"

# --rdzv_conf keys passed to the Node as they are.
_NODE_FIELDS = ("listen", "advertise", "key_file", "timing", "hostname", "node_rank",
                "nproc_per_node")
# Durations: a bare number is seconds, as torchrun's own options count them.
_DURATIONS = {"join_timeout": "join_timeout", "last_call": "last_call",
              "last_call_timeout": "last_call"}
# Keys torchrun or its c10d backend put into the configuration that mean nothing here.
_IGNORED = ("timeout", "read_timeout", "close_timeout", "is_host", "store_type")
# How long shutdown() keeps this node running for the others, at most: until every other node
# left too, its departure has spread and the keys it serves stay readable (torchrun's exit
# barrier reads every agent's key after the first agents are done with it).
_FINISH_SECONDS = 30.0


def _duration(value):
    text = str(value).strip()
    return text + "s" if text.replace(".", "", 1).isdigit() else text


def _fields(params: RendezvousParameters) -> dict:
    """The Node's configuration from torchrun's rendezvous parameters."""
    if not params.endpoint:
        raise ValueError("the gossip rendezvous needs the seed list: --rdzv_endpoint "
                         "HOST:PORT[,HOST:PORT...] (the same on every node)")
    nnodes = (str(params.min_nodes) if params.min_nodes == params.max_nodes
              else f"{params.min_nodes}:{params.max_nodes}")
    fields = {"seeds": params.endpoint, "run_id": params.run_id, "nnodes": nnodes,
              "elastic": True}
    local_addr = getattr(params, "local_addr", None)  # torchrun --local_addr (torch >= 2.0)
    if local_addr:
        fields["advertise"] = local_addr
    if params.config.get("timeout") is not None:
        fields["join_timeout"] = _duration(params.config["timeout"])
    for key, value in params.config.items():
        if key in _NODE_FIELDS:
            fields[key] = value
        elif key in _DURATIONS:
            fields[_DURATIONS[key]] = _duration(value)
        elif key not in _IGNORED:
            known = ", ".join(sorted(_NODE_FIELDS + tuple(_DURATIONS)))
            raise ValueError(f"--rdzv_conf {key}={value}: not an option of the gossip "
                             f"rendezvous (known: {known})")
    return fields


class _AgentStore(GossipRdzvStore):
    """The round's store as torchrun's agents use it: MASTER_ADDR is the agreed address of
    node rank 0 rather than the host name the agent found for itself."""

    def __init__(self, store, master_addr):
        super().__init__(store)
        self._master_addr = master_addr

    def set(self, key, value):
        if key == "MASTER_ADDR" and self._master_addr:
            value = self._master_addr
        super().set(key, value)


class GossipRendezvousHandler(RendezvousHandler):
    """torch.distributed.elastic's RendezvousHandler over an elastic gossip_rdzv.Node."""

    def __init__(self, run_id, fields, store_timeout=300.0):
        self._run_id = run_id
        self._node = Node(**fields)
        self._store_timeout = store_timeout
        self._assignment = None
        self._started = False
        self._closed = False
        self._finished = False

    def get_backend(self):
        return BACKEND

    def get_run_id(self):
        return self._run_id

    def next_rendezvous(self):
        try:
            if not self._started:
                self._node.start()
                self._started = True
                assignment = self._node.wait()
            else:
                if not self._node.round_over(self._assignment):
                    # torchrun stops its workers before it asks again: while the job is still
                    # in this round that means they failed here.
                    self._node.report_workers_failed()
                assignment = self._node.wait_next(self._assignment)
        except GossipRdzvError as error:
            raise _rendezvous_error(error) from error
        self._assignment = assignment
        store = _AgentStore(self._node.store(self._store_timeout), assignment.master_addr)
        return store, assignment.my_node_rank, len(assignment.nodes)

    def is_closed(self):
        return self._closed or (self._started and self._node.job_failure() is not None)

    def set_closed(self):
        self._closed = True

    def num_nodes_waiting(self):
        if self._assignment is None or self._finished:
            return 0
        return 1 if self._node.round_over(self._assignment) else 0

    def shutdown(self):
        if self._started and self._assignment is not None and not self._finished:
            self._finished = True
            try:
                self._node.report_workers_finished()
                self._node.wait_job_finished(_FINISH_SECONDS)
            except GossipRdzvError:
                pass  # the job already ended (another node failed it): nothing to announce
        self._node.stop()
        return True


def _rendezvous_error(error):
    """torchrun's exception for a failed rendezvous, with gossip-rdzv's message."""
    if error.name == "join_timeout":
        return RendezvousTimeoutError(str(error))
    if error.name in ("job_over", "not_admitted"):
        return RendezvousClosedError(str(error))
    return RendezvousError(str(error))


def create_handler(params: RendezvousParameters) -> GossipRendezvousHandler:
    """The handler torchrun builds for --rdzv_backend gossip."""
    fields = _fields(params)
    return GossipRendezvousHandler(params.run_id, fields)


def register():
    """Makes `--rdzv_backend gossip` known to torch.distributed.elastic in this process."""
    handler_registry.register(BACKEND, create_handler)

