"""gossip_rdzv: rendezvous and a master-less store for PyTorch / gloo, from Python.

A thin ctypes layer over the C API (include/gossip_rdzv/gossip_rdzv.h); no compilation is
needed beyond the project's own build. After the README's build:

    PYTHONPATH=python /usr/bin/python3 -c "import gossip_rdzv"

finds build/libgossip_rdzv.so by itself; installed (`pip install ./python`, the .deb) it finds
libgossip_rdzv.so.0 next to itself or on the system's library path; GOSSIP_RDZV_LIBRARY
overrides the search (_lib.py).

In a worker started by `gossip-rdzv join ... -- python3 train.py`:

    from gossip_rdzv.torch import store_from_env
    dist.init_process_group("gloo", store=store_from_env(), rank=RANK, world_size=WORLD_SIZE)

docs/store.md describes the store, its semantics and errors.
"""

import collections
import ctypes
import datetime

from . import _lib
from .errors import GossipRdzvError, StoreError, StoreTimeout

__all__ = ["Store", "Node", "Assignment", "JobFailure", "GossipRdzvError", "StoreError",
           "StoreTimeout"]

_lib_handle = _lib.lib


def _text(value):
    return value.decode("utf-8", "replace") if value is not None else ""


def _check(status):
    if status != 0:
        message = _text(_lib_handle.gossip_rdzv_last_error())
        name = _text(_lib_handle.gossip_rdzv_status_name(status))
        from .errors import error_for
        raise error_for(status, name, message)


def _bytes(value):
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _milliseconds(timeout):
    """None: the store's default (-1); timedelta or seconds otherwise."""
    if timeout is None:
        return -1
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    return max(0, int(round(float(timeout) * 1000)))


def _take_buffer(pointer, length):
    try:
        return ctypes.string_at(pointer, length.value) if length.value else b""
    finally:
        _lib_handle.gossip_rdzv_free(pointer)


def _key_array(keys):
    keys = [_bytes(key) for key in keys]
    return (ctypes.c_char_p * max(1, len(keys)))(*keys), len(keys)


