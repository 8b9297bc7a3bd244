"""A store client in a process of its own, for test_store_cluster.py: one operation through
the agent at AGENT, its result printed as one JSON line.

  store_client_proc.py AGENT get KEY TIMEOUT_S          {"value": "..."}
  store_client_proc.py AGENT wait KEY TIMEOUT_S         {"ok": true}
  store_client_proc.py AGENT set KEY VALUE              {"ok": true}
  store_client_proc.py AGENT add KEY COUNT              {"values": [what each add(KEY, 1) gave]}
  store_client_proc.py AGENT compare_set KEY EXPECTED DESIRED   {"value": "..."}
A failure prints {"error": "<C API status name>", "message": "..."} and exits 3. Before the
operation it prints {"started": true}, so a test knows the process is up.
"""
import json
import sys

from gossip_rdzv import Store, StoreError


def run(store, op, args):
    if op == "get":
        return {"value": store.get(args[0], timeout=float(args[1])).decode()}
    if op == "wait":
        store.wait([args[0]], timeout=float(args[1]))
        return {"ok": True}
    if op == "set":
        store.set(args[0], args[1])
        return {"ok": True}
    if op == "add":
        return {"values": [store.add(args[0], 1) for _ in range(int(args[1]))]}
    if op == "compare_set":
        return {"value": store.compare_set(args[0], args[1], args[2]).decode()}
    raise SystemExit(f"unknown operation {op!r}")


def main():
    agent, op, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    store = Store(agent=agent, run_id="store-cluster", timeout=60)
    print(json.dumps({"started": True}), flush=True)
    try:
        result = run(store, op, args)
    except StoreError as error:
        print(json.dumps({"error": error.name, "message": str(error)}), flush=True)
        return 3
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
