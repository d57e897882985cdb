"""models.vnic: the devices' register-access arithmetic, their capabilities, multi-queue vmxnet3.

Exits: tx = per_packet x packets + per_doorbell x doorbells; rx = per_packet x packets +
per_interrupt x interrupts; each priced by the hypervisor for the guest's mode (002, DEV-why:
a VM exit under hardware virtualization, a cheaper binary-translation trap in 32-bit guests).

    guest vCPU --tx_guest_terms (exits)--> TX ring --backend context--> transmit()
    deliver() --> RX ring (queue = flow mod n) --virtual interrupt--> vCPU (q mod vcpus)
"""
import pytest
import simpy

from models.base import DATA, Burst, Stats
from models.cpu import Context, Cpu, CpuParams
from models.hypervisor import HypervisorParams
from models.vnic import DEVICES, VnicParams, make_vnic

MSS, HDR = 1448, 52
E1000 = dict(model="e1000", tso=False, max_mtu_bytes=1500, tx_register_accesses_per_packet=1.0,
             tx_register_accesses_per_doorbell=0.0, rx_register_accesses_per_packet=0.0625,
             rx_register_accesses_per_interrupt=3.0)
HV = HypervisorParams(vm_exit_cycles=4000.0, bt_trap_cycles=1500.0)


def data(flow: int = 0, frames: int = 1, packets: int | None = None) -> Burst:
    return Burst(DATA, flow, frames * MSS, frames, frames if packets is None else packets, HDR,
                 MSS)


def build(mode: str = "hw", vcpus: int = 1, **params):
    env = simpy.Environment()
    cpu = Cpu(env, CpuParams(1, 8, 1e9, context_switch_cycles=0.0, jitter_cv=0.0))
    ctxs = [Context(env, f"vcpu{k}", cpu.core(k), rng=None) for k in range(vcpus)]
    backend = Context(env, "net", cpu.core(7), rng=None)
    sent: list[Burst] = []
    vnic = make_vnic(env, "vnic", VnicParams(**params), Stats(), backends=[backend], vcpus=ctxs,
                     transmit=lambda b, ctx=None: sent.append(b), exit_cycles=HV.exit_cycles(mode))
    return env, vnic, ctxs, backend, sent


def test_registry_has_the_devices():
    assert set(DEVICES) == {"e1000", "vmxnet2", "vmxnet3", "virtio_net", "virtio_net_user",
                            "passthrough", "sriov"}


@pytest.mark.parametrize("mode, price", [("hw", 4000.0), ("bt", 1500.0)])
def test_e1000_transmit_pays_one_exit_per_packet_at_the_modes_price(mode, price):
    _, vnic, *_ = build(mode, **E1000)
    # No TSO: a 10-frame send is 10 packets, each writing the tail register once.
    terms = vnic.tx_guest_terms(data(frames=10))
    assert vnic.exits == 10
    assert terms == {"guest_driver_tx": 300.0 * 10, "exits": 10 * price}


@pytest.mark.parametrize("mode, price", [("hw", 4000.0), ("bt", 1500.0)])
def test_e1000_receive_exits_per_packet_and_per_interrupt(mode, price):
    env, vnic, (vcpu,), *_ = build(mode, **E1000)
    assert vnic.rx_exits(packets=32, interrupts=1) == 32 * 0.0625 + 3
    vnic.deliver([data(frames=16)])  # one virtual interrupt, one poll of 16 packets
    env.run()
    assert vnic.virtual_interrupts == 1
    assert vnic.exits == 16 * 0.0625 + 3
    # vCPU cycles of that poll: guest_rx (3000 per interrupt + 1200 per packet) + exits x price
    assert vcpu.cycles == pytest.approx(3000 + 1200 * 16 + (16 * 0.0625 + 3) * price)


def test_hw_exits_cost_more_than_bt_traps_for_the_same_packets():
    hw = build("hw", **E1000)[1].tx_guest_terms(data(frames=4))
    bt = build("bt", **E1000)[1].tx_guest_terms(data(frames=4))
    assert hw["exits"] - bt["exits"] == 4 * (4000.0 - 1500.0)


def test_vmxnet2_rings_the_doorbell_only_when_the_backend_is_idle():
    env, vnic, (vcpu,), backend, sent = build("hw")
    assert vnic.tx_exits(packets=5, doorbells=1) == 1.0  # vmxnet2 defaults: 1 per doorbell
    vnic.guest_send(data(), vcpu)  # idle backend: doorbell; the backend starts a pass
    vnic.guest_send(data(), vcpu)  # busy backend polls the ring: no doorbell
    assert vnic.exits == 1
    env.run()
    assert len(sent) == 2 and backend.tasks == 2
    assert vcpu.cycles == pytest.approx(4000.0)  # the doorbell's exit, on the posting vCPU


def test_doorbell_is_decided_when_the_burst_is_posted_not_when_its_cost_is_computed():
    """Two bursts priced while the backend was idle, posted back to back: the second finds the
    backend polling (started by the first), so only one doorbell (was: one per burst)."""
    env, vnic, (vcpu,), backend, sent = build("hw")
    vnic.tx_guest_terms(data())
    vnic.tx_guest_terms(data())
    vnic.guest_send(data(), vcpu)
    vnic.guest_send(data(), vcpu)
    env.run()
    assert vnic.exits == 1 and len(sent) == 2


