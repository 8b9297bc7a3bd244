"""A store client that keeps working until told to stop, for test_store_keys.py: through the
agent at AGENT with the key file KEY_FILE it repeats set, get and add until the file STOP
exists, printing {"ops": n} every 20 operations and at the end
{"ops": n, "adds": a, "counter": c, "errors": [...]}, where c is what the last add returned.

  store_loop_proc.py AGENT RUN_ID KEY_FILE STOP
"""
import json
import os
import sys

from gossip_rdzv import Store, StoreError


def main():
    agent, run_id, key_file, stop = sys.argv[1:5]
    store = Store(agent=agent, run_id=run_id, timeout=30, key_file=key_file)
    ops, adds, counter, errors = 0, 0, 0, []
    while not os.path.exists(stop):
        try:
            store.set(f"loop/{ops}", str(ops))
            if store.get(f"loop/{ops}", timeout=30).decode() != str(ops):
                errors.append(f"get loop/{ops} returned another value")
            counter = store.add("loop/counter", 1)
            adds += 1
        except StoreError as error:
            errors.append(f"{error.name}: {error}")
        ops += 3
        if ops % 60 == 0:
            print(json.dumps({"ops": ops}), flush=True)
    print(json.dumps({"ops": ops, "adds": adds, "counter": counter, "errors": errors}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
