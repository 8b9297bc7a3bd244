"""torch.distributed without a master: a torch.distributed.Store backed by gossip-rdzv.

    import torch.distributed as dist
    from gossip_rdzv.torch import store_from_env
    dist.init_process_group("gloo", store=store_from_env(),
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))

No MASTER_ADDR / MASTER_PORT is needed: every key lives on one of the job's nodes
(docs/store.md). new_group() works too: torch writes its keys through this store.
"""

import datetime

import torch.distributed as dist

from . import Store

__all__ = ["GossipRdzvStore", "store_from_env"]


class GossipRdzvStore(dist.Store):
    """torch.distributed.Store over a gossip_rdzv.Store. torch calls these methods from C++
    (set/get/add/wait for gloo; compare_set, check, delete_key, num_keys for the rest)."""

    def __init__(self, store, timeout=None):
        super().__init__()
        self._store = store
        if timeout is not None:
            self.set_timeout(timeout)

    def _timeout(self, timeout=None):
        # torch's own timeout (set_timeout on the base class, or init_process_group's) rules.
        if timeout is None:
            timeout = self.timeout
        if isinstance(timeout, datetime.timedelta):
            return timeout.total_seconds()
        return timeout

    def set(self, key, value):
        self._store.set(key, value)

    def get(self, key):
        return self._store.get(key, timeout=self._timeout())

    def add(self, key, amount):
        return self._store.add(key, amount)

    def compare_set(self, key, expected, desired):
        return self._store.compare_set(key, expected, desired)

    def check(self, keys):
        return self._store.check(keys)

    def wait(self, keys, timeout=None):
        self._store.wait(keys, timeout=self._timeout(timeout))

    def delete_key(self, key):
        return self._store.delete_key(key)

    def num_keys(self):
        return self._store.num_keys()

    def member_stats(self):
        """Every member's load (gossip_rdzv.Store.member_stats); not part of torch's API."""
        return self._store.member_stats()


def store_from_env(timeout=None):
    """The store of this worker's agent, from GOSSIP_RDZV_STORE (set by `gossip-rdzv join`
    for its workers and written to its env files with --serve-store). `timeout`: seconds or
    timedelta for torch's store timeout (default: torch's, 300 s)."""
    return GossipRdzvStore(Store.from_env(), timeout=timeout)
