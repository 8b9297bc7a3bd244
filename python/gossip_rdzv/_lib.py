"""ctypes bindings of the C API (include/gossip_rdzv/gossip_rdzv.h) in libgossip_rdzv.so.

The library is found, in this order, at:
  1. $GOSSIP_RDZV_LIBRARY (a full path): the override, and the only place tried when set;
  2. next to this package: gossip_rdzv/libgossip_rdzv.so.0 (a copy shipped with it);
  3. build/libgossip_rdzv.so of the source tree this package sits in (the README's build);
  4. wherever the dynamic loader finds libgossip_rdzv.so.0: the system's library path, where
     the .deb installs it (or LD_LIBRARY_PATH).
`path` holds the one that was loaded.
"""

import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_SONAME = "libgossip_rdzv.so.0"
_BESIDE = os.path.join(_HERE, _SONAME)
_SOURCE_TREE_LIBRARY = os.path.join(_HERE, "..", "..", "build", "libgossip_rdzv.so")


def _candidates():
    explicit = os.environ.get("GOSSIP_RDZV_LIBRARY")
    if explicit:
        return [explicit]
    return [_BESIDE, os.path.normpath(_SOURCE_TREE_LIBRARY), _SONAME]


def _load():
    tried = []
    for candidate in _candidates():
        if os.sep in candidate and not os.path.exists(candidate):
            tried.append(candidate + " (no such file)")
            continue
        try:
            return candidate, ctypes.CDLL(candidate)
        except OSError as error:
            tried.append("%s (%s)" % (candidate, error))
    raise ImportError(
        "gossip_rdzv: cannot load libgossip_rdzv.so; tried: " + "; ".join(tried) +
        ". Install the gossip-rdzv package (README.md, Install), build it, or set "
        "GOSSIP_RDZV_LIBRARY=/path/to/libgossip_rdzv.so")


path, lib = _load()

_c = ctypes
_p = ctypes.c_void_p
_sz = ctypes.c_size_t
_i64 = ctypes.c_int64
_u32 = ctypes.c_uint32
_str = ctypes.c_char_p

_SIGNATURES = {
    "gossip_rdzv_last_error": (_str, []),
    "gossip_rdzv_status_name": (_str, [_c.c_int]),
    "gossip_rdzv_free": (None, [_p]),
    "gossip_rdzv_config_new": (_p, []),
    "gossip_rdzv_config_free": (None, [_p]),
    "gossip_rdzv_config_set": (_c.c_int, [_p, _str, _str]),
    "gossip_rdzv_node_new": (_c.c_int, [_p, _c.POINTER(_p)]),
    "gossip_rdzv_node_start": (_c.c_int, [_p]),
    "gossip_rdzv_node_wait": (_c.c_int, [_p, _c.POINTER(_p)]),
    "gossip_rdzv_node_endpoint": (_str, [_p]),
    "gossip_rdzv_node_listed_as_seed": (_c.c_int, [_p]),
    "gossip_rdzv_node_finish": (None, [_p]),
    "gossip_rdzv_node_round_over": (_c.c_int, [_p, _p, _c.POINTER(_c.c_int)]),
    "gossip_rdzv_node_failure_explained": (_c.c_int, [_p, _p, _c.POINTER(_c.c_int)]),
    "gossip_rdzv_node_round_change": (_c.c_int, [_p, _c.POINTER(_p)]),
    "gossip_rdzv_node_wait_next": (_c.c_int, [_p, _p, _c.POINTER(_p)]),
    "gossip_rdzv_node_report_workers_failed": (_c.c_int, [_p]),
    "gossip_rdzv_node_report_workers_finished": (_c.c_int, [_p]),
    "gossip_rdzv_node_wait_job_finished": (_c.c_int, [_p, _i64, _c.POINTER(_c.c_int)]),
    "gossip_rdzv_node_report_job_failed": (_c.c_int, [_p, _u32, _c.c_int]),
    "gossip_rdzv_node_job_failure": (_c.c_int, [_p, _c.POINTER(_c.c_int), _c.POINTER(_u32),
                                                _c.POINTER(_c.c_int), _c.POINTER(_p)]),
    "gossip_rdzv_node_stop": (None, [_p]),
    "gossip_rdzv_node_free": (None, [_p]),
    "gossip_rdzv_assignment_run_id": (_str, [_p]),
    "gossip_rdzv_assignment_round": (_u32, [_p]),
    "gossip_rdzv_assignment_world_size": (_u32, [_p]),
    "gossip_rdzv_assignment_master_addr": (_str, [_p]),
    "gossip_rdzv_assignment_master_port": (_c.c_uint16, [_p]),
    "gossip_rdzv_assignment_nnodes": (_u32, [_p]),
    "gossip_rdzv_assignment_my_node_rank": (_u32, [_p]),
    "gossip_rdzv_assignment_node_rank_offset": (_u32, [_p, _u32]),
    "gossip_rdzv_assignment_node_nproc": (_u32, [_p, _u32]),
    "gossip_rdzv_assignment_node_host": (_str, [_p, _u32]),
    "gossip_rdzv_assignment_node_endpoint": (_str, [_p, _u32]),
    "gossip_rdzv_assignment_node_hostname": (_str, [_p, _u32]),
    "gossip_rdzv_assignment_env": (_c.c_int, [_p, _u32, _c.POINTER(_p)]),
    "gossip_rdzv_assignment_free": (None, [_p]),
    "gossip_rdzv_store_new": (_c.c_int, [_str, _str, _i64, _c.POINTER(_p)]),
    "gossip_rdzv_store_from_env": (_c.c_int, [_c.POINTER(_p)]),
    "gossip_rdzv_store_from_node": (_c.c_int, [_p, _i64, _c.POINTER(_p)]),
    "gossip_rdzv_store_free": (None, [_p]),
    "gossip_rdzv_store_set": (_c.c_int, [_p, _str, _c.c_char_p, _sz]),
    "gossip_rdzv_store_get": (_c.c_int, [_p, _str, _i64, _c.POINTER(_p), _c.POINTER(_sz)]),
    "gossip_rdzv_store_add": (_c.c_int, [_p, _str, _i64, _c.POINTER(_i64)]),
    "gossip_rdzv_store_check": (_c.c_int, [_p, _c.POINTER(_str), _sz, _c.POINTER(_c.c_int)]),
    "gossip_rdzv_store_wait": (_c.c_int, [_p, _c.POINTER(_str), _sz, _i64]),
    "gossip_rdzv_store_compare_set": (
        _c.c_int, [_p, _str, _c.c_char_p, _sz, _c.c_char_p, _sz, _c.POINTER(_p), _c.POINTER(_sz)]),
    "gossip_rdzv_store_delete_key": (_c.c_int, [_p, _str, _c.POINTER(_c.c_int)]),
    "gossip_rdzv_store_num_keys": (_c.c_int, [_p, _c.POINTER(_i64)]),
    "gossip_rdzv_store_set_timeout": (_c.c_int, [_p, _i64]),
    "gossip_rdzv_store_set_key_file": (_c.c_int, [_p, _str]),
    "gossip_rdzv_store_member_stats": (_c.c_int, [_p, _c.POINTER(_p)]),
}

for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _function = getattr(lib, _name)
    _function.restype = _restype
    _function.argtypes = _argtypes