class Store:
    """A client of the store (one request in flight at a time; thread-safe).

    Store(agent="127.0.0.1:29400", run_id="job42", timeout=300) talks to that agent;
    key_file="/etc/gossip-rdzv/job.key" seals the requests with the job's key, as an agent
    started with that --key-file requires (docs/security.md).
    Store.from_env() uses GOSSIP_RDZV_STORE (and GOSSIP_RDZV_KEY_FILE) as a worker of
    `gossip-rdzv join` has them.
    Timeouts are seconds (float) or datetime.timedelta; 0 waits for ever.
    Errors raise StoreError (StoreTimeout for a key not set in time), naming key and home.
    """

    def __init__(self, agent=None, run_id=None, timeout=300.0, key_file=None, _handle=None):
        if _handle is not None:
            self._handle = _handle
            return
        if not agent:
            raise ValueError("Store(agent=...) needs the agent's HOST:PORT; "
                             "in a worker use Store.from_env()")
        handle = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_store_new(_bytes(agent), _bytes(run_id or ""),
                                                 _milliseconds(timeout), ctypes.byref(handle)))
        self._handle = handle
        if key_file:
            try:
                self.set_key_file(key_file)
            except BaseException:
                self.close()
                raise

    @classmethod
    def from_env(cls):
        handle = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_store_from_env(ctypes.byref(handle)))
        return cls(_handle=handle)

    def close(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            _lib_handle.gossip_rdzv_store_free(handle)

    def __del__(self):
        self.close()

    def set(self, key, value):
        data = _bytes(value)
        _check(_lib_handle.gossip_rdzv_store_set(self._handle, _bytes(key), data, len(data)))

    def get(self, key, timeout=None):
        pointer = ctypes.c_void_p()
        length = ctypes.c_size_t()
        _check(_lib_handle.gossip_rdzv_store_get(self._handle, _bytes(key), _milliseconds(timeout),
                                                 ctypes.byref(pointer), ctypes.byref(length)))
        return _take_buffer(pointer, length)

    def add(self, key, amount):
        result = ctypes.c_int64()
        _check(_lib_handle.gossip_rdzv_store_add(self._handle, _bytes(key), int(amount),
                                                 ctypes.byref(result)))
        return result.value

    def check(self, keys):
        array, count = _key_array(keys)
        result = ctypes.c_int()
        _check(_lib_handle.gossip_rdzv_store_check(self._handle, array, count, ctypes.byref(result)))
        return bool(result.value)

    def wait(self, keys, timeout=None):
        array, count = _key_array(keys)
        _check(_lib_handle.gossip_rdzv_store_wait(self._handle, array, count, _milliseconds(timeout)))

    def compare_set(self, key, expected, desired):
        expected, desired = _bytes(expected), _bytes(desired)
        pointer = ctypes.c_void_p()
        length = ctypes.c_size_t()
        _check(_lib_handle.gossip_rdzv_store_compare_set(
            self._handle, _bytes(key), expected, len(expected), desired, len(desired),
            ctypes.byref(pointer), ctypes.byref(length)))
        return _take_buffer(pointer, length)

    def delete_key(self, key):
        result = ctypes.c_int()
        _check(_lib_handle.gossip_rdzv_store_delete_key(self._handle, _bytes(key),
                                                        ctypes.byref(result)))
        return bool(result.value)

    def num_keys(self):
        result = ctypes.c_int64()
        _check(_lib_handle.gossip_rdzv_store_num_keys(self._handle, ctypes.byref(result)))
        return result.value

    def member_stats(self):
        """Every member's load since its agent started, sorted by member: a list of dicts
        with member ("host:port"), home_requests (requests it served as the home of their
        keys), client_requests (requests its own clients sent it), forwarded (parts of those
        it sent to other homes) and keys (keys it holds). Reading them is not counted."""
        pointer = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_store_member_stats(self._handle, ctypes.byref(pointer)))
        try:
            text = ctypes.string_at(pointer).decode("utf-8")
        finally:
            _lib_handle.gossip_rdzv_free(pointer)
        fields = ("home_requests", "client_requests", "forwarded", "keys")
        members = []
        for line in text.splitlines():
            member, *numbers = line.split(" ")
            members.append(dict(member=member, **dict(zip(fields, map(int, numbers)))))
        return members

    def set_key_file(self, key_file):
        """Seal the requests with the keys of `key_file` (None or "": no key). Raises
        GossipRdzvError (usage) naming a file that cannot be read; the previous key stays."""
        _check(_lib_handle.gossip_rdzv_store_set_key_file(self._handle, _bytes(key_file or "")))

    def set_timeout(self, timeout):
        _check(_lib_handle.gossip_rdzv_store_set_timeout(self._handle, _milliseconds(timeout)))


class Assignment:
    """What a node committed: run_id, round, world_size, master_addr, master_port,
    my_node_rank and nodes (dicts with node_rank, rank_offset, nproc, host, endpoint,
    hostname); env(local_rank) gives the torchrun variables as a dict."""

    def __init__(self, handle):
        self._handle = handle
        f = _lib_handle
        self.run_id = _text(f.gossip_rdzv_assignment_run_id(handle))
        self.round = f.gossip_rdzv_assignment_round(handle)
        self.world_size = f.gossip_rdzv_assignment_world_size(handle)
        self.master_addr = _text(f.gossip_rdzv_assignment_master_addr(handle))
        self.master_port = f.gossip_rdzv_assignment_master_port(handle)
        self.my_node_rank = f.gossip_rdzv_assignment_my_node_rank(handle)
        self.nodes = [{
            "node_rank": i,
            "rank_offset": f.gossip_rdzv_assignment_node_rank_offset(handle, i),
            "nproc": f.gossip_rdzv_assignment_node_nproc(handle, i),
            "host": _text(f.gossip_rdzv_assignment_node_host(handle, i)),
            "endpoint": _text(f.gossip_rdzv_assignment_node_endpoint(handle, i)),
            "hostname": _text(f.gossip_rdzv_assignment_node_hostname(handle, i)),
        } for i in range(f.gossip_rdzv_assignment_nnodes(handle))]

    def env(self, local_rank=0):
        pointer = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_assignment_env(self._handle, local_rank,
                                                      ctypes.byref(pointer)))
        try:
            text = ctypes.string_at(pointer).decode("utf-8")
        finally:
            _lib_handle.gossip_rdzv_free(pointer)
        return dict(line.split("=", 1) for line in text.splitlines() if line)

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            _lib_handle.gossip_rdzv_assignment_free(handle)


