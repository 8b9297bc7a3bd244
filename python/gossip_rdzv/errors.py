"""Exceptions raised by gossip_rdzv: one class per C API status family."""


class GossipRdzvError(RuntimeError):
    """A gossip-rdzv call failed. `status` is the C API's code, `name` its short name."""

    def __init__(self, status, name, message):
        super().__init__(message)
        self.status = status
        self.name = name


class StoreError(GossipRdzvError):
    """A store operation failed (the message names the key and its home member)."""


class StoreTimeout(StoreError):
    """A key was not set within the timeout."""


_STORE_TIMEOUT = 101


def error_for(status, name, message):
    if status == _STORE_TIMEOUT:
        return StoreTimeout(status, name, message)
    if status > 100:
        return StoreError(status, name, message)
    return GossipRdzvError(status, name, message)
