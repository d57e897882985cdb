"""models.peer.PeerHost: each context draws jitter from its own named stream."""
import numpy as np
import simpy

from models.base import Stats
from models.nic import NicParams
from models.peer import PeerHost, PeerParams
from models.tcp import TcpParams


def test_every_peer_context_has_its_own_named_stream():
    names = []

    def rng(name):
        names.append(name)
        return np.random.default_rng(len(names))

    peer = PeerHost(simpy.Environment(), "peer0", PeerParams(), NicParams(), TcpParams(), Stats(),
                    rng)
    a, b = peer.app_context(0), peer.app_context(1)
    irqs = ["peer0.softirq"] + [f"peer0.softirq{k}" for k in range(1, PeerParams().rx_queues)]
    assert names == irqs    # an application's stream is made at its first draw (by its name)
    assert a._jitter.cv > 0
    a._jitter.next(), b._jitter.next()
    assert names == [*irqs, "peer0.app0", "peer0.app1"]
    assert len({id(c._jitter.rng) for c in (*peer.irqs, a, b)}) == len(irqs) + 2
