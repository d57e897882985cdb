"""The fluid engine's receive-queue interrupts: a busy handler holds its queue's coalescer back
(``sim.fluid._handler_busy``, the DES's ``models.nic.RxQueue``: a burst that arrives while the
handler's poller is busy is taken by its next poll and arms no timer)."""
import pytest

from sim import fluid
from sim.compose import compose_checked


def test_a_busy_handler_holds_its_queues_coalescer_back():
    # e35_tx_single_vm: five flows' ACK trains (data ACKs and window updates, 61K/s) into one
    # host queue whose handler is ~40% busy. The DES (0.1 s): 33070 interrupts/s for 48560
    # handler passes; each peer queue, one flow's segments, 6090 interrupts/s for 6090
    # segments/s (a flow's bursts do not find the handler busy with its own earlier work).
    # With the compat shim refitted on the hypervisor's CPU (1131 -> 286 cycles/packet) the
    # handler is less busy: the DES takes 35650 interrupts/s, the fluid engine 45.6K (+28%, a
    # known gap: the DES's handler is busier than its utilisation says when ACK trains come
    # in clumps); without the mechanism it would take all 61K (+71%).
    cfg = compose_checked("configs", ["experiment=e35_tx_single_vm"])
    net = fluid.describe_network(cfg)
    fill, st, _ = fluid._solve_net(net)
    q = net.queues.index("nic0.rxq0.rx_ring")
    on_q = net.aq == q
    passes = st.quantities[on_q, fluid.IA].sum()
    interrupts = st.queue_interrupts[q]
    assert interrupts == pytest.approx(st.quantities[on_q, fluid.IRQ_A].sum(), rel=1e-9)
    assert interrupts == pytest.approx(35650, rel=0.3)           # 61K without the mechanism
    assert interrupts < 0.75 * passes
    # the passes stay (one per burst or coalescing round); only the driver's per-interrupt
    # charge follows the interrupts
    drv = st.key_load[net.keys.index(("nic0.rxq0.irq", "driver_rx"))]
    per_pk = cfg.hypervisor.driver_rx.per_packet_cycles * st.quantities[on_q, fluid.A].sum()
    assert drv - per_pk == pytest.approx(cfg.hypervisor.driver_rx.fixed_cycles * interrupts,
                                         rel=1e-6)
    # the peer's queues: one flow each, an interrupt per segment
    peer = [k for k, name in enumerate(net.queues) if name.startswith("peer0.")]
    assert st.queue_interrupts[peer].sum() == pytest.approx(
        st.quantities[:, fluid.S].sum(), rel=1e-6)


def test_a_window_update_inside_its_trains_round_takes_no_interrupt():
    # dev_vmxnet_32_1g_stream: the peer sends its window update after the read task (~42 us of
    # recv() copy at its clock), the host's ACK queue waits 125 us after a round's first burst:
    # the update is in the round its data ACK train armed (``sim.fluid._updates_in_round``).
    # The DES (0.02 s): 3600 host-queue interrupts/s for three flows' 3600 segments/s (one per
    # data ACK train); without the mechanism the fluid engine took 7200 (+4.2% host CPU, now
    # +1.1%). With a 10-us timer the update comes after the round closed: its own interrupt.
    def ack_interrupts(extra):
        cfg = compose_checked("configs", ["experiment=dev_vmxnet_32_1g_stream", *extra])
        net = fluid.describe_network(cfg)
        st = fluid.demands(net, [0.94e9 / 8 / len(net.flows)] * len(net.flows))
        Q = st.quantities
        return Q[:, fluid.IA].sum(), Q[:, fluid.T].sum(), Q[:, fluid.READS].sum()

    ia, trains, updates = ack_interrupts([])
    assert updates > 0 and ia == pytest.approx(trains - updates, rel=1e-9)
    ia, trains, updates = ack_interrupts(["nic.coalescing.timer_us=10"])
    assert ia == pytest.approx(trains, rel=1e-9)
