"""HTTP bulk workload (models.workloads.http): object accounting for GET and POST.

    GET:  client(peer) --request--> server(VM) --header+object--> client
    POST: client(peer) --request+object--> server(VM) --response--> client

Each connection alternates strictly, so at any instant the bytes its receivers have read are
whole objects plus at most one object in progress; the client counts an object when the reply
is complete.
"""
import pytest

from sim.builder import build

SMALL = ["workload=http", "workload.vms=1", "workload.sessions_per_vm=3",
         "workload.http.object_bytes=65536", "workload.socket_bytes=65536",
         "workload.start_jitter_us=0"]


def _run(compose, direction, until_s=0.03):
    cfg = compose([*SMALL, f"workload.direction={direction}"], short=False)
    model = build(cfg)
    model.env.run(until=until_s)
    return cfg, model


@pytest.mark.parametrize("direction", ["tx", "rx"])
def test_objects_match_the_bytes_each_side_read(compose, direction):
    cfg, model = _run(compose, direction)
    h = cfg.workload.http
    get = direction == "tx"
    up = h.request_bytes + (0 if get else h.object_bytes)        # client -> server, per object
    down = h.response_header_bytes + (h.object_bytes if get else 0)
    for c in model.workload.connections:
        assert c.objects > 3
        client_read, server_read = c.down[1].bytes_read, c.up[1].bytes_read
        assert client_read // down == c.objects                   # whole replies = objects
        assert server_read // up in (c.objects, c.objects + 1)    # + the request in progress
        assert c.object_time_sum_s > 0


def test_get_moves_objects_from_the_vm(compose):
    _, model = _run(compose, "tx")
    c = model.workload.connections[0]
    sender_vm, receiver_peer = c.down
    assert sender_vm.src == 0 and receiver_peer.src == -1         # the VM sends the bodies
    assert receiver_peer.bytes_read > 10 * c.up[1].bytes_read


def test_summary_counts_objects_in_the_window(compose, run_one):
    cfg = compose([*SMALL, "workload.direction=tx", "run.warmup_s=0.01", "run.measure_s=0.02"],
                  short=False)
    model, summary, tables = run_one(cfg)
    per_vm = tables["http"]
    assert summary["http_objects_per_s"] == pytest.approx(per_vm["objects"].sum() / 0.02)
    assert summary["http_objects_per_s"] > 0
    assert summary["http_object_gbps"] == pytest.approx(
        summary["http_objects_per_s"] * 65536 * 8 / 1e9)
    assert len(tables["flows"]) == 3                              # one record per connection
