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


def error_for(status, name, message):
    """The exception for a failed call: `name` comes from the library's one table of status
    names (gossip_rdzv_status_name), whose store failures are named "store_..."."""
    if name == "store_timeout":
        return StoreTimeout(status, name, message)
    if name.startswith("store_"):
        return StoreError(status, name, message)
    return GossipRdzvError(status, name, message)