JobFailure = collections.namedtuple("JobFailure", "rank status message")
JobFailure.__doc__ = """How another node ended the job (Node.job_failure()): the global rank of
its worker that failed first, that worker's exit status (128+N for signal N), one line for
people."""


class Node:
    """A gossip-rdzv node in this process (what `gossip-rdzv join` runs).

    Node(seeds="node0:29400", nnodes="4", run_id="job42", listen=":29400", ...) takes the
    fields of gossip_rdzv_config_set() as keyword arguments (lists of seeds are joined,
    booleans become 1 or 0); key_file="/etc/gossip-rdzv/job.key" gives the job's key
    (docs/security.md). start(), wait() -> Assignment, store(timeout) -> Store, stop().

    An elastic job (elastic=True; docs/protocol.md, "Rounds") has one assignment per round.
    rounds() yields them; while a round's workers run, round_over(a) says when the job moved
    on without them; report_workers_failed() starts the next round, report_workers_finished()
    ends this node's part and wait_job_finished(timeout) waits for the others':

        node = Node(seeds=seed, nnodes="2:4", elastic=True, run_id="job42").start()
        for a in node.rounds():
            workers = start_workers(a.env(0))          # RANK, WORLD_SIZE, MASTER_ADDR, ...
            while workers.running() and not node.round_over(a):
                workers.wait(timeout=0.5)
            if workers.running():                        # the job moved on: stop them
                workers.stop()
            elif workers.failed():
                node.report_workers_failed()             # every node moves to the next round
            else:
                node.report_workers_finished()           # ends the iteration
        node.wait_job_finished(timeout=600)
    """

    def __init__(self, **fields):
        config = _lib_handle.gossip_rdzv_config_new()
        if not config:
            raise MemoryError("gossip_rdzv_config_new")
        self._finished = False
        try:
            for name, value in fields.items():
                if isinstance(value, (list, tuple)):
                    value = ",".join(value)
                elif isinstance(value, bool):
                    value = "1" if value else "0"
                _check(_lib_handle.gossip_rdzv_config_set(config, _bytes(name), _bytes(str(value))))
            handle = ctypes.c_void_p()
            _check(_lib_handle.gossip_rdzv_node_new(config, ctypes.byref(handle)))
            self._handle = handle
        finally:
            _lib_handle.gossip_rdzv_config_free(config)

    def start(self):
        _check(_lib_handle.gossip_rdzv_node_start(self._handle))
        return self

    @property
    def endpoint(self):
        return _text(_lib_handle.gossip_rdzv_node_endpoint(self._handle))

    @property
    def listed_as_seed(self):
        """Whether nodes that start late ask this node first (the seed list names it, or it
        has none); known after start(). After an elastic job ended it tells them the job is
        over for as long as it is not stopped."""
        return _lib_handle.gossip_rdzv_node_listed_as_seed(self._handle) == 1

    def wait(self):
        handle = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_node_wait(self._handle, ctypes.byref(handle)))
        return Assignment(handle)

    def store(self, timeout=300.0):
        """A client of this node's store. In an elastic job it serves the round the node is
        in: keys set in an earlier round are gone (docs/store.md, "Rounds")."""
        handle = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_store_from_node(self._handle, _milliseconds(timeout),
                                                       ctypes.byref(handle)))
        return Store(_handle=handle)

    # ---- elastic rounds (elastic=True); each raises GossipRdzvError "usage" otherwise ----

    def rounds(self):
        """Yields this node's assignment of each round, the first from wait(), each next one
        from wait_next() once the body returns; stops after report_workers_finished(). The
        body returns when this round's workers are stopped: round_over() said so, or they
        failed and report_workers_failed() was called. Raises as wait() does (e.g.
        not_admitted when a round closed without this node)."""
        assignment = self.wait()
        while True:
            yield assignment
            if self._finished:
                return
            assignment = self.wait_next(assignment)

    def round_over(self, assignment):
        """Whether the job moved past `assignment`'s round (a member died or restarted, a node
        arrived, a node's workers failed): its workers on this node must stop. Does not
        block."""
        over = ctypes.c_int()
        _check(_lib_handle.gossip_rdzv_node_round_over(self._handle, assignment._handle,
                                                       ctypes.byref(over)))
        return bool(over.value)

    def failure_explained_by_departure(self, assignment):
        """This node's workers of `assignment`'s round failed while round_over() is still
        False: whether another member's departure explains it (its agent went away, and the
        membership declared the death), so the failure should use no restart. Blocks about a
        gossip interval, or up to the failure detector's bound when a member's gossip port
        refuses connections."""
        explained = ctypes.c_int()
        _check(_lib_handle.gossip_rdzv_node_failure_explained(
            self._handle, assignment._handle, ctypes.byref(explained)))
        return bool(explained.value)

    @property
    def round_change(self):
        """Why the latest round began, for people; None while in the first round."""
        pointer = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_node_round_change(self._handle, ctypes.byref(pointer)))
        if not pointer.value:
            return None
        try:
            return ctypes.string_at(pointer).decode("utf-8", "replace")
        finally:
            _lib_handle.gossip_rdzv_free(pointer)

    def wait_next(self, previous):
        """Blocks until the assignment of a round after `previous` is committed (at most the
        join timeout) and returns it; raises as wait() does."""
        handle = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_node_wait_next(self._handle, previous._handle,
                                                      ctypes.byref(handle)))
        return Assignment(handle)

    def report_workers_failed(self):
        """This node's workers failed: every node moves to the next round. Raises "usage"
        before this round committed, or after report_workers_finished()."""
        _check(_lib_handle.gossip_rdzv_node_report_workers_failed(self._handle))

    def report_workers_finished(self):
        """This node's workers finished: it leaves the job (the others do not take its exit
        for a crash) and rounds() stops."""
        _check(_lib_handle.gossip_rdzv_node_report_workers_finished(self._handle))
        self._finished = True

    def report_job_failed(self, rank, status):
        """This node's workers failed with no restart left: the job ends on every node.
        Elsewhere round_over() turns true, wait_next() raises GossipRdzvError "job_over" and
        job_failure() names this node, `rank` (the worker that failed first) and `status`
        (its exit status, or 128+N for signal N). rounds() stops; call wait_job_finished()
        next so the news spreads before this process exits."""
        _check(_lib_handle.gossip_rdzv_node_report_job_failed(self._handle, int(rank),
                                                              int(status)))
        self._finished = True

    def job_failure(self):
        """None, or (rank, status, message) once another node ended the job with
        report_job_failed(): exit with `status` as that node does."""
        failed, rank, status = ctypes.c_int(), ctypes.c_uint32(), ctypes.c_int()
        pointer = ctypes.c_void_p()
        _check(_lib_handle.gossip_rdzv_node_job_failure(
            self._handle, ctypes.byref(failed), ctypes.byref(rank), ctypes.byref(status),
            ctypes.byref(pointer)))
        if not failed.value:
            return None
        try:
            message = ctypes.string_at(pointer).decode("utf-8", "replace")
        finally:
            _lib_handle.gossip_rdzv_free(pointer)
        return JobFailure(rank.value, status.value, message)

    def wait_job_finished(self, timeout):
        """After report_workers_finished() or report_job_failed(): waits until every other
        member of the last round left too or is dead, at most `timeout` (seconds or
        timedelta); returns whether so."""
        if timeout is None:
            raise ValueError("wait_job_finished(timeout): give the longest wait, in seconds "
                             "or as a timedelta")
        finished = ctypes.c_int()
        _check(_lib_handle.gossip_rdzv_node_wait_job_finished(
            self._handle, _milliseconds(timeout), ctypes.byref(finished)))
        return bool(finished.value)

    def finish(self):
        _lib_handle.gossip_rdzv_node_finish(self._handle)

    def stop(self):
        if getattr(self, "_handle", None):
            _lib_handle.gossip_rdzv_node_stop(self._handle)

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            _lib_handle.gossip_rdzv_node_free(handle)
