"""One node of an elastic job run through the Python API (gossip_rdzv.Node.rounds()), driven
by test_python_rounds.py: commands arrive one per line on stdin, events leave as JSON lines
on stdout.

    /usr/bin/python3 rounds_node.py SEED LISTEN      (PYTHONPATH=python)

Each round it prints {"event": "round", ...} and then, while the round lasts, runs commands:
  fail                 report this node's workers failed (the job moves to the next round)
  set KEY VALUE        store.set on the current round's store        -> {"event": "set"}
  get KEY SECONDS      store.get with that timeout  -> {"event": "get", "value" | "error"}
  check KEY            store.check([KEY])                            -> {"event": "check"}
  gloo                 a torch gloo group over this round's store (rank = node rank),
                       one all_reduce of rank + 1                   -> {"event": "gloo"}
  finish               report the workers finished, wait for the job  -> {"event": "finished"}
When the job moves on without a command it prints {"event": "round_over", ...}.
"""
import datetime
import json
import queue
import sys
import threading

import gossip_rdzv


def emit(**event):
    print(json.dumps(event), flush=True)


def read_commands(commands):
    for line in sys.stdin:
        commands.put(line.split())
    commands.put(["eof"])


def gloo_all_reduce(node, assignment):
    import torch
    import torch.distributed as dist
    from gossip_rdzv.torch import GossipRdzvStore

    store = GossipRdzvStore(node.store(60))
    dist.init_process_group("gloo", store=store, rank=assignment.my_node_rank,
                            world_size=len(assignment.nodes),
                            timeout=datetime.timedelta(seconds=60))
    value = torch.tensor([float(assignment.my_node_rank + 1)])
    dist.all_reduce(value)
    dist.barrier()
    dist.destroy_process_group()
    return value.item()


def run_command(node, assignment, store, command):
    """Runs one command; returns True when the round's "workers" stopped (fail)."""
    name, args = command[0], command[1:]
    if name == "fail":
        node.report_workers_failed()
        emit(event="failed", round=assignment.round)
        return True
    if name == "set":
        store.set(args[0], args[1])
        emit(event="set", round=assignment.round, key=args[0])
    elif name == "get":
        try:
            value = store.get(args[0], timeout=float(args[1])).decode()
            emit(event="get", round=assignment.round, key=args[0], value=value)
        except gossip_rdzv.StoreError as error:
            emit(event="get", round=assignment.round, key=args[0], error=error.name,
                 message=str(error))
    elif name == "check":
        emit(event="check", round=assignment.round, key=args[0], set=store.check([args[0]]))
    elif name == "explain":  # as if this round's workers had just failed here
        emit(event="explained", round=assignment.round,
             explained=node.failure_explained_by_departure(assignment))
    elif name == "gloo":
        emit(event="gloo", round=assignment.round, sum=gloo_all_reduce(node, assignment))
    elif name == "finish":
        node.report_workers_finished()
        emit(event="finished", ok=node.wait_job_finished(60))
        return True
    else:
        raise SystemExit(f"rounds_node.py: unknown command {command!r}")
    return False


def main():
    seed, listen = sys.argv[1], sys.argv[2]
    node = gossip_rdzv.Node(run_id="py-rounds", seeds=seed, listen=listen, nnodes="2:3",
                            last_call="5s", timing="local", join_timeout="90s",
                            elastic=True).start()
    commands = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()
    for assignment in node.rounds():
        emit(event="round", round=assignment.round, endpoint=node.endpoint,
             nodes=[n["endpoint"] for n in assignment.nodes], master_addr=assignment.master_addr,
             master_port=assignment.master_port, world_size=assignment.world_size,
             my_node_rank=assignment.my_node_rank, change=node.round_change)
        store = node.store(60)
        stopped = False
        # The "workers" of this round run until a command stops them or the job moves on.
        while not stopped and not node.round_over(assignment):
            try:
                command = commands.get(timeout=0.05)
            except queue.Empty:
                continue
            if command == ["eof"]:
                return
            stopped = run_command(node, assignment, store, command)
        if not stopped:
            emit(event="round_over", round=assignment.round, change=node.round_change)
    node.stop()


if __name__ == "__main__":
    main()