@pytest.mark.parametrize("model, doorbell_exits", [("e1000", 2), ("vmxnet2", 1)])
def test_e1000_never_skips_the_tail_write(model, doorbell_exits):
    """Counted as one access per doorbell: the emulated device cannot know the backend is still
    polling, so the second post (backend busy) rings again; vmxnet2 skips it."""
    params = {**E1000, "tx_register_accesses_per_packet": 0.0,
              "tx_register_accesses_per_doorbell": 1.0} if model == "e1000" else {}
    env, vnic, (vcpu,), backend, sent = build("hw", **params)
    vnic.guest_send(data(), vcpu)                     # idle backend: it starts a pass
    assert vnic.txq[0].busy
    vnic.guest_send(data(), vcpu)                     # posted while the backend is busy
    assert vnic.exits == doorbell_exits
    env.run()
    assert len(sent) == 2


def test_vmxnet2_receive_costs_no_exits():
    env, vnic, *_ = build("hw")
    vnic.deliver([data(frames=8)])
    env.run()
    assert vnic.exits == 0 and vnic.virtual_interrupts == 1


@pytest.mark.parametrize("change, key", [
    (dict(model="e1000", rx_queues=2), "rx_queues"),
    (dict(model="vmxnet2", lro=True), "lro"),
    (dict(model="vmxnet2", max_mtu_bytes=16000), "max_mtu_bytes"),
    (dict(model="vmxnet3", tx_queues=9), "tx_queues"),
    (dict(model="vlance"), "model"),
    (dict(tx_register_accesses_per_packet=-1.0), "tx_register_accesses_per_packet"),
])
def test_params_are_checked_against_the_device(change, key):
    with pytest.raises(ValueError, match=f"{key}="):
        VnicParams(**change)


def test_vmxnet3_spreads_flows_over_queues_and_vcpus():
    env, vnic, vcpus, *_ = build("hw", vcpus=2, model="vmxnet3", rx_queues=4, tx_queues=2)
    assert len(vnic.rxq) == 4 and len(vnic.txq) == 2
    assert [q.vcpu for q in vnic.rxq] == [vcpus[0], vcpus[1], vcpus[0], vcpus[1]]
    vnic.deliver([data(flow=f) for f in range(4)])
    env.run()
    assert vnic.virtual_interrupts == 4          # one per queue touched
    assert vcpus[0].tasks == 2 and vcpus[1].tasks == 2
    assert vnic.rx_frames == 4


def test_aggregates_reach_the_guest_only_when_device_and_guest_take_them():
    _, vnic, *_ = build("hw", model="vmxnet3", lro=True)
    assert not vnic.takes_aggregates             # the guest has not said yet
    vnic.guest_lro = True
    assert vnic.takes_aggregates
    _, vnic2, *_ = build("hw", model="vmxnet3", lro=False)
    vnic2.guest_lro = True
    assert not vnic2.takes_aggregates


def test_guest_pays_per_aggregate_and_counts_frames_and_packets():
    env, vnic, (vcpu,), *_ = build("hw", model="vmxnet3")
    vnic.deliver([data(frames=44, packets=2)])   # two LRO aggregates of 22 frames
    env.run()
    assert vnic.rx_frames == 44 and vnic.rx_packets == 2
    assert vcpu.cycles == pytest.approx(3000 + 1200 * 2)


def test_mtu_limit_of_the_device_is_enforced(compose):
    from sim.config import ConfigError
    with pytest.raises(ConfigError, match="nic.link.mtu_bytes=9000: must be <= 1500"):
        compose(["vnic=e1000", "nic.link.mtu_bytes=9000"])
    assert compose(["vnic=vmxnet2", "nic.link.mtu_bytes=9000"]).nic.link.mtu_bytes == 9000


@pytest.mark.parametrize("delay_us", [0.0, 50.0])
def test_rx_interrupt_delay_holds_the_virtual_interrupt_and_batches_what_arrives(delay_us):
    """The emulation's coalescing: the interrupt comes ``rx_interrupt_delay_us`` after the
    first frame, and frames arriving meanwhile are taken by the same interrupt."""
    env, vnic, (vcpu,), *_ = build(**E1000, rx_interrupt_delay_us=delay_us)
    seen: list[tuple[float, int]] = []
    vnic.attach_guest(lambda batch: {}, lambda batch: seen.append(
        (round(env.now * 1e6, 3), sum(b.frames for b in batch))), lro=False)
    vnic.deliver([data(frames=1)])
    env.timeout(20e-6).callbacks.append(lambda _e: vnic.deliver([data(frames=1)]))
    env.run()
    if delay_us == 0:
        assert vnic.virtual_interrupts == 2 and [n for _, n in seen] == [1, 1]
    else:
        assert vnic.virtual_interrupts == 1 and [n for _, n in seen] == [2]
        assert seen[0][0] >= delay_us  # not before the hold ends
