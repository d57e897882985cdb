"""RHEL6 takes an ACK train one ACK at a time (``guest.stack.ack_by_ack``) and may leave slow
start by 2.6.32 CUBIC's HyStart (``guest.stack.hystart_low_window``: available, off by
default): in 001's send case (200 HTTP connections a port) the guests' TSO segments follow the
windows (1/3 of them, TSO deferral) instead of the size of the segment each train acknowledged
(docs/models.md "ACK trains")."""
import numpy as np

from sim.cli import compose_config
from sim.builder import build


def _tso_sizes(*overrides: str) -> np.ndarray:
    """The guests' segment sizes (bytes) over 30 ms after a 30-ms start, one port."""
    model = build(compose_config(["experiment=g80_send", "host.nic_ports=1", *overrides]), 0)
    sizes: list[int] = []
    for vm in model.vms:
        for s in vm.senders.values():
            emit = s.emit
            s.emit = lambda b, _emit=emit: (sizes.append(b.payload_bytes), _emit(b))[1]
    model.env.run(until=0.03)
    del sizes[:]
    model.env.run(until=0.06)
    return np.array(sizes)


def test_ack_by_ack_and_hystart_cut_the_guests_tso_segments():
    whole = _tso_sizes("guest.stack.ack_by_ack=false")
    by_ack = _tso_sizes()  # RHEL6's default: ACK by ACK, no HyStart
    hystart = _tso_sizes("guest.stack.hystart_low_window=16")
    # Trains taken whole: most segments are the 64KB maximum (45 frames). ACK by ACK: a third
    # of the windows (median ~35KB, measured); with HyStart the 200 connections leave slow
    # start at 16 segments instead of overshooting together (median ~12KB).
    assert np.median(whole) > 50_000
    assert np.median(by_ack) < 0.6 * np.median(whole)
    assert np.median(hystart) < 0.25 * np.median(whole)
    assert len(hystart) > 1.5 * len(whole)
